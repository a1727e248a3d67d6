// The per-tensor FP8 kernels (fp8_kernels.h). The element rule and the state updates are
// fp8_math.h's MPWB_HD functions, so the host tests check exactly what runs here.
//
// Quantization runs over 32 x 32 tiles: each block reads a tile row by row (coalesced), writes
// the bytes row-major, and, for the transposed copy, writes the tile again column by column
// through shared memory, so both layouts come from one read of x. The amax is a maximum of |x|
// bit patterns (NaN above inf above every finite value, as the CPU's amax_of), merged per warp
// and then with one atomicMax per warp: a maximum does not depend on the order, so the result is
// the same every run.
#include <cuda_runtime.h>

#include "core/backend/cuda/fp8_kernels.h"
#include "core/backend/cuda/kernel_launch.cuh"

namespace mpwb::cuda::kernels {
namespace {

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // threads per tile column; each handles kTile / kTileRows rows

constexpr int kBeginThreads = 256;

// One block per tensor: the history's maximum (NaN skipped, as fp8_history_amax) reduced by the
// block, then the rule in thread 0.
__global__ void begin_steps_kernel(Fp8TensorState* states, const float* rings, const Fp8Rule* rule) {
    __shared__ float partial[kBeginThreads];
    Fp8TensorState& t = states[blockIdx.x];
    const float* ring = rings + static_cast<int64_t>(blockIdx.x) * rule->history_len;
    float m = 0.0f;
    if (!rule->most_recent)
        for (int32_t i = threadIdx.x; i < t.count; i += kBeginThreads) {
            const float a = ring[(t.head + i) % rule->history_len];
            m = a > m ? a : m;
        }
    partial[threadIdx.x] = m;
    __syncthreads();
    for (int half = kBeginThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            const float other = partial[threadIdx.x + half];
            partial[threadIdx.x] = other > partial[threadIdx.x] ? other : partial[threadIdx.x];
        }
        __syncthreads();
    }
    if (threadIdx.x != 0) return;
    const float history_amax = t.count == 0        ? 0.0f
                               : rule->most_recent ? ring[(t.head + t.count - 1) % rule->history_len]
                                                   : partial[0];
    fp8_begin_step_from(t, history_amax, *rule);
}

__global__ void end_steps_kernel(Fp8TensorState* states, float* rings, int count, const Fp8Rule* rule) {
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < count) fp8_end_step(states[i], rings + static_cast<int64_t>(i) * rule->history_len, *rule);
}

__global__ void take_amax_kernel(Fp8TensorState* state, const uint32_t* amax_bits, const Fp8Rule* rule) {
    if (threadIdx.x == 0 && blockIdx.x == 0) fp8_take_amax(*state, *amax_bits, *rule);
}

__device__ __forceinline__ void merge_amax(uint32_t local, uint32_t* amax_bits) {
    const uint32_t warp_max = __reduce_max_sync(0xffffffffu, local);
    if ((threadIdx.x & 31) == 0 && warp_max != 0) atomicMax(amax_bits, warp_max);
}

template <DType T>
__global__ void amax_kernel(const void* x, int64_t n, uint32_t* amax_bits) {
    uint32_t local = 0;
    for (int64_t i = launch::global_thread(); i < n; i += launch::grid_threads()) {
        const uint32_t a = bits_of(load_value<T>(x, i)) & 0x7fffffffu;
        local = a > local ? a : local;
    }
    merge_amax(local, amax_bits);
}

template <DType T, Fp8Element kElement>
__global__ void quantize_kernel(const void* x, int64_t rows, int64_t cols, const Fp8TensorState* state,
                                Fp8Outputs out) {
    __shared__ uint8_t tile[kTile][kTile + 1];
    const float scale = state->step_scale;
    const int64_t col_tiles = (cols + kTile - 1) / kTile;
    const int64_t tiles = col_tiles * ((rows + kTile - 1) / kTile);
    uint32_t local = 0;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t row0 = (t / col_tiles) * kTile, col0 = (t % col_tiles) * kTile;
        const int64_t c = col0 + threadIdx.x;
        for (int r = threadIdx.y; r < kTile; r += kTileRows) {
            const int64_t row = row0 + r;
            if (row >= rows || c >= cols) continue;
            const int64_t i = row * cols + c;
            const float v = load_value<T>(x, i);
            const uint32_t a = bits_of(v) & 0x7fffffffu;
            local = a > local ? a : local;
            const uint8_t q = fp8_encode<kElement>(mul_rn(v, scale));
            if (out.bytes) out.bytes[i] = q;
            if (out.values) out.values[i] = bf16_bits_from_float(fp8_decode<kElement>(q));
            tile[r][threadIdx.x] = q;
        }
        if (!out.bytes_t) continue;
        __syncthreads();
        // Transposed: row (col0 + r) of the [cols, rows] copy, its columns row0 + threadIdx.x.
        const int64_t tr = row0 + threadIdx.x;
        for (int r = threadIdx.y; r < kTile; r += kTileRows) {
            const int64_t tc = col0 + r;
            if (tc < cols && tr < rows) out.bytes_t[tc * rows + tr] = tile[threadIdx.x][r];
        }
        __syncthreads();  // the tile is rewritten by the next iteration
    }
    if (out.amax_bits) merge_amax(local, out.amax_bits);
}

template <DType TOut>
__global__ void finish_kernel(const float* acc, int64_t rows, int64_t cols, const Fp8TensorState* a,
                              const Fp8TensorState* b, const float* bias, bool relu, void* out) {
    const float ia = a ? a->step_inverse : 1.0f;
    const float ib = b ? b->step_inverse : 1.0f;
    const int64_t n = rows * cols;
    for (int64_t i = launch::global_thread(); i < n; i += launch::grid_threads()) {
        float v = acc[i];
        if (a) v = mul_rn(v, ia);
        if (b) v = mul_rn(v, ib);
        if (bias) v = add_rn(v, bias[i % cols]);
        if (relu) v = ReluActivation::forward(v, 0.0f);
        store_value<TOut>(out, i, v);
    }
}

}  // namespace

void fp8_begin_steps(Fp8TensorState* states, const float* rings, int count, const Fp8Rule* rule,
                     cudaStream_t stream) {
    if (count <= 0) return;
    begin_steps_kernel<<<count, kBeginThreads, 0, stream>>>(states, rings, rule);
    launch::check_launch("fp8_begin_steps");
}

void fp8_end_steps(Fp8TensorState* states, float* rings, int count, const Fp8Rule* rule,
                   cudaStream_t stream) {
    if (count <= 0) return;
    end_steps_kernel<<<(count + 127) / 128, 128, 0, stream>>>(states, rings, count, rule);
    launch::check_launch("fp8_end_steps");
}

void fp8_amax(DType t, const void* x, int64_t n, uint32_t* amax_bits, cudaStream_t stream) {
    if (n <= 0) return;
    launch::with_dtype(t, [&](auto dtype) {
        amax_kernel<decltype(dtype)::value>
            <<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(x, n, amax_bits);
    });
    launch::check_launch("fp8_amax");
}

void fp8_take_amax(Fp8TensorState* state, const uint32_t* amax_bits, const Fp8Rule* rule,
                   cudaStream_t stream) {
    take_amax_kernel<<<1, 32, 0, stream>>>(state, amax_bits, rule);
    launch::check_launch("fp8_take_amax");
}

void fp8_quantize(DType t, const void* x, int64_t rows, int64_t cols, const Fp8TensorState* state,
                  Fp8Element element, const Fp8Outputs& out, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const int64_t tiles = ((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
    const int blocks = static_cast<int>(tiles < 4 * launch::kMaxBlocks ? tiles : 4 * launch::kMaxBlocks);
    const dim3 threads(kTile, kTileRows);
    launch::with_dtype(t, [&](auto dtype) {
        constexpr DType kIn = decltype(dtype)::value;
        if (element == Fp8Element::E4M3)
            quantize_kernel<kIn, Fp8Element::E4M3><<<blocks, threads, 0, stream>>>(x, rows, cols, state, out);
        else
            quantize_kernel<kIn, Fp8Element::E5M2><<<blocks, threads, 0, stream>>>(x, rows, cols, state, out);
    });
    launch::check_launch("fp8_quantize");
}

void fp8_finish(const float* acc, int64_t rows, int64_t cols, const Fp8TensorState* a,
                const Fp8TensorState* b, const float* bias, bool relu, DType t_out, void* out,
                cudaStream_t stream) {
    const int64_t n = rows * cols;
    if (n <= 0) return;
    launch::with_dtype(t_out, [&](auto dtype) {
        finish_kernel<decltype(dtype)::value>
            <<<launch::blocks_for(n), launch::kThreads, 0, stream>>>(acc, rows, cols, a, b, bias, relu, out);
    });
    launch::check_launch("fp8_finish");
}

}  // namespace mpwb::cuda::kernels
