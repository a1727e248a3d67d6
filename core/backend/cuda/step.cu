// The step's tail on the device (kernels.h, "the step's tail"): reset_step_flags,
// check_gradients (fused multi-tensor unscale + non-finite check + sum of squares),
// scaler_update (the loss scaler's skip rule), optimizer_step (fused multi-tensor SGD/Adam/AdamW
// with the master write and the reduced copy) and write_record. Together they take the skip
// decision on the device, so a whole step needs no host synchronisation and can be captured in
// a CUDA graph: every value the decision depends on is read from device memory.
//
// The per-element math is step_math.h's, the same functions the CPU-side test compares with
// core's LossScaler and Optimizer, so what is verified there is what runs here.
//
// Multi-tensor layout: the entries of a launch are the tensors of one concatenation, in offset
// order, entry k's offset the sum of the sizes before it. Blocks walk the concatenation in
// chunks (grid-stride); each chunk finds its first entry by binary search over the offsets and
// moves to the next entry where a tensor ends inside the chunk, so tensors of any size, down to
// one element, share one launch.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/backend/cuda/kernel_launch.cuh"
#include "core/backend/cuda/kernels.h"
#include "core/backend/cuda/step_math.h"

namespace mpwb::cuda::kernels {

namespace {

using launch::check_launch;
using launch::kThreads;
using launch::warp_sum;

constexpr int kWarps = kThreads / 32;
constexpr int kItemsPerThread = 4;
constexpr int64_t kChunk = int64_t{kThreads} * kItemsPerThread;

// One block per chunk up to launch::kMaxBlocks (which also keeps check_gradients' per-block
// atomics few); the grid-stride loop covers the rest.
int grid_for(int64_t total_elements) {
    const int64_t chunks = (total_elements + kChunk - 1) / kChunk;
    return static_cast<int>(std::clamp<int64_t>(chunks, 1, launch::kMaxBlocks));
}

__device__ __forceinline__ float load_as_float(const void* data, DType t, int64_t i) {
    switch (t) {
        case DType::F16:
            return __half2float(static_cast<const __half*>(data)[i]);
        case DType::BF16:
            return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
        default:
            return static_cast<const float*>(data)[i];
    }
}

// Round to nearest even, subnormals kept, overflow to infinity: the CPU's software formats.
__device__ __forceinline__ void store_from_float(void* data, DType t, int64_t i, float x) {
    switch (t) {
        case DType::F16:
            static_cast<__half*>(data)[i] = __float2half_rn(x);
            break;
        case DType::BF16:
            static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(x);
            break;
        default:
            static_cast<float*>(data)[i] = x;
            break;
    }
}

// The entry holding element `index` of the concatenation: the last one whose offset is <= index.
template <class Entry>
__device__ int find_entry(const Entry* entries, int count, int64_t index) {
    int lo = 0, hi = count - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (entries[mid].offset <= index)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

// Walks the elements a thread owns in one chunk, calling visit(entry, index within the entry).
// Elements of one thread in a chunk are kThreads apart, so a warp's loads are contiguous.
template <class Entry, class Visit>
__device__ void for_each_in_chunk(const Entry* entries, int count, int64_t total, int64_t chunk_start,
                                  Visit visit) {
    int e = find_entry(entries, count, chunk_start);
    int64_t begin = entries[e].offset;
    int64_t end = begin + entries[e].n;
    for (int k = 0; k < kItemsPerThread; ++k) {
        const int64_t i = chunk_start + int64_t{k} * kThreads + threadIdx.x;
        if (i >= total) return;
        while (i >= end && e + 1 < count) {
            ++e;
            begin = entries[e].offset;
            end = begin + entries[e].n;
        }
        if (i < begin || i >= end) continue;  // a gap in the offsets: nothing lives there
        visit(entries[e], i - begin);
    }
}

__device__ __forceinline__ int32_t warp_min(int32_t v) {
    for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

__global__ void reset_step_flags_kernel(StepFlags* flags) {
    flags->first_bad = kAllFinite;
    flags->sum_squares = 0.0;
}

__global__ void __launch_bounds__(kThreads)
    check_gradients_kernel(const GradEntry* grads, int count, int64_t total, const ScalerState* scaler,
                           bool want_norm, StepFlags* flags) {
    // Before scaler_update, ScalerState::scale is the scale this step's loss was multiplied by
    // (scale_used still holds the previous step's). 1/scale in FP32, as the CPU trainer forms it.
    const float inverse = div_rn(1.0f, scaler->scale);
    int32_t first_bad = kAllFinite;
    double sum = 0.0;
    for (int64_t chunk = int64_t{blockIdx.x} * kChunk; chunk < total; chunk += int64_t{gridDim.x} * kChunk) {
        for_each_in_chunk(grads, count, total, chunk, [&](const GradEntry& g, int64_t i) {
            const float x = mul_rn(load_as_float(g.data, g.dtype, i), inverse);
            if (!is_finite(x)) first_bad = min(first_bad, g.order);
            if (want_norm) sum += static_cast<double>(x) * static_cast<double>(x);
        });
    }
    first_bad = warp_min(first_bad);
    sum = warp_sum(sum);
    __shared__ int32_t block_bad[kWarps];
    __shared__ double block_sum[kWarps];
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    if (lane == 0) {
        block_bad[warp] = first_bad;
        block_sum[warp] = sum;
    }
    __syncthreads();
    if (warp != 0) return;
    first_bad = lane < kWarps ? block_bad[lane] : kAllFinite;
    sum = lane < kWarps ? block_sum[lane] : 0.0;
    first_bad = warp_min(first_bad);
    sum = warp_sum(sum);
    if (lane != 0) return;
    if (first_bad != kAllFinite) atomicMin(&flags->first_bad, first_bad);
    if (want_norm && sum != 0.0) atomicAdd(&flags->sum_squares, sum);
}

__global__ void scaler_update_kernel(const ScalerRuleConfig* config, const float* loss_sum,
                                     const StepFlags* flags, ScalerState* state) {
    // A non-finite loss with finite gradients is an overflow too (the CPU trainer's "loss").
    const bool nonfinite = flags->first_bad != kAllFinite || (loss_sum != nullptr && !is_finite(*loss_sum));
    ScalerState s = *state;
    scaler_rule(*config, nonfinite, s);
    *state = s;
}

__global__ void __launch_bounds__(kThreads)
    optimizer_step_kernel(const ParamEntry* params, int count, int64_t total,
                          const OptimizerConstants* constants, const float* lr_table, int64_t lr_table_size,
                          const StepInput* input, const ScalerState* scaler, const StepFlags* flags) {
    // Uniform over the grid, so returning before the barrier below is safe.
    if (!scaler->last_applied) return;
    const OptimizerConstants k = *constants;
    // Thread 0 forms the per-step scalars (two double pows) once per block.
    __shared__ OptimizerStepScalars block_scalars;
    __shared__ float block_clip;
    if (threadIdx.x == 0) {
        const float lr = step_lr(lr_table, lr_table_size, scaler->optimizer_iteration, input->lr_scale);
        // applied_steps already counts this step: Adam's step number, and 1 on the first update.
        const int64_t step = scaler->applied_steps;
        block_scalars = optimizer_step_scalars(k, lr, step, step == 1);
        block_clip = clip_coefficient(flags->sum_squares, k.clip_norm);
    }
    __syncthreads();
    const OptimizerStepScalars s = block_scalars;
    const float clip = block_clip;
    const bool clipping = clip != 1.0f;
    // scale_used is now the scale this step ran with; the same FP32 1/scale check_gradients used.
    const float inverse = div_rn(1.0f, scaler->scale_used);
    for (int64_t chunk = int64_t{blockIdx.x} * kChunk; chunk < total; chunk += int64_t{gridDim.x} * kChunk) {
        for_each_in_chunk(params, count, total, chunk, [&](const ParamEntry& p, int64_t i) {
            // Unscaled and clipped as the CPU stores them: two FP32 products, each rounded.
            float g = mul_rn(load_as_float(p.grad, p.grad_dtype, i), inverse);
            if (clipping) g = mul_rn(g, clip);
            float w = p.master[i];
            float a = p.a ? p.a[i] : 0.0f;
            float b = p.b ? p.b[i] : 0.0f;
            optimizer_rule(k, s, p.decay != 0, g, w, a, b);
            if (p.a) p.a[i] = a;
            if (p.b) p.b[i] = b;
            if (k.master_fp16) w = __half2float(__float2half_rn(w));
            p.master[i] = w;
            if (p.copy) store_from_float(p.copy, p.copy_dtype, i, w);
        });
    }
}

__global__ void write_record_kernel(const StepInput* input, const float* loss_sum, const int64_t* correct,
                                    const StepFlags* flags, const ScalerState* scaler, const float* lr_table,
                                    int64_t lr_table_size, StepRecord* ring, int64_t ring_size,
                                    int64_t* ring_count) {
    StepRecord r;
    r.step = input->step;
    r.loss = *loss_sum;
    r.scale_used = scaler->scale_used;
    r.correct = correct ? *correct : 0;
    r.first_bad = flags->first_bad;
    if (r.first_bad == kAllFinite && !is_finite(r.loss)) r.first_bad = kNonFiniteLoss;
    r.applied = scaler->last_applied;
    // The trainer reports the norm of applied steps only; without clipping the sum stayed 0.
    r.grad_norm = r.applied ? static_cast<float>(sqrt_rn(flags->sum_squares)) : 0.0f;
    r.lr = step_lr(lr_table, lr_table_size, scaler->optimizer_iteration, input->lr_scale);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(r.end_ns));
    const int64_t index = *ring_count;
    ring[index % ring_size] = r;
    *ring_count = index + 1;
}

}  // namespace

void reset_step_flags(StepFlags* flags, cudaStream_t stream) {
    reset_step_flags_kernel<<<1, 1, 0, stream>>>(flags);
    check_launch("reset_step_flags");
}

void check_gradients(const GradEntry* grads, int count, int64_t total_elements, const ScalerState* scaler,
                     bool want_norm, StepFlags* flags, cudaStream_t stream) {
    if (count <= 0 || total_elements <= 0) return;
    check_gradients_kernel<<<grid_for(total_elements), kThreads, 0, stream>>>(grads, count, total_elements,
                                                                              scaler, want_norm, flags);
    check_launch("check_gradients");
}

void scaler_update(const ScalerRuleConfig* config, const float* loss_sum, const StepFlags* flags,
                   ScalerState* state, cudaStream_t stream) {
    scaler_update_kernel<<<1, 1, 0, stream>>>(config, loss_sum, flags, state);
    check_launch("scaler_update");
}

void optimizer_step(const ParamEntry* params, int count, int64_t total_elements,
                    const OptimizerConstants* constants, const float* lr_table, int64_t lr_table_size,
                    const StepInput* input, const ScalerState* scaler, const StepFlags* flags,
                    cudaStream_t stream) {
    if (count <= 0 || total_elements <= 0) return;
    if (lr_table_size <= 0) throw ConfigError("optimizer_step: the learning-rate table is empty");
    optimizer_step_kernel<<<grid_for(total_elements), kThreads, 0, stream>>>(
        params, count, total_elements, constants, lr_table, lr_table_size, input, scaler, flags);
    check_launch("optimizer_step");
}

void write_record(const StepInput* input, const float* loss_sum, const int64_t* correct,
                  const StepFlags* flags, const ScalerState* scaler, const float* lr_table,
                  int64_t lr_table_size, StepRecord* ring, int64_t ring_size, int64_t* ring_count,
                  cudaStream_t stream) {
    if (lr_table_size <= 0) throw ConfigError("write_record: the learning-rate table is empty");
    if (ring_size <= 0) throw ConfigError("write_record: the record ring is empty");
    write_record_kernel<<<1, 1, 0, stream>>>(input, loss_sum, correct, flags, scaler, lr_table, lr_table_size,
                                             ring, ring_size, ring_count);
    check_launch("write_record");
}

}  // namespace mpwb::cuda::kernels
