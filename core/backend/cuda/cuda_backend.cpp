// make_cuda_backend and the CudaBackend's device steps.
#include "core/backend/cuda/cuda_backend.h"

#include "core/backend/cuda/cuda_device_step.h"

namespace mpwb {

std::unique_ptr<Backend> make_cuda_backend(std::string* why_not, int device_index) {
    auto context = cuda::DeviceContext::open(device_index, why_not);
    if (!context) return nullptr;
    return std::make_unique<cuda::CudaBackend>(std::move(context));
}

namespace cuda {

std::unique_ptr<DeviceStep> CudaBackend::make_device_step(Network& network, const DeviceStepConfig& config) {
    context_->make_current();
    return std::make_unique<CudaDeviceStep>(*context_, network, config);
}

}  // namespace cuda
}  // namespace mpwb
