// The backend a run gets when it does not insist on one: the GPU when the CUDA module
// (libmpwb_cuda.so) loads and the machine has a usable device, else the CPU, with the reason in
// one clause in why_not: the module is not installed, one of its libraries is missing (the
// loader names it), or the driver or device is not there.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "core/backend/cuda_module.h"

namespace mpwb {

std::unique_ptr<Backend> make_default_backend(std::string* why_not);

// The CUDA backend through the module, or null with the reason in why_not.
// device_index -1: MPWB_CUDA_DEVICE, else device 0.
std::unique_ptr<Backend> make_cuda_backend(std::string* why_not, int device_index = -1);

// The module's op parity checks on a backend make_cuda_backend returned; the failure count.
int run_cuda_op_checks(Backend& cuda_backend, const std::function<void(const CudaCheckLine&)>& report);

// Another entry point of the CUDA module, by its exported name, once make_cuda_backend has loaded
// the module; null before (asking never loads it) or when the module has no such name. The step
// engine's entry is found this way (core/engine/device_steps.h), so the backend names no engine.
void* cuda_module_symbol(const char* name);

// Where the module is looked for: $MPWB_CUDA_MODULE when set, else next to the program, at the
// same place relative to its bin directory as the install puts it (build tree: app/lib/mpwb).
std::string cuda_module_path();

}  // namespace mpwb
