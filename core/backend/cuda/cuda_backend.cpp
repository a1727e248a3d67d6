// The CudaBackend's step engine. The module's entry point (module_entry.cpp) makes the backend.
#include "core/backend/cuda/cuda_backend.h"

#include "core/engine/cuda/cuda_step_engine.h"

namespace mpwb::cuda {

std::unique_ptr<StepEngine> CudaBackend::make_step_engine(Network& network, const Dataset& data,
                                                          const StepEngineConfig& config) {
    context_->make_current();
    return std::make_unique<CudaStepEngine>(*context_, network, data, config);
}

}  // namespace mpwb::cuda
