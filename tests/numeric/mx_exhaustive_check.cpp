// Exhaustive check of the inline element roundings (element_formats.h): every one of the 2^32
// float bit patterns through round_element_saturating for E4M3, E5M2, E3M2, E2M3 and E2M1,
// compared with the independent float64 reference (reference_formats.h, saturating). Then a
// timing loop of the inline roundings, since the block quantizers call them on millions of values
// per step (one thread, 1M gradient-like floats, in thread CPU time so a busy machine does not
// inflate the figures). Run by hand, not by CTest:
//   mx_exhaustive_check [--bench-only]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/common/parallel.h"
#include "core/common/rng.h"
#include "core/numeric/element_formats.h"
#include "core/numeric/fp8.h"
#include "tests/numeric/bench_timing.h"
#include "tests/numeric/reference_formats.h"

using namespace mpwb;
using bench::best_ns_per_element;
using bench::Clock;
using bench::seconds_since;

namespace {

struct Checked {
    const char* name;
    const ref::Spec& spec;
    float (*round)(float);
};

const Checked kChecked[] = {
    {"e4m3", ref::kE4M3, round_element_saturating<E4M3Spec>},
    {"e5m2", ref::kE5M2, round_element_saturating<E5M2Spec>},
    {"e3m2", ref::kE3M2, round_element_saturating<E3M2Spec>},
    {"e2m3", ref::kE2M3, round_element_saturating<E2M3Spec>},
    {"e2m1", ref::kE2M1, round_element_saturating<E2M1Spec>},
};
constexpr size_t kCheckedCount = std::size(kChecked);

// All 2^32 patterns; returns the mismatch count per format and prints the first few.
std::vector<uint64_t> sweep_all_floats() {
    constexpr int64_t kBlock = int64_t{1} << 16;
    constexpr int64_t kBlocks = (int64_t{1} << 32) / kBlock;
    std::vector<std::atomic<uint64_t>> mismatches(kCheckedCount);
    std::mutex report_mutex;
    int reported = 0;
    parallel_for(kBlocks, 1, [&](int64_t first_block, int64_t end_block) {
        std::vector<uint64_t> local(kCheckedCount, 0);
        for (int64_t block = first_block; block < end_block; ++block) {
            const uint32_t base = static_cast<uint32_t>(block * kBlock);
            for (int64_t i = 0; i < kBlock; ++i) {
                const uint32_t x_bits = base + static_cast<uint32_t>(i);
                const float x = ref::from_bits(x_bits);
                for (size_t k = 0; k < kCheckedCount; ++k) {
                    const float got = kChecked[k].round(x);
                    const double want = ref::round_value_saturating(x, kChecked[k].spec);
                    if (ref::same_value(want, got)) continue;
                    ++local[k];
                    std::lock_guard lock(report_mutex);
                    if (reported++ < 20)
                        std::printf("  mismatch %s: x=0x%08x (%.9g): got %.9g, reference %.17g\n",
                                    kChecked[k].name, x_bits, x, got, want);
                }
            }
        }
        for (size_t k = 0; k < kCheckedCount; ++k) mismatches[k] += local[k];
    });
    std::vector<uint64_t> out;
    for (auto& m : mismatches) out.push_back(m.load());
    return out;
}

// The same loop compiled for AVX2, whose per-lane variable shifts let the rounding vectorise (the
// block quantizers dispatch to such a clone; the baseline x86-64 build cannot vectorise it).
template <class Spec>
__attribute__((target("avx2"))) void round_loop_avx2(const float* x, float* y, size_t n) {
    for (size_t i = 0; i < n; ++i) y[i] = round_element_saturating<Spec>(x[i]);
}

template <class Spec>
void time_format(const char* name, const std::vector<float>& x, std::vector<float>& y) {
    const size_t n = x.size();
    const double nearest = best_ns_per_element(
        [&] {
            for (size_t i = 0; i < n; ++i) y[i] = round_element_saturating<Spec>(x[i]);
        },
        n, 20, bench::thread_cpu_seconds);
    const double stochastic = best_ns_per_element(
        [&] {
            for (size_t i = 0; i < n; ++i)
                y[i] = round_element_stochastic<Spec>(x[i], counter_random_bits(7, i));
        },
        n, 20, bench::thread_cpu_seconds);
    std::printf(
        "%s, one thread: round_element_saturating %.3f ns/element (thread CPU), "
        "round_element_stochastic + counter_random_bits %.3f ns/element (thread CPU)\n",
        name, nearest, stochastic);
    if (__builtin_cpu_supports("avx2")) {
        const double avx2 = best_ns_per_element([&] { round_loop_avx2<Spec>(x.data(), y.data(), n); }, n, 20,
                                                bench::thread_cpu_seconds);
        std::printf("%s, one thread: round_element_saturating in an AVX2 loop %.3f ns/element (thread CPU)\n",
                    name, avx2);
    }
}

}  // namespace

int main(int argc, char** argv) {
    bool bench_only = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--bench-only") == 0) {
            bench_only = true;
        } else {
            std::fprintf(stderr, "usage: %s [--bench-only]\n", argv[0]);
            return 2;
        }
    }
    bool ok = true;
    if (!bench_only) {
        std::printf("threads: %d\n", thread_count());
        const auto t0 = Clock::now();
        const std::vector<uint64_t> mismatches = sweep_all_floats();
        std::printf("checked 4294967296 floats per format in %.1f s\n", seconds_since(t0));
        for (size_t k = 0; k < kCheckedCount; ++k) {
            std::printf("  %s round_element_saturating vs float64 reference mismatches: %llu\n",
                        kChecked[k].name, static_cast<unsigned long long>(mismatches[k]));
            ok = ok && mismatches[k] == 0;
        }
    }

    // 1M gradient-like floats spread over the formats' binades (some under- and overflowing).
    constexpr size_t kN = 1 << 20;
    Rng rng(1);
    std::vector<float> x(kN), y(kN);
    for (auto& v : x) v = rng.normal() * std::ldexp(1.0f, static_cast<int>(rng.below(16)) - 10);
    // For scale: the existing out-of-line E4M3 loop (fp8.cpp), measured under the same load.
    const double fp8_loop = best_ns_per_element([&] { round_to_e4m3(x.data(), y.data(), kN); }, kN, 20,
                                                bench::thread_cpu_seconds);
    std::printf("e4m3, one thread: round_to_e4m3 (fp8.cpp, bits and back) %.3f ns/element (thread CPU)\n",
                fp8_loop);
    time_format<E4M3Spec>("e4m3", x, y);
    time_format<E5M2Spec>("e5m2", x, y);
    time_format<E3M2Spec>("e3m2", x, y);
    time_format<E2M3Spec>("e2m3", x, y);
    time_format<E2M1Spec>("e2m1", x, y);
    if (!bench_only) std::printf("%s\n", ok ? "RESULT: all match" : "RESULT: MISMATCHES FOUND");
    return ok ? 0 : 1;
}
