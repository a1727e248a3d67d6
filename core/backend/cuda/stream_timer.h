// milliseconds_per_call: how long a piece of enqueued device work takes, by CUDA events around
// repeated calls on a stream. The backend makes its measured choices with it (cuBLASLt's
// algorithm per shape, a Linear's bias-gradient path) on a shape's first, eager step; it waits
// for the device, so it must never run inside a graph capture or the step loop.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace mpwb::cuda {

// One untimed call of `work` (first-call costs stay out), then `repeats` timed ones; returns the
// mean per call. `work` enqueues on `stream` and returns false when it could not (the result is
// then +infinity).
double milliseconds_per_call(cudaStream_t stream, const std::function<bool()>& work, int repeats = 3);

// Which of several timed alternatives to use, the first being the library's own pick: the
// fastest, when it beats the first by at least kMeasuredMargin. Near-ties keep the library's
// pick, so separate runs mostly make the same choice.
inline constexpr double kMeasuredMargin = 1.25;
size_t measured_choice(const std::vector<double>& milliseconds);

// False when MPWB_CUDA_AUTOTUNE=0: every choice keeps the library's own pick (cuBLASLt's and
// cuDNN's best-rated algorithm, the GEMM's bias-gradient epilogue where offered), so runs on the
// same GPU and software repeat bit for bit, at some cost in speed.
bool measured_choices_enabled();

}  // namespace mpwb::cuda
