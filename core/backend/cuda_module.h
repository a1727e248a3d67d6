// The CUDA backend's module interface: the C entry point of libmpwb_cuda.so that the loader
// checks, and the table it returns (the module's step engine has its own entry point, found
// through cuda_module_symbol: core/engine/device_steps.h). The programs load the module with dlopen
// (core/backend/default_backend.cpp), so neither mpwb nor mpwb-cli links libcudart, cuBLASLt or cuDNN:
// without them, or without the module, they start and train on the CPU. No CUDA header here: the programs
// include it.
//
// The module is built with the programs from the same tree and resolves the core's symbols from
// the program that loads it (see core/CMakeLists.txt), so the table may pass C++ types; `abi`
// and `build` let the loader refuse a module from another build instead of crashing in it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace mpwb {

class Backend;

// One line of the module's op parity checks (mpwb-cli selftest --backend cuda).
struct CudaCheckLine {
    std::string name;
    bool passed = false;
    double error = 0;  // normwise relative error (max |device - cpu| / max |cpu|)
    double tolerance = 0;
    std::string detail;  // why it failed, or what it measured
};

// Raise whenever this table or the layout of anything it passes changes.
inline constexpr uint32_t kCudaModuleAbi = 1;

struct CudaModuleV1 {
    uint32_t abi = kCudaModuleAbi;
    const char* build = "";  // MPWB_BUILD_TAG of the build that made the module
    // The CUDA backend, or null with the reason in why_not (no driver, no device).
    // device_index -1: MPWB_CUDA_DEVICE, else device 0.
    std::unique_ptr<Backend> (*make_backend)(std::string* why_not, int device_index) = nullptr;
    // Every device op against the CPU backend on `backend` (one the table made); returns the
    // number of failed checks.
    int (*run_op_checks)(Backend& backend, const std::function<void(const CudaCheckLine&)>& report) = nullptr;
};

}  // namespace mpwb

// The module's only exported entry point, looked up by this name.
#define MPWB_CUDA_MODULE_ENTRY "mpwb_cuda_module_v1"
extern "C" const mpwb::CudaModuleV1* mpwb_cuda_module_v1();
