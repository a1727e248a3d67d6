// The CudaBackend's device steps. The module's entry point (module_entry.cpp) makes the backend.
#include "core/backend/cuda/cuda_backend.h"

#include "core/backend/cuda/cuda_device_step.h"

namespace mpwb::cuda {

std::unique_ptr<DeviceStep> CudaBackend::make_device_step(Network& network, const DeviceStepConfig& config) {
    context_->make_current();
    return std::make_unique<CudaDeviceStep>(*context_, network, config);
}

}  // namespace mpwb::cuda
