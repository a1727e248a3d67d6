// Launchers of the per-tensor FP8 kernels (fp8_quantize.cu): the amax of a tensor, its
// quantization to FP8 bytes in the layouts the cuBLASLt FP8 GEMM reads (row-major, and the
// transposed copy the backward GEMMs need, both from one pass), the quantized values as BF16 for
// the GEMMs FP8 cannot run, the per-tensor states' step begin / amax / end (fp8_math.h), and the
// finish of an FP32 product (dequantize, bias, ReLU, store). Plain C++ declarations, as
// kernels.h; every launcher enqueues on `stream`, reads scales from device memory and never
// synchronises, so a step using them can be captured in a CUDA graph.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/backend/cuda/device_types.h"
#include "core/backend/cuda/fp8_math.h"

namespace mpwb::cuda::kernels {

// fp8_begin_step on states[0..count), each with its ring rings + i * rule->history_len.
void fp8_begin_steps(Fp8TensorState* states, const float* rings, int count, const Fp8Rule* rule,
                     cudaStream_t stream);
// fp8_end_step on states[0..count).
void fp8_end_steps(Fp8TensorState* states, float* rings, int count, const Fp8Rule* rule, cudaStream_t stream);

// *amax_bits = max(*amax_bits, the |x| bits of every element): order-free, so deterministic.
// The caller zeroes *amax_bits first.
void fp8_amax(DType t, const void* x, int64_t n, uint32_t* amax_bits, cudaStream_t stream);
// fp8_take_amax(*state, *amax_bits, *rule): one thread.
void fp8_take_amax(Fp8TensorState* state, const uint32_t* amax_bits, const Fp8Rule* rule,
                   cudaStream_t stream);

// Where fp8_quantize writes (any may be null): `bytes` row-major [rows, cols]; `bytes_t` the
// transpose [cols, rows]; `values` the quantized values (q, unscaled: exact in BF16) as BF16
// bits, row-major; `amax_bits` gets the amax of x merged in (as fp8_amax).
struct Fp8Outputs {
    uint8_t* bytes = nullptr;
    uint8_t* bytes_t = nullptr;
    uint16_t* values = nullptr;
    uint32_t* amax_bits = nullptr;
};
// q = fp8_encode(x · state->step_scale) for a row-major [rows, cols] x of dtype t.
void fp8_quantize(DType t, const void* x, int64_t rows, int64_t cols, const Fp8TensorState* state,
                  Fp8Element element, const Fp8Outputs& out, cudaStream_t stream);

// out[r, c] = store(t_out, relu?(acc[r, c] · a->step_inverse · b->step_inverse + bias[c])) with
// each factor applied only when given (null: 1 / no bias), rounded once into t_out.
void fp8_finish(const float* acc, int64_t rows, int64_t cols, const Fp8TensorState* a,
                const Fp8TensorState* b, const float* bias, bool relu, DType t_out, void* out,
                cudaStream_t stream);

}  // namespace mpwb::cuda::kernels
