// quantize_bench: nanoseconds per element of the scaled recipes' quantizers on a 256 x 784 tensor
// (the MLP preset's first-layer input at batch 256), with 1 and 2 threads, with and without
// statistics. A program that prints figures, not a test: it asserts nothing about time.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "core/common/parallel.h"
#include "core/common/rng.h"
#include "core/precision/block_quantize.h"

using namespace mpwb;

namespace {

// Best of five timings of `reps` calls, in ns per element.
double ns_per_element(int64_t elements, const std::function<void()>& call) {
    const int reps = 200;
    double best = 1e300;
    for (int trial = 0; trial < 5; ++trial) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) call();
        const auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / reps /
                                  static_cast<double>(elements));
    }
    return best;
}

}  // namespace

int main() {
    const int64_t rows = 256, cols = 784, n = rows * cols;
    Rng rng(1);
    std::vector<float> x(static_cast<size_t>(n)), out(static_cast<size_t>(n));
    for (float& v : x) v = rng.normal();
    struct Case {
        const char* name;
        std::function<void(ScalingStats*)> run;
    };
    // A block quantizer case; nvfp4 includes its tensor-amax pass, as GemmQuantizer runs it.
    auto blocks = [&](BlockShape shape, BlockScaleRule rule, bool stochastic, Format element = Format::E4M3) {
        return [&, shape, rule, stochastic, element](ScalingStats* st) {
            QuantizeOptions o;
            o.stats = st;
            o.element = element;
            o.stochastic = stochastic;
            o.random_key = 5;
            const bool four_over_six = rule == BlockScaleRule::NvFp4FourOverSix;
            if (rule == BlockScaleRule::NvFp4 || four_over_six) {
                o.element = Format::E2M1;
                o.tensor_scale = nvfp4_tensor_scale(amax_of(x.data(), n), four_over_six);
            }
            quantize_blocks(x.data(), out.data(), rows, cols, shape, rule, o);
        };
    };
    const Case cases[] = {
        {"copy (memcpy, for scale)",
         [&](ScalingStats*) { std::memcpy(out.data(), x.data(), sizeof(float) * n); }},
        {"amax pass",
         [&](ScalingStats*) {
             volatile float a = amax_of(x.data(), n);
             (void)a;
         }},
        {"per-tensor e4m3 (amax + quantize)",
         [&](ScalingStats* st) {
             const float amax = amax_of(x.data(), n);
             QuantizeOptions o;
             o.stats = st;
             quantize_per_tensor(x.data(), out.data(), n, per_tensor_scale(amax, 448.0f, 0, 1.0f), amax, o);
         }},
        {"mxfp8 e4m3 1x32 rceil", blocks({1, 32}, BlockScaleRule::E8M0RCeil, false)},
        {"mxfp8 e4m3 32x1 (column-wise) rceil", blocks({32, 1}, BlockScaleRule::E8M0RCeil, false)},
        {"fp8-block 1x128", blocks({1, 128}, BlockScaleRule::Fp32, false)},
        {"fp8-block 128x128", blocks({128, 128}, BlockScaleRule::Fp32, false)},
        {"nvfp4 1x16 (tensor amax + quantize)", blocks({1, 16}, BlockScaleRule::NvFp4, false)},
        {"nvfp4 1x16 stochastic", blocks({1, 16}, BlockScaleRule::NvFp4, true)},
        {"nvfp4 1x16 4 over 6", blocks({1, 16}, BlockScaleRule::NvFp4FourOverSix, false)},
        {"mxfp4 1x32 rceil", blocks({1, 32}, BlockScaleRule::E8M0RCeil, false, Format::E2M1)},
        {"mxfp4 1x32 rceil stochastic", blocks({1, 32}, BlockScaleRule::E8M0RCeil, true, Format::E2M1)},
    };
    std::printf("256 x 784 floats, ns per element (best of 5 x 200 calls)\n");
    std::printf("%-40s %10s %10s %14s\n", "quantizer", "1 thread", "2 threads", "2 thr + stats");
    for (const Case& c : cases) {
        set_thread_count(1);
        const double one = ns_per_element(n, [&] { c.run(nullptr); });
        set_thread_count(2);
        const double two = ns_per_element(n, [&] { c.run(nullptr); });
        ScalingStats st;
        const double stats = ns_per_element(n, [&] { c.run(&st); });
        std::printf("%-40s %10.3f %10.3f %14.3f\n", c.name, one, two, stats);
    }
    return 0;
}
