// parallel_for over index ranges on a small persistent thread pool. The CPU backend's loops and
// its blocked GEMM use it (OpenBLAS itself runs single-threaded). Threads claim contiguous
// chunks one at a time; every body writes each output from exactly one index, so float results
// do not depend on how the range was cut or on which thread ran what.
#pragma once
#include <cstdint>
#include <functional>

namespace mpwb {

// Threads used for parallel_for. 0 picks the core count.
void set_thread_count(int threads);
int thread_count();

// Calls body(begin, end) on disjoint chunks covering [0, n). Runs inline when n < grain or with
// one thread; otherwise no chunk is smaller than grain (except the range itself).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace mpwb
