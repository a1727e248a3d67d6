// The CUDA module's second entry point (core/engine/device_steps.h): the step engine, for the
// backends the module's first entry point (core/backend/cuda/module_entry.cpp) made. Here, above
// the engine interface, so that the backend below it never names an engine.
#include "core/backend/cuda/cuda_backend.h"
#include "core/engine/cuda/cuda_step_engine.h"
#include "core/engine/device_steps.h"

namespace mpwb::cuda {
namespace {

bool runs_on(const Backend& backend) { return dynamic_cast<const CudaBackend*>(&backend) != nullptr; }

std::unique_ptr<StepEngine> make_step_engine(Backend& backend, Network& network, const Dataset& data,
                                             const StepEngineConfig& config) {
    DeviceContext& context = dynamic_cast<CudaBackend&>(backend).context();
    context.make_current();
    return std::make_unique<CudaStepEngine>(context, network, data, config);
}

}  // namespace
}  // namespace mpwb::cuda

extern "C" __attribute__((visibility("default"))) const mpwb::CudaEngineEntryV1* mpwb_cuda_engine_v1() {
    static const mpwb::CudaEngineEntryV1 table{&mpwb::cuda::runs_on, &mpwb::cuda::make_step_engine};
    return &table;
}
