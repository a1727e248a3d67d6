// The step engine of a backend that keeps whole training steps on its device, found from the
// backend: today the CUDA module's. Its engine (core/engine/cuda/) is built into the module with
// the backend and reached through a second entry point of the module, declared here, so that
// core/backend offers ops only and never names an engine: the module's loader hands this file the
// entry by its name (cuda_module_symbol), and the entry tells which backends its engine runs on.
#pragma once
#include <memory>

#include "core/engine/step_engine.h"

namespace mpwb {

// Whether `backend` keeps whole steps on its device: the Trainer then drives the engine below
// instead of the host engine, which calls the backend's ops one by one.
bool has_device_steps(const Backend& backend);

// An engine for this network and dataset (both outlive it), built (shapes fixed) for the
// config, with the dataset and the network's initial weights already in place. Throws
// NetworkError naming a layer the device cannot run, DeviceOutOfMemory naming the size when the
// plan does not fit, and std::logic_error for a backend without device steps.
std::unique_ptr<StepEngine> make_device_step_engine(Backend& backend, Network& network, const Dataset& data,
                                                    const StepEngineConfig& config);

struct CudaEngineEntryV1;
// Tests stand a device in: this entry is used instead of the CUDA module's (null: the module's
// again), so the choice between the engines is tested without a GPU.
void set_device_engine_entry_for_tests(const CudaEngineEntryV1* entry);

// The table the CUDA module's engine entry point returns (core/engine/cuda/engine_entry.cpp).
// The module's build was checked when it was loaded (core/backend/cuda_module.h).
struct CudaEngineEntryV1 {
    // Whether `backend` is one the module made, whose device the engine runs on.
    bool (*runs_on)(const Backend& backend) = nullptr;
    std::unique_ptr<StepEngine> (*make_step_engine)(Backend& backend, Network& network, const Dataset& data,
                                                    const StepEngineConfig& config) = nullptr;
};

}  // namespace mpwb

#define MPWB_CUDA_ENGINE_ENTRY "mpwb_cuda_engine_v1"
extern "C" const mpwb::CudaEngineEntryV1* mpwb_cuda_engine_v1();
