// DeviceContext: device choice, stream and library handles.
#include "core/backend/cuda/device_context.h"

#include <cudnn.h>

#include <cstdlib>

#include "core/backend/cuda/cuda_check.h"

namespace mpwb::cuda {
namespace {
constexpr size_t kGemmWorkspace = size_t{32} << 20;    // cuBLASLt's recommendation for Hopper
constexpr size_t kCudnnWorkspace = size_t{256} << 20;  // room for the fast convolution algorithms
}  // namespace

std::unique_ptr<DeviceContext> DeviceContext::open(int index, std::string* why_not) {
    auto fail = [&](const std::string& reason) -> std::unique_ptr<DeviceContext> {
        if (why_not) *why_not = reason;
        return nullptr;
    };
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0))
        return fail("no CUDA device found");
    if (status == cudaErrorInsufficientDriver) {
        int driver = 0;
        cudaDriverGetVersion(&driver);
        if (driver == 0) return fail("no NVIDIA driver is installed");
        return fail("the NVIDIA driver (CUDA " + std::to_string(driver / 1000) + "." +
                    std::to_string((driver % 1000) / 10) + ") is older than this build's CUDA runtime");
    }
    if (status != cudaSuccess)
        return fail(std::string("no usable CUDA driver: ") + cudaGetErrorString(status));
    if (index < 0) {
        index = 0;
        if (const char* env = std::getenv("MPWB_CUDA_DEVICE")) {
            char* end = nullptr;
            const long v = std::strtol(env, &end, 10);
            if (end == env || *end != '\0' || v < 0)
                return fail(std::string("MPWB_CUDA_DEVICE='") + env + "' is not a device index");
            index = static_cast<int>(v);
        }
    }
    if (index >= count)
        return fail("device " + std::to_string(index) + " asked for, but only " + std::to_string(count) +
                    " CUDA device(s) present");
    try {
        std::unique_ptr<DeviceContext> ctx(new DeviceContext());
        ctx->index_ = index;
        check_cuda(cudaSetDevice(index), "cudaSetDevice");
        cudaDeviceProp prop{};
        check_cuda(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
        ctx->major_ = prop.major;
        ctx->minor_ = prop.minor;
        if (ctx->compute_capability() < 70)
            return fail(std::string(prop.name) + " has compute capability " + std::to_string(prop.major) +
                        "." + std::to_string(prop.minor) +
                        "; the CUDA backend needs 7.0 or newer (tensor cores)");
        int runtime = 0;
        cudaRuntimeGetVersion(&runtime);
        const size_t cudnn = cudnnGetVersion();
        ctx->description_ = std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                            std::to_string(prop.minor) + ", " + format_bytes(prop.totalGlobalMem) +
                            ", CUDA " + std::to_string(runtime / 1000) + "." +
                            std::to_string((runtime % 1000) / 10) + ", cuDNN " +
                            std::to_string(cudnn / 10000) + "." + std::to_string((cudnn % 10000) / 100) + ")";
        check_cuda(cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        ctx->gemm_ = std::make_unique<GemmLt>(ctx->arena_.allocate(kGemmWorkspace, "cuBLASLt workspace"),
                                              kGemmWorkspace);
        ctx->dnn_ = std::make_unique<CudnnOps>(ctx->arena_.allocate(kCudnnWorkspace, "cuDNN workspace"),
                                               kCudnnWorkspace);
        return ctx;
    } catch (const std::exception& e) {
        return fail(e.what());
    }
}

DeviceContext::~DeviceContext() {
    gemm_.reset();
    dnn_.reset();
    if (stream_) cudaStreamDestroy(stream_);
}

void DeviceContext::make_current() const { check_cuda(cudaSetDevice(index_), "cudaSetDevice"); }

}  // namespace mpwb::cuda
