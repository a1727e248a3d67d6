// Exhaustive FP16 check: every one of the 2^32 float bit patterns through float->half on the
// software path and the F16C path (bits and the float->float rounding), each compared with the
// other and with the independent float64 reference (reference_formats.h). Then a micro-benchmark
// of round_to_format(FP16) over 1M floats. Run by hand (minutes on 2 cores), not by CTest:
//   fp16_exhaustive_check [--ref-stride N] [--bench-only]
//   (reference on every Nth pattern; default 1 = all. --bench-only skips the 2^32 sweep.)
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/common/parallel.h"
#include "core/common/rng.h"
#include "core/numeric/format.h"
#include "core/numeric/half.h"
#include "tests/numeric/bench_timing.h"
#include "tests/numeric/reference_formats.h"

using namespace mpwb;
using bench::best_ns_per_element;
using bench::Clock;
using bench::seconds_since;

int main(int argc, char** argv) {
    uint32_t ref_stride = 1;
    bool bench_only = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--ref-stride") == 0 && i + 1 < argc)
            ref_stride = static_cast<uint32_t>(std::atoi(argv[++i]));
        else if (std::strcmp(argv[i], "--bench-only") == 0)
            bench_only = true;
        else {
            std::fprintf(stderr, "usage: %s [--ref-stride N] [--bench-only]\n", argv[0]);
            return 2;
        }
    }
    if (ref_stride == 0) ref_stride = 1;
    const bool f16c = cpu_has_f16c();
    std::printf("threads: %d, F16C: %s, reference on every %u pattern(s)\n", thread_count(),
                f16c ? "yes" : "no", ref_stride);

    // Value of every half pattern by ldexp (the reference decoder), so the per-input check is
    // one float64 rounding plus a table lookup.
    std::vector<double> half_value(65536);
    for (uint32_t h = 0; h < 65536; ++h) half_value[h] = ref::decode(h, ref::kHalf);

    constexpr int64_t kBlock = int64_t{1} << 16;
    constexpr int64_t kBlocks = (int64_t{1} << 32) / kBlock;
    std::atomic<uint64_t> sw_vs_f16c{0}, sw_vs_ref{0}, f16c_vs_ref{0}, float_path{0}, ref_checked{0};
    std::mutex report_mutex;
    int reported = 0;
    auto report = [&](const char* what, uint32_t x, uint32_t a, uint32_t b) {
        std::lock_guard lock(report_mutex);
        if (reported++ < 10) std::printf("  mismatch %s: x=0x%08x: 0x%08x vs 0x%08x\n", what, x, a, b);
    };

    const auto t0 = Clock::now();
    parallel_for(bench_only ? 0 : kBlocks, 1, [&](int64_t first_block, int64_t end_block) {
        std::vector<float> in(kBlock), sw_f(kBlock), hw_f(kBlock);
        std::vector<uint16_t> sw(kBlock), hw(kBlock);
        uint64_t n_sw_hw = 0, n_sw_ref = 0, n_hw_ref = 0, n_float = 0, n_ref = 0;
        for (int64_t block = first_block; block < end_block; ++block) {
            const uint32_t base = static_cast<uint32_t>(block * kBlock);
            for (int64_t i = 0; i < kBlock; ++i) in[i] = ref::from_bits(base + static_cast<uint32_t>(i));
            float_to_half_bits_software(in.data(), sw.data(), kBlock);
            round_to_half_software(in.data(), sw_f.data(), kBlock);
            if (f16c) {
                float_to_half_bits_f16c(in.data(), hw.data(), kBlock);
                round_to_half_f16c(in.data(), hw_f.data(), kBlock);
            } else {
                hw = sw;
                hw_f = sw_f;
            }
            for (int64_t i = 0; i < kBlock; ++i) {
                const uint32_t x = base + static_cast<uint32_t>(i);
                if (sw[i] != hw[i]) {
                    ++n_sw_hw;
                    report("software vs F16C", x, sw[i], hw[i]);
                }
                const uint32_t swb = ref::to_bits(sw_f[i]), hwb = ref::to_bits(hw_f[i]);
                if (swb != hwb || swb != ref::to_bits(half_bits_to_float(sw[i]))) {
                    ++n_float;
                    report("float->float path", x, swb, hwb);
                }
                if (x % ref_stride != 0) continue;
                ++n_ref;
                const double want = ref::round_value(in[i], ref::kHalf);
                if (!ref::same_value(want, half_value[sw[i]])) {
                    ++n_sw_ref;
                    report("software vs reference", x, sw[i], 0);
                }
                if (!ref::same_value(want, half_value[hw[i]])) {
                    ++n_hw_ref;
                    report("F16C vs reference", x, hw[i], 0);
                }
            }
        }
        sw_vs_f16c += n_sw_hw;
        sw_vs_ref += n_sw_ref;
        f16c_vs_ref += n_hw_ref;
        float_path += n_float;
        ref_checked += n_ref;
    });
    const double elapsed = seconds_since(t0);

    if (!bench_only) std::printf("checked 4294967296 floats in %.1f s\n", elapsed);
    std::printf("  software vs F16C half bits mismatches:   %llu%s\n", (unsigned long long)sw_vs_f16c.load(),
                f16c ? "" : " (no F16C: not compared)");
    std::printf("  float->float path mismatches:            %llu\n", (unsigned long long)float_path.load());
    std::printf("  software vs float64 reference mismatches: %llu (of %llu checked)\n",
                (unsigned long long)sw_vs_ref.load(), (unsigned long long)ref_checked.load());
    std::printf("  F16C vs float64 reference mismatches:     %llu (of %llu checked)\n",
                (unsigned long long)f16c_vs_ref.load(), (unsigned long long)ref_checked.load());

    // Micro-benchmark: 1M gradient-like floats (a few binades, some subnormal halves).
    constexpr size_t kN = 1 << 20;
    Rng rng(1);
    std::vector<float> x(kN), y(kN);
    for (auto& v : x) v = rng.normal() * std::ldexp(1.0f, static_cast<int>(rng.below(24)) - 16);
    const double sw_ns = best_ns_per_element([&] { round_to_half_software(x.data(), y.data(), kN); }, kN, 20);
    std::printf("round_to_format FP16 over 1M floats, one thread: software %.3f ns/element", sw_ns);
    if (f16c) {
        const double hw_ns = best_ns_per_element([&] { round_to_half_f16c(x.data(), y.data(), kN); }, kN, 20);
        std::printf(", F16C %.3f ns/element (%.1fx)", hw_ns, sw_ns / hw_ns);
    }
    std::printf("\n");
    for (Format f : {Format::FP16, Format::BF16, Format::TF32, Format::E4M3, Format::E5M2}) {
        const double ns = best_ns_per_element([&] { round_to_format(f, x.data(), y.data(), kN); }, kN, 20);
        std::printf("round_to_format(%s, 1M floats) on %d threads: %.3f ns/element\n", format_name(f).c_str(),
                    thread_count(), ns);
    }
    const bool ok = sw_vs_f16c == 0 && float_path == 0 && sw_vs_ref == 0 && f16c_vs_ref == 0;
    std::printf("%s\n", ok ? "RESULT: all match" : "RESULT: MISMATCHES FOUND");
    return ok ? 0 : 1;
}
