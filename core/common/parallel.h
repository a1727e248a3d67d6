// parallel_for over index ranges on a small persistent thread pool. Elementwise work in the CPU
// backend uses it; BLAS has its own threads. Work is split into contiguous chunks so every run
// splits the same way and float results do not depend on scheduling.
#pragma once
#include <cstdint>
#include <functional>

namespace mpwb {

// Threads used for elementwise work (and handed to OpenBLAS). 0 picks the core count.
void set_thread_count(int threads);
int thread_count();

// Calls body(begin, end) on disjoint chunks covering [0, n). Runs inline when n < grain.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace mpwb
