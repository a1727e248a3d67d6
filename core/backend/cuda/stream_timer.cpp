// milliseconds_per_call (stream_timer.h).
#include "core/backend/cuda/stream_timer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/backend/cuda/cuda_check.h"

namespace mpwb::cuda {

double milliseconds_per_call(cudaStream_t stream, const std::function<bool()>& work, int repeats) {
    if (!work()) return std::numeric_limits<double>::infinity();
    cudaEvent_t start = nullptr, stop = nullptr;
    check_cuda(cudaEventCreate(&start), "cudaEventCreate");
    if (const cudaError_t status = cudaEventCreate(&stop); status != cudaSuccess) {
        cudaEventDestroy(start);
        check_cuda(status, "cudaEventCreate");
    }
    bool ok = cudaEventRecord(start, stream) == cudaSuccess;
    for (int r = 0; r < repeats && ok; ++r) ok = work();
    ok = ok && cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess;
    float ms = 0;
    ok = ok && cudaEventElapsedTime(&ms, start, stop) == cudaSuccess;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ok && repeats > 0 ? static_cast<double>(ms) / repeats : std::numeric_limits<double>::infinity();
}

bool measured_choices_enabled() {
    static const bool enabled = [] {
        const char* v = std::getenv("MPWB_CUDA_AUTOTUNE");
        return v == nullptr || std::strcmp(v, "0") != 0;
    }();
    return enabled;
}

size_t measured_choice(const std::vector<double>& milliseconds) {
    if (milliseconds.empty()) return 0;
    const auto best = static_cast<size_t>(std::min_element(milliseconds.begin(), milliseconds.end()) -
                                          milliseconds.begin());
    return best != 0 && milliseconds[best] * kMeasuredMargin < milliseconds[0] ? best : 0;
}

}  // namespace mpwb::cuda
