// The losses in FP32 whatever the logits' dtype, as CpuBackend::softmax_cross_entropy and mse:
// softmax with the row's maximum subtracted, the CPU's argmax rule (NaN wins, first maximum on
// ties) for the correct count, per-row losses summed in FP64 for the batch mean, and gradients
// grad_scale * (softmax - onehot) / n and grad_scale * 2 (pred - target) / (n k), with the scale
// read from device memory (the scaler's current scale) so a captured step needs no host value.
//
// Reproducibility and speed: rows are spread over up to kMaxLossBlocks blocks; each block
// writes its partial sum (FP64) and correct count into the caller's scratch, and a one-block
// finishing kernel adds the partials in block order. The grid depends on n and k only, so a loss
// repeats bit for bit, and a batch of 2048 rows no longer waits on one block. Narrow rows (k <=
// 32, every classifier of the presets) take one thread per row; wider rows one warp per row.
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
constexpr int kMaxLossBlocks = 256;
constexpr int64_t kThreadPerRowMaxClasses = 32;

struct LossPartials {
    double loss[kMaxLossBlocks];
    unsigned long long hits[kMaxLossBlocks];
};

int loss_blocks(int64_t rows_or_elements, int64_t per_block) {
    const int64_t blocks = (rows_or_elements + per_block - 1) / per_block;
    return static_cast<int>(blocks < 1 ? 1 : blocks > kMaxLossBlocks ? kMaxLossBlocks : blocks);
}

// One row's loss, correct flag and (when dlogits) gradient, by `lanes` cooperating threads
// (1, or a whole warp) of which `lane` is one; every lane returns the same values.
template <DType LogitsT, DType GradT, int Lanes>
__device__ void cross_entropy_row(const void* logits, const float* labels, void* dlogits, int64_t r,
                                  int64_t k, float g, int lane, double& loss, long long& hits) {
    const int64_t row = r * k;
    float zmax = 0.0f;
    int64_t arg = -1;
    for (int64_t j = lane; j < k; j += Lanes) {
        const float z = load_value<LogitsT>(logits, row + j);
        if (arg < 0 || argmax_takes(z, zmax)) {
            zmax = z;
            arg = j;
        }
    }
    if constexpr (Lanes == 32) launch::warp_argmax(zmax, arg);
    float sum = 0.0f;
    for (int64_t j = lane; j < k; j += Lanes)
        sum += exp_f(sub_rn(load_value<LogitsT>(logits, row + j), zmax));
    if constexpr (Lanes == 32) sum = __shfl_sync(0xffffffffu, launch::warp_sum(sum), 0);
    const float log_sum = log_f(sum);
    const float label_value = labels[r];
    const bool label_ok = label_value >= 0.0f && label_value < static_cast<float>(k);
    const int64_t label = label_ok ? static_cast<int64_t>(label_value) : -1;
    if (lane == 0) {
        // A label that is no class makes the loss NaN, so a bad dataset cannot train silently.
        loss += label_ok ? static_cast<double>(cross_entropy_row_loss(
                               log_sum, zmax, load_value<LogitsT>(logits, row + label)))
                         : static_cast<double>(__int_as_float(0x7fc00000));
        hits += arg == label;
    }
    if (dlogits)
        for (int64_t j = lane; j < k; j += Lanes)
            store_value<GradT>(
                dlogits, row + j,
                cross_entropy_grad(load_value<LogitsT>(logits, row + j), zmax, log_sum, g, j == label));
}

template <DType LogitsT, DType GradT, int Lanes>
__global__ void softmax_cross_entropy_kernel(const void* logits, const float* labels, void* dlogits,
                                             int64_t n, int64_t k, const float* grad_scale,
                                             LossPartials* partials) {
    __shared__ double scratch[32];
    __shared__ long long count_scratch[32];
    const int lane = Lanes == 1 ? 0 : static_cast<int>(threadIdx.x & 31);
    const int64_t groups_per_block = kLossThreads / Lanes;
    const int64_t group = static_cast<int64_t>(blockIdx.x) * groups_per_block + threadIdx.x / Lanes;
    const int64_t groups = static_cast<int64_t>(gridDim.x) * groups_per_block;
    const float g = (grad_scale ? *grad_scale : 1.0f) / static_cast<float>(n);
    double loss = 0.0;   // this thread's rows (lane 0 of a warp for Lanes == 32)
    long long hits = 0;  // likewise
    for (int64_t r = group; r < n; r += groups)
        cross_entropy_row<LogitsT, GradT, Lanes>(logits, labels, dlogits, r, k, g, lane, loss, hits);
    const double block_loss = launch::block_sum(loss, scratch);
    const long long block_hits = launch::block_sum(hits, count_scratch);
    if (threadIdx.x == 0) {
        partials->loss[blockIdx.x] = block_loss;
        partials->hits[blockIdx.x] = static_cast<unsigned long long>(block_hits);
    }
}

// Adds the partials of `blocks` blocks in block order: *loss_sum += sum / count, *correct += hits.
__global__ void finish_loss_kernel(const LossPartials* partials, int blocks, int64_t count, float* loss_sum,
                                   int64_t* correct) {
    __shared__ double scratch[32];
    __shared__ unsigned long long count_scratch[32];
    const bool mine = static_cast<int>(threadIdx.x) < blocks;
    const double loss = launch::block_sum(mine ? partials->loss[threadIdx.x] : 0.0, scratch);
    const unsigned long long hits =
        launch::block_sum(mine ? partials->hits[threadIdx.x] : 0ull, count_scratch);
    if (threadIdx.x == 0) {
        *loss_sum += static_cast<float>(loss / static_cast<double>(count));
        if (correct) *correct += static_cast<int64_t>(hits);
    }
}

template <DType PredT, DType GradT>
__global__ void mse_kernel(const void* pred, const float* target, void* dpred, int64_t count,
                           const float* grad_scale, LossPartials* partials) {
    __shared__ double scratch[32];
    const float g = 2.0f * (grad_scale ? *grad_scale : 1.0f) / static_cast<float>(count);
    double sum = 0.0;
    for (int64_t i = launch::global_thread(); i < count; i += launch::grid_threads()) {
        const float diff = load_value<PredT>(pred, i) - target[i];
        sum += static_cast<double>(diff) * diff;
        if (dpred) store_value<GradT>(dpred, i, g * diff);
    }
    const double block_sum = launch::block_sum(sum, scratch);
    if (threadIdx.x == 0) {
        partials->loss[blockIdx.x] = block_sum;
        partials->hits[blockIdx.x] = 0;
    }
}

}  // namespace

size_t loss_scratch_bytes() { return sizeof(LossPartials); }

void softmax_cross_entropy(DType logits_t, const void* logits, const float* labels, DType grad_t,
                           void* dlogits, int64_t n, int64_t k, const float* grad_scale, float* loss_sum,
                           int64_t* correct, void* scratch, cudaStream_t stream) {
    if (n <= 0 || k <= 0) return;
    auto* partials = static_cast<LossPartials*>(scratch);
    const bool thread_per_row = k <= kThreadPerRowMaxClasses;
    const int blocks = loss_blocks(n, thread_per_row ? kLossThreads : kWarpsPerBlock);
    with_dtype(logits_t, [&](auto logits_tag) {
        constexpr DType LogitsT = decltype(logits_tag)::value;
        with_dtype(grad_t, [&](auto grad_tag) {
            constexpr DType GradT = decltype(grad_tag)::value;
            if (thread_per_row)
                softmax_cross_entropy_kernel<LogitsT, GradT, 1><<<blocks, kLossThreads, 0, stream>>>(
                    logits, labels, dlogits, n, k, grad_scale, partials);
            else
                softmax_cross_entropy_kernel<LogitsT, GradT, 32><<<blocks, kLossThreads, 0, stream>>>(
                    logits, labels, dlogits, n, k, grad_scale, partials);
        });
    });
    check_launch("softmax_cross_entropy");
    finish_loss_kernel<<<1, kMaxLossBlocks, 0, stream>>>(partials, blocks, n, loss_sum, correct);
    check_launch("finish_loss");
}

void mse(DType pred_t, const void* pred, const float* target, DType grad_t, void* dpred, int64_t n, int64_t k,
         const float* grad_scale, float* loss_sum, void* scratch, cudaStream_t stream) {
    const int64_t count = n * k;
    if (n <= 0 || k <= 0) return;
    auto* partials = static_cast<LossPartials*>(scratch);
    const int blocks = loss_blocks(count, int64_t{kLossThreads} * 16);
    with_dtype(pred_t, [&](auto pred_tag) {
        constexpr DType PredT = decltype(pred_tag)::value;
        with_dtype(grad_t, [&](auto grad_tag) {
            constexpr DType GradT = decltype(grad_tag)::value;
            mse_kernel<PredT, GradT>
                <<<blocks, kLossThreads, 0, stream>>>(pred, target, dpred, count, grad_scale, partials);
        });
    });
    check_launch("mse");
    finish_loss_kernel<<<1, kMaxLossBlocks, 0, stream>>>(partials, blocks, count, loss_sum, nullptr);
    check_launch("finish_loss");
}

}  // namespace mpwb::cuda::kernels
