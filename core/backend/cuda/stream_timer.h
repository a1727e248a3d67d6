// milliseconds_per_call: how long a piece of enqueued device work takes, by CUDA events around
// repeated calls on a stream. The backend makes its measured choices with it (cuBLASLt's
// algorithm per shape, a Linear's bias-gradient path) on a shape's first, eager step; it waits
// for the device, so it must never run inside a graph capture or the step loop.
#pragma once
#include <cuda_runtime_api.h>

#include <functional>

namespace mpwb::cuda {

// One untimed call of `work` (first-call costs stay out), then `repeats` timed ones; returns the
// mean per call. `work` enqueues on `stream` and returns false when it could not (the result is
// then +infinity).
double milliseconds_per_call(cudaStream_t stream, const std::function<bool()>& work, int repeats = 3);

}  // namespace mpwb::cuda
