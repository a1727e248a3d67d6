// Timing helpers shared by the hand-run exhaustive checks (fp16_exhaustive_check,
// mx_exhaustive_check): best-of-N nanoseconds per element of a loop, in wall or thread CPU time.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <ctime>

namespace mpwb::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Seconds of CPU time the calling thread has used: unlike wall time, it does not count the time
// other processes on a busy machine take the core away, so single-threaded per-element costs
// stay comparable between runs on a shared machine.
inline double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

inline double wall_seconds() {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Best of `repeats` runs of f, in nanoseconds per element of its n elements (the best run is the
// one least disturbed by other work on the machine), timed by `seconds` (wall or thread CPU).
template <class F>
double best_ns_per_element(F&& f, size_t n, int repeats, double (*seconds)() = wall_seconds) {
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const double t0 = seconds();
        f();
        best = std::min(best, (seconds() - t0) * 1e9 / static_cast<double>(n));
    }
    return best;
}

}  // namespace mpwb::bench
