// Batch normalisation over n x c x hw (hw = 1 for features) with FP32 statistics, as
// CpuBackend::batchnorm_forward/backward: per-channel sums in FP64, then element_math.h's
// batchnorm_* functions finish exactly as the CPU does (mean, inverse std, unbiased running
// variance with momentum; the backward's means of dy and dy * xhat). Values are stored in the
// tensor's dtype, the statistics and gamma/beta and their gradients are FP32.
//
// Training and the backward use one block per channel: the block sums its channel (a fixed
// reduction order, so results repeat run to run), thread 0 finishes the statistics, and the
// block then writes its channel's outputs. Inference needs no sums and runs elementwise.
#include <cuda_runtime.h>

#include "core/backend/cuda/element_math.h"
#include "core/backend/cuda/kernel_launch.cuh"
#include "core/backend/cuda/kernels.h"

namespace mpwb::cuda::kernels {

using launch::blocks_for;
using launch::check_launch;
using launch::global_thread;
using launch::grid_threads;
using launch::with_dtype;

namespace {

constexpr int kChannelThreads = 512;

// Element j of a channel's n * hw values, in NCHW order.
__device__ __forceinline__ int64_t channel_element(int64_t j, int64_t ch, int64_t c, int64_t hw) {
    const int64_t s = j / hw;
    return (s * c + ch) * hw + (j - s * hw);
}

template <DType T>
__global__ void batchnorm_training_kernel(const void* x, void* y, const float* gamma, const float* beta,
                                          float* running_mean, float* running_var, float* save_mean,
                                          float* save_invstd, int64_t n, int64_t c, int64_t hw,
                                          float momentum, float eps) {
    __shared__ double scratch[32];
    __shared__ BatchnormAffine affine;
    const int64_t ch = blockIdx.x, count = n * hw;
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const double v = load_value<T>(x, channel_element(j, ch, c, hw));
        sum += v;
        sum_sq += v * v;
    }
    sum = launch::block_sum(sum, scratch);
    sum_sq = launch::block_sum(sum_sq, scratch);
    if (threadIdx.x == 0) {
        const BatchnormChannel s = batchnorm_training_stats(sum, sum_sq, static_cast<double>(count), eps,
                                                            momentum, running_mean[ch], running_var[ch]);
        save_mean[ch] = s.mean;
        save_invstd[ch] = s.invstd;
        affine = batchnorm_affine(gamma[ch], beta[ch], s);
    }
    __syncthreads();
    const BatchnormAffine a = affine;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const int64_t e = channel_element(j, ch, c, hw);
        store_value<T>(y, e, batchnorm_apply(load_value<T>(x, e), a));
    }
}

template <DType T>
__global__ void batchnorm_inference_kernel(const void* x, void* y, const float* gamma, const float* beta,
                                           const float* running_mean, const float* running_var, int64_t n,
                                           int64_t c, int64_t hw, float eps) {
    const int64_t total = n * c * hw;
    for (int64_t i = global_thread(); i < total; i += grid_threads()) {
        const int64_t ch = (i / hw) % c;
        const BatchnormAffine a = batchnorm_affine(
            gamma[ch], beta[ch], batchnorm_inference_stats(running_mean[ch], running_var[ch], eps));
        store_value<T>(y, i, batchnorm_apply(load_value<T>(x, i), a));
    }
}

template <DType T>
__global__ void batchnorm_backward_kernel(const void* x, const void* dy, const float* gamma,
                                          const float* save_mean, const float* save_invstd, void* dx,
                                          float* dgamma, float* dbeta, int64_t n, int64_t c, int64_t hw) {
    __shared__ double scratch[32];
    __shared__ BatchnormBackwardChannel channel;
    const int64_t ch = blockIdx.x, count = n * hw;
    const float mean = save_mean[ch], invstd = save_invstd[ch];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const int64_t e = channel_element(j, ch, c, hw);
        const float d = load_value<T>(dy, e);
        sum_dy += d;
        sum_dy_xhat += batchnorm_dy_xhat(load_value<T>(x, e), d, mean, invstd);
    }
    sum_dy = launch::block_sum(sum_dy, scratch);
    sum_dy_xhat = launch::block_sum(sum_dy_xhat, scratch);
    if (threadIdx.x == 0) {
        dgamma[ch] = static_cast<float>(sum_dy_xhat);
        dbeta[ch] = static_cast<float>(sum_dy);
        channel = batchnorm_backward_channel(gamma[ch], mean, invstd, sum_dy, sum_dy_xhat,
                                             static_cast<double>(count));
    }
    if (!dx) return;  // uniform over the block: no thread is left waiting at the barrier below
    __syncthreads();
    const BatchnormBackwardChannel k = channel;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
        const int64_t e = channel_element(j, ch, c, hw);
        store_value<T>(dx, e, batchnorm_dx(load_value<T>(x, e), load_value<T>(dy, e), k));
    }
}

void check_channels(int64_t c, const char* what) {
    if (c > 0x7fffffff)
        throw ConfigError(std::string(what) + ": " + std::to_string(c) + " channels exceed one grid");
}

}  // namespace

void batchnorm_forward(DType t, const void* x, void* y, const float* gamma, const float* beta,
                       float* running_mean, float* running_var, float* save_mean, float* save_invstd,
                       int64_t n, int64_t c, int64_t hw, float momentum, float eps, bool training,
                       cudaStream_t stream) {
    if (n <= 0 || c <= 0 || hw <= 0) return;
    check_channels(c, "batchnorm_forward");
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        if (training)
            batchnorm_training_kernel<T><<<static_cast<unsigned>(c), kChannelThreads, 0, stream>>>(
                x, y, gamma, beta, running_mean, running_var, save_mean, save_invstd, n, c, hw, momentum,
                eps);
        else
            batchnorm_inference_kernel<T><<<blocks_for(n * c * hw), launch::kThreads, 0, stream>>>(
                x, y, gamma, beta, running_mean, running_var, n, c, hw, eps);
    });
    check_launch(training ? "batchnorm_forward (training)" : "batchnorm_forward (inference)");
}

void batchnorm_backward(DType t, const void* x, const void* dy, const float* gamma, const float* save_mean,
                        const float* save_invstd, void* dx, float* dgamma, float* dbeta, int64_t n, int64_t c,
                        int64_t hw, cudaStream_t stream) {
    if (n <= 0 || c <= 0 || hw <= 0) return;
    check_channels(c, "batchnorm_backward");
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        batchnorm_backward_kernel<T><<<static_cast<unsigned>(c), kChannelThreads, 0, stream>>>(
            x, dy, gamma, save_mean, save_invstd, dx, dgamma, dbeta, n, c, hw);
    });
    check_launch("batchnorm_backward");
}

}  // namespace mpwb::cuda::kernels
