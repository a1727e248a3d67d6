// The entry point of libmpwb_cuda.so (core/backend/cuda_module.h): the table through which the
// programs make the CUDA backend and run its op parity checks, after loading the module with
// dlopen. Everything else in the module is reached through the Backend it returns, except the
// step engine, whose entry point sits above the engine interface (core/engine/cuda/engine_entry.cpp).
#include "core/backend/cuda_module.h"

#include "core/backend/cuda/cuda_backend.h"
#include "core/backend/cuda/selftest.h"

#ifndef MPWB_BUILD_TAG
#error "MPWB_BUILD_TAG must name the build (core/backend/cuda/CMakeLists.txt)"
#endif

namespace mpwb::cuda {
namespace {

std::unique_ptr<Backend> make_backend(std::string* why_not, int device_index) {
    auto context = DeviceContext::open(device_index, why_not);
    if (!context) return nullptr;
    return std::make_unique<CudaBackend>(std::move(context));
}

int op_checks(Backend& backend, const std::function<void(const CudaCheckLine&)>& report) {
    return run_op_checks(dynamic_cast<CudaBackend&>(backend).context(), report);
}

}  // namespace
}  // namespace mpwb::cuda

extern "C" __attribute__((visibility("default"))) const mpwb::CudaModuleV1* mpwb_cuda_module_v1() {
    static const mpwb::CudaModuleV1 table{mpwb::kCudaModuleAbi, MPWB_BUILD_TAG, &mpwb::cuda::make_backend,
                                          &mpwb::cuda::op_checks};
    return &table;
}
