// Timing helpers shared by the hand-run exhaustive checks (fp16_exhaustive_check,
// mx_exhaustive_check): best-of-N nanoseconds per element of a loop.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>

namespace mpwb::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best of `repeats` runs of f, in nanoseconds per element of its n elements (the best run is the
// one least disturbed by other work on the machine).
template <class F>
double best_ns_per_element(F&& f, size_t n, int repeats) {
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = Clock::now();
        f();
        best = std::min(best, seconds_since(t0) * 1e9 / static_cast<double>(n));
    }
    return best;
}

}  // namespace mpwb::bench
