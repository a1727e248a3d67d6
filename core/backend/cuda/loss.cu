// The losses in FP32 whatever the logits' dtype, as CpuBackend::softmax_cross_entropy and mse:
// softmax with the row's maximum subtracted, the CPU's argmax rule (NaN wins, first maximum on
// ties) for the correct count, per-row losses summed in FP64 for the batch mean, and gradients
// grad_scale * (softmax - onehot) / n and grad_scale * 2 (pred - target) / (n k), with the scale
// read from device memory (the scaler's current scale) so a captured step needs no host value.
//
// Reproducibility: a batch up to kElementsPerBlock values (every training batch of the
// workbench's networks) is reduced by one block, in an order fixed by the launch shape, so the
// loss repeats bit for bit. Larger inputs (a whole test set at once) are split over blocks
// whose partial means meet in a float atomicAdd, whose order may vary in the last bit.
#include <cuda_runtime.h>

#include "core/backend/cuda/element_math.h"
#include "core/backend/cuda/kernel_launch.cuh"
#include "core/backend/cuda/kernels.h"

namespace mpwb::cuda::kernels {

using launch::check_launch;
using launch::with_dtype;

namespace {

constexpr int kLossThreads = 256;
constexpr int kWarpsPerBlock = kLossThreads / 32;
constexpr int64_t kElementsPerBlock = int64_t{1} << 16;

int loss_blocks(int64_t elements, int64_t max_useful) {
    int64_t blocks = (elements + kElementsPerBlock - 1) / kElementsPerBlock;
    if (blocks > max_useful) blocks = max_useful;
    if (blocks > launch::kMaxBlocks) blocks = launch::kMaxBlocks;
    return static_cast<int>(blocks < 1 ? 1 : blocks);
}

// One warp per row: argmax and maximum, then the sum of exponentials, then the gradient.
template <DType LogitsT, DType GradT>
__global__ void softmax_cross_entropy_kernel(const void* logits, const float* labels, void* dlogits, int64_t n,
                                             int64_t k, const float* grad_scale, float* loss_sum,
                                             int64_t* correct) {
    __shared__ double scratch[32];
    __shared__ long long count_scratch[32];
    const int lane = threadIdx.x & 31;
    const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
    const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
    const float g = (grad_scale ? *grad_scale : 1.0f) / static_cast<float>(n);
    double loss = 0.0;   // this warp's rows, in lane 0
    long long hits = 0;  // likewise
    for (int64_t r = warp; r < n; r += warps) {
        const int64_t row = r * k;
        float zmax = 0.0f;
        int64_t arg = -1;
        for (int64_t j = lane; j < k; j += 32) {
            const float z = load_value<LogitsT>(logits, row + j);
            if (arg < 0 || argmax_takes(z, zmax)) {
                zmax = z;
                arg = j;
            }
        }
        launch::warp_argmax(zmax, arg);
        float sum = 0.0f;
        for (int64_t j = lane; j < k; j += 32) sum += exp_f(sub_rn(load_value<LogitsT>(logits, row + j), zmax));
        sum = __shfl_sync(0xffffffffu, launch::warp_sum(sum), 0);
        const float log_sum = log_f(sum);
        const float label_value = labels[r];
        const bool label_ok = label_value >= 0.0f && label_value < static_cast<float>(k);
        const int64_t label = label_ok ? static_cast<int64_t>(label_value) : -1;
        if (lane == 0) {
            // A label that is no class makes the loss NaN, so a bad dataset cannot train silently.
            loss += label_ok ? static_cast<double>(
                                   cross_entropy_row_loss(log_sum, zmax, load_value<LogitsT>(logits, row + label)))
                             : static_cast<double>(__int_as_float(0x7fc00000));
            hits += arg == label;
        }
        if (dlogits)
            for (int64_t j = lane; j < k; j += 32)
                store_value<GradT>(dlogits, row + j,
                                   cross_entropy_grad(load_value<LogitsT>(logits, row + j), zmax, log_sum, g, j == label));
    }
    const double block_loss = launch::block_sum(loss, scratch);
    const long long block_hits = launch::block_sum(hits, count_scratch);
    if (threadIdx.x == 0) {
        atomicAdd(loss_sum, static_cast<float>(block_loss / static_cast<double>(n)));
        if (correct) atomicAdd(reinterpret_cast<unsigned long long*>(correct), static_cast<unsigned long long>(block_hits));
    }
}

template <DType PredT, DType GradT>
__global__ void mse_kernel(const void* pred, const float* target, void* dpred, int64_t count,
                           const float* grad_scale, float* loss_sum) {
    __shared__ double scratch[32];
    const float g = 2.0f * (grad_scale ? *grad_scale : 1.0f) / static_cast<float>(count);
    double sum = 0.0;
    for (int64_t i = launch::global_thread(); i < count; i += launch::grid_threads()) {
        const float diff = load_value<PredT>(pred, i) - target[i];
        sum += static_cast<double>(diff) * diff;
        if (dpred) store_value<GradT>(dpred, i, g * diff);
    }
    const double block_sum = launch::block_sum(sum, scratch);
    if (threadIdx.x == 0) atomicAdd(loss_sum, static_cast<float>(block_sum / static_cast<double>(count)));
}

}  // namespace

void softmax_cross_entropy(DType logits_t, const void* logits, const float* labels, DType grad_t, void* dlogits,
                           int64_t n, int64_t k, const float* grad_scale, float* loss_sum, int64_t* correct,
                           cudaStream_t stream) {
    if (n <= 0 || k <= 0) return;
    const int blocks = loss_blocks(n * k, (n + kWarpsPerBlock - 1) / kWarpsPerBlock);
    with_dtype(logits_t, [&](auto logits_tag) {
        constexpr DType LogitsT = decltype(logits_tag)::value;
        with_dtype(grad_t, [&](auto grad_tag) {
            constexpr DType GradT = decltype(grad_tag)::value;
            softmax_cross_entropy_kernel<LogitsT, GradT><<<blocks, kLossThreads, 0, stream>>>(
                logits, labels, dlogits, n, k, grad_scale, loss_sum, correct);
        });
    });
    check_launch("softmax_cross_entropy");
}

void mse(DType pred_t, const void* pred, const float* target, DType grad_t, void* dpred, int64_t n, int64_t k,
         const float* grad_scale, float* loss_sum, cudaStream_t stream) {
    const int64_t count = n * k;
    if (n <= 0 || k <= 0) return;
    const int blocks = loss_blocks(count, (count + kLossThreads - 1) / kLossThreads);
    with_dtype(pred_t, [&](auto pred_tag) {
        constexpr DType PredT = decltype(pred_tag)::value;
        with_dtype(grad_t, [&](auto grad_tag) {
            constexpr DType GradT = decltype(grad_tag)::value;
            mse_kernel<PredT, GradT><<<blocks, kLossThreads, 0, stream>>>(pred, target, dpred, count, grad_scale,
                                                                          loss_sum);
        });
    });
    check_launch("mse");
}

}  // namespace mpwb::cuda::kernels
