// Launchers of the CUDA backend's own kernels (the rest is cuBLASLt and cuDNN). Plain C++
// declarations, so the .cpp files that plan and drive a step compile with g++; the kernels
// themselves are in the .cu files named after what they compute. Every kernel's per-element
// math lives in element_math.h or step_math.h as MPWB_HD functions: the CPU references the
// parity checks and tests compare against are those same functions run on the host.
//
// Conventions: `n` counts elements; tensors are contiguous; a `DType` says how `void*` data is
// stored; every launcher enqueues on `stream` and never synchronises, so a whole step can be
// captured in a CUDA graph. Values a step decides on the device (the loss scale, whether the
// step is skipped) are read by the kernels from device memory, never passed from the host.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/backend/backend.h"
#include "core/backend/cuda/device_types.h"
#include "core/backend/cuda/step_math.h"

namespace mpwb::cuda::kernels {

// ---- elementwise (elementwise.cu) ----
// out = in converted to `to` with round-to-nearest-even (in == out allowed when the dtypes match).
void convert(DType from, const void* in, DType to, void* out, int64_t n, cudaStream_t stream);
// An FP32 array rounded in place to `format`'s values (FP32 left alone; TF32 rounds the mantissa
// to 10 bits; FP16 and BF16 as the formats hold them, subnormals included).
void round_f32(Format format, float* x, int64_t n, cudaStream_t stream);
// y[r, c] += bias[c] for a rows x cols row-major y, then ReLU when `relu`; db[c] = sum_r dy[r, c]
// (FP32 sum) in two passes through `scratch`, device memory of bias_grad_rows_scratch_bytes.
void add_bias_rows(DType t, void* y, const float* bias, int64_t rows, int64_t cols, bool relu,
                   cudaStream_t stream);
size_t bias_grad_rows_scratch_bytes(int64_t rows, int64_t cols);
void bias_grad_rows(DType t, const void* dy, float* db, int64_t rows, int64_t cols, void* scratch,
                    cudaStream_t stream);
// NCHW channel bias and its gradient (sum over n and hw).
void add_bias_channels(DType t, void* y, const float* bias, int64_t n, int64_t c, int64_t hw,
                       cudaStream_t stream);
void bias_grad_channels(DType t, const void* dy, float* db, int64_t n, int64_t c, int64_t hw,
                        cudaStream_t stream);
// Activations as Backend::activation_forward/backward (x, y, dy, dx all of dtype t; math in FP32).
void activation_forward(Activation kind, float slope, DType t, const void* x, void* y, int64_t n,
                        cudaStream_t stream);
void activation_backward(Activation kind, float slope, DType t, const void* x, const void* y, const void* dy,
                         void* dx, int64_t n, cudaStream_t stream);
// y = x * mask (mask FP32, holds 0 or 1/(1-p)).
void multiply(DType t, const void* x, const float* mask, void* y, int64_t n, cudaStream_t stream);
// Draws an inverted-dropout mask (0 or 1/(1-p)) from a counter-based hash of (seed, *step, i):
// the step is read from device memory so a replayed graph draws a new mask every step.
void dropout_mask(float p, uint64_t seed, const int64_t* step, float* mask, int64_t n, cudaStream_t stream);
// Assembles a batch on the device: x_out[i, :] = converted(samples[index[offset + i], :]) for i
// < batch, labels_out[i, :] likewise. `offset` is read from device memory (graph replay).
void gather_batch(const float* samples, int64_t sample_width, const float* labels, int64_t label_width,
                  const int32_t* order, const int64_t* offset, int64_t batch, DType x_dtype, void* x_out,
                  float* labels_out, cudaStream_t stream);

// ---- batch normalisation (batchnorm.cu), statistics in FP32 as Backend::batchnorm_* ----
void batchnorm_forward(DType t, const void* x, void* y, const float* gamma, const float* beta,
                       float* running_mean, float* running_var, float* save_mean, float* save_invstd,
                       int64_t n, int64_t c, int64_t hw, float momentum, float eps, bool training,
                       cudaStream_t stream);
void batchnorm_backward(DType t, const void* x, const void* dy, const float* gamma, const float* save_mean,
                        const float* save_invstd, void* dx, float* dgamma, float* dbeta, int64_t n, int64_t c,
                        int64_t hw, cudaStream_t stream);

// ---- losses (loss.cu): FP32 math whatever the logits' dtype ----
// Both losses reduce through `scratch`, device memory of loss_scratch_bytes() bytes.
size_t loss_scratch_bytes();
// Softmax cross-entropy over rows of logits[n, k] against class indices stored as floats.
// Adds the batch's mean loss to *loss_sum and its correct-prediction count to *correct (so an
// evaluation can accumulate over batches; zero them first). When dlogits is not null it writes
// dlogits = (*grad_scale) * (softmax - onehot) / n in dtype grad_t; grad_scale is device memory
// (the scaler's current scale), null meaning 1.
void softmax_cross_entropy(DType logits_t, const void* logits, const float* labels, DType grad_t,
                           void* dlogits, int64_t n, int64_t k, const float* grad_scale, float* loss_sum,
                           int64_t* correct, void* scratch, cudaStream_t stream);
// Mean squared error: *loss_sum += mean((pred - target)^2); dpred = scale * 2 (pred - target) / (n k).
void mse(DType pred_t, const void* pred, const float* target, DType grad_t, void* dpred, int64_t n, int64_t k,
         const float* grad_scale, float* loss_sum, void* scratch, cudaStream_t stream);

// ---- gradient statistics (histogram.cu) ----
// Adds the exponent histogram of x (see ExponentHistogram; the same bins, zero, non-finite,
// above-max-per-format and max-abs rules) into *out, which the caller zeroes.
void exponent_histogram(DType t, const void* x, int64_t n, DeviceHistogram* out, cudaStream_t stream);

// ---- the step's tail (step.cu): unscale + check, scaler, clipping, optimizer, record ----
// Over every gradient in `grads` (device array of `count` entries): multiplies by 1/scale_used
// in FP32 and checks the result is finite; writes flags->first_bad = the smallest `order` of a
// tensor holding a non-finite value (kAllFinite when none), and flags->sum_squares = the sum of
// the unscaled squares (for clipping) when `want_norm`. Writes no gradient: the optimizer
// unscales again as it reads, so reduced-precision gradients are never re-rounded.
// `flags` must hold kAllFinite / 0 before the launch (reset_step_flags does that).
// Multi-tensor entries (GradEntry, ParamEntry) are listed in offset order, each offset the sum of
// the sizes before it, and total_elements the sum of all sizes: blocks find their tensor by a
// binary search over the offsets. The sum of squares is added with one atomic per block, so its
// last bits (double) may vary from run to run.
void reset_step_flags(StepFlags* flags, cudaStream_t stream);
void check_gradients(const GradEntry* grads, int count, int64_t total_elements, const ScalerState* scaler,
                     bool want_norm, StepFlags* flags, cudaStream_t stream);
// One scaler decision on the device (scaler_rule in step_math.h): reads flags->first_bad and the
// loss's finiteness, updates *state (scale, trackers, counters, last_applied, scale_used).
void scaler_update(const ScalerRuleConfig* config, const float* loss_sum, const StepFlags* flags,
                   ScalerState* state, cudaStream_t stream);
// The fused optimizer over every parameter: when the scaler applied the step, g = grad *
// (1/scale_used) * clip coefficient (from flags->sum_squares and constants->clip_norm), then the
// SGD/Adam/AdamW update of the FP32 master (optimizer_rule in step_math.h), the master rounded to
// FP16 under fp16-pure, and the reduced copy written. Does nothing when the step was skipped.
void optimizer_step(const ParamEntry* params, int count, int64_t total_elements,
                    const OptimizerConstants* constants, const float* lr_table, int64_t lr_table_size,
                    const StepInput* input, const ScalerState* scaler, const StepFlags* flags,
                    cudaStream_t stream);
// Appends the step's record to the ring (slot = *ring_count % ring_size), and advances
// *ring_count. loss_sum and correct are the loss kernel's outputs for this step (correct may be
// null: 0 recorded). lr_table and lr_table_size as given to optimizer_step, for the record's lr.
// A finite-gradient step skipped for its loss records first_bad = kNonFiniteLoss.
void write_record(const StepInput* input, const float* loss_sum, const int64_t* correct,
                  const StepFlags* flags, const ScalerState* scaler, const float* lr_table,
                  int64_t lr_table_size, StepRecord* ring, int64_t ring_size, int64_t* ring_count,
                  cudaStream_t stream);

}  // namespace mpwb::cuda::kernels
