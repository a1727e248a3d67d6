// The device engines' entry (device_steps.h): the CUDA module's engine table, looked up by name in
// the module the backend loader has loaded.
#include "core/engine/device_steps.h"

#include <stdexcept>

#include "core/backend/default_backend.h"

namespace mpwb {
namespace {

const CudaEngineEntryV1* entry_for_tests = nullptr;

// Null until the CUDA module is loaded; a CPU run never loads it.
const CudaEngineEntryV1* cuda_engine_entry() {
    if (entry_for_tests) return entry_for_tests;
    using Entry = const CudaEngineEntryV1* (*)();
    auto entry = reinterpret_cast<Entry>(cuda_module_symbol(MPWB_CUDA_ENGINE_ENTRY));
    return entry ? entry() : nullptr;
}

}  // namespace

void set_device_engine_entry_for_tests(const CudaEngineEntryV1* entry) { entry_for_tests = entry; }

bool has_device_steps(const Backend& backend) {
    const CudaEngineEntryV1* entry = cuda_engine_entry();
    return entry && entry->runs_on(backend);
}

std::unique_ptr<StepEngine> make_device_step_engine(Backend& backend, Network& network, const Dataset& data,
                                                    const StepEngineConfig& config) {
    const CudaEngineEntryV1* entry = cuda_engine_entry();
    if (!entry || !entry->runs_on(backend))
        throw std::logic_error("make_device_step_engine: the " + backend.name() +
                               " backend keeps no steps on a device (ask has_device_steps)");
    return entry->make_step_engine(backend, network, data, config);
}

}  // namespace mpwb
