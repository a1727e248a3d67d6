// CudaBackend: the backend a run gets when it asks for CUDA. Training keeps whole steps on the GPU
// through the CUDA step engine, which the module's engine entry makes for this backend's device
// (core/engine/cuda/engine_entry.cpp). The op-by-op Backend methods, which take host pointers,
// are the CPU backend's: the few host-side callers that remain (a statistics step's histograms,
// the workbench's decision-boundary grid) work on host copies of the weights, and the selftest
// checks each device op against exactly those CPU ops.
#pragma once
#include <memory>
#include <string>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cuda/device_context.h"

namespace mpwb::cuda {

class CudaBackend final : public CpuBackend {
public:
    explicit CudaBackend(std::unique_ptr<DeviceContext> context) : context_(std::move(context)) {}
    std::string name() const override { return "cuda"; }
    std::string device_name() const override { return context_->description(); }
    DeviceContext& context() { return *context_; }

private:
    std::unique_ptr<DeviceContext> context_;
};

}  // namespace mpwb::cuda
