// The elementwise kernels of kernels.h and their launchers: dtype conversion, in-place format
// rounding, row and channel bias adds with their FP32 gradients, activations forward and
// backward, the dropout multiply and mask, and the on-device batch gather. The math per element
// is element_math.h's and the activation table's, so a kernel's result is the CPU reference's up
// to the transcendental functions; the bias gradients are FP32 sums in a fixed order per launch
// shape, so they are reproducible run to run.
#include <cuda_runtime.h>

#include "core/backend/cuda/element_math.h"
#include "core/backend/cuda/kernel_launch.cuh"
#include "core/backend/cuda/kernels.h"

namespace mpwb::cuda::kernels {

using launch::blocks_for;
using launch::check_launch;
using launch::global_thread;
using launch::grid_threads;
using launch::kThreads;
using launch::with_dtype;

namespace {

template <DType From, DType To>
__global__ void convert_kernel(const void* in, void* out, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads())
        store_value<To>(out, i, load_value<From>(in, i));
}

template <Format F>
__global__ void round_f32_kernel(float* x, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads()) x[i] = round_to_device_format(x[i], F);
}

// With Relu the stored sum goes through ReLU too (rounding and ReLU commute, so this is the
// CPU's bias add, rounding, then ReLU).
template <DType T, bool Relu>
__global__ void add_bias_rows_kernel(void* y, const float* bias, int64_t rows, int64_t cols) {
    const int64_t n = rows * cols;
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        const float v = load_value<T>(y, i) + bias[i % cols];
        store_value<T>(y, i, Relu ? ReluActivation::forward(v, 0.0f) : v);
    }
}

template <DType T>
__global__ void add_bias_channels_kernel(void* y, const float* bias, int64_t n, int64_t c, int64_t hw) {
    const int64_t total = n * c * hw;
    for (int64_t i = global_thread(); i < total; i += grid_threads())
        store_value<T>(y, i, load_value<T>(y, i) + bias[(i / hw) % c]);
}

// Column sums of a row-major rows x cols matrix in two passes, for parallelism without atomics
// (so the sums repeat bit for bit): the rows are cut into chunks of kRowsPerChunk; a 32 x
// kRowLanes block owns 32 adjacent columns of one chunk (coalesced reads along a row), its
// thread rows stride down the chunk, and shared memory adds their partials. With one chunk the
// block writes db; otherwise it writes partials[chunk, col] and finish_column_sums_kernel adds
// the chunks of each column in order.
constexpr int kColumnLanes = 32;
constexpr int kRowLanes = 8;
constexpr int64_t kRowsPerChunk = 64;

int64_t column_sum_chunks(int64_t rows) {
    return rows > kRowsPerChunk ? (rows + kRowsPerChunk - 1) / kRowsPerChunk : 1;
}

template <DType T>
__global__ void bias_grad_rows_kernel(const void* dy, float* out, int64_t rows, int64_t cols) {
    __shared__ float partial[kRowLanes][kColumnLanes + 1];  // +1: no bank conflicts on the sum
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnLanes + threadIdx.x;
    const int64_t first = static_cast<int64_t>(blockIdx.y) * kRowsPerChunk;
    const int64_t last = rows < first + kRowsPerChunk ? rows : first + kRowsPerChunk;
    float sum = 0.0f;
    if (col < cols)
        for (int64_t r = first + threadIdx.y; r < last; r += kRowLanes)
            sum += load_value<T>(dy, r * cols + col);
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
        float total = 0.0f;
        for (int k = 0; k < kRowLanes; ++k) total += partial[k][threadIdx.x];
        out[static_cast<int64_t>(blockIdx.y) * cols + col] = total;
    }
}

// One warp per column: the lanes add strided chunks, then the warp's fixed-order sum.
__global__ void finish_column_sums_kernel(const float* partials, float* db, int64_t chunks, int64_t cols) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int64_t warps = grid_threads() / 32;
    for (int64_t col = global_thread() / 32; col < cols; col += warps) {
        float total = 0.0f;
        for (int64_t c = lane; c < chunks; c += 32) total += partials[c * cols + col];
        total = launch::warp_sum(total);
        if (lane == 0) db[col] = total;
    }
}

// One block per channel: its threads stride over the n * hw values of the channel; FP32
// partials per thread, the block's sum in FP64 (the CPU adds its per-plane FP32 partials in
// FP64 too).
template <DType T>
__global__ void bias_grad_channels_kernel(const void* dy, float* db, int64_t n, int64_t c, int64_t hw) {
    __shared__ double scratch[32];
    const int64_t ch = blockIdx.x;
    const int64_t per_channel = n * hw;
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
        const int64_t s = j / hw, i = j - s * hw;
        sum += load_value<T>(dy, (s * c + ch) * hw + i);
    }
    const double total = launch::block_sum(static_cast<double>(sum), scratch);
    if (threadIdx.x == 0) db[ch] = static_cast<float>(total);
}

// A: an entry of the activation table.
template <DType T, class A>
__global__ void activation_forward_kernel(float slope, const void* x, void* y, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads())
        store_value<T>(y, i, A::forward(load_value<T>(x, i), slope));
}

// Loads only the one of x and y the entry's backward reads; the other may be null.
template <DType T, class A>
__global__ void activation_backward_kernel(float slope, const void* x, const void* y, const void* dy,
                                           void* dx, int64_t n) {
    constexpr bool from_y = A::backward_reads_output;
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        const float xv = from_y ? 0.0f : load_value<T>(x, i);
        const float yv = from_y ? load_value<T>(y, i) : 0.0f;
        store_value<T>(dx, i, A::backward(xv, yv, load_value<T>(dy, i), slope));
    }
}

template <DType T>
__global__ void multiply_kernel(const void* x, const float* mask, void* y, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads())
        store_value<T>(y, i, load_value<T>(x, i) * mask[i]);
}

__global__ void dropout_mask_kernel(float p, uint64_t seed, const int64_t* step, float* mask, int64_t n) {
    const uint64_t key = dropout_key(seed, *step);
    for (int64_t i = global_thread(); i < n; i += grid_threads()) mask[i] = dropout_mask_value(p, key, i);
}

template <DType T>
__global__ void gather_batch_kernel(const float* samples, int64_t sample_width, const float* labels,
                                    int64_t label_width, const int32_t* order, const int64_t* offset,
                                    int64_t batch, void* x_out, float* labels_out) {
    const int64_t first = *offset;
    const int64_t x_count = batch * sample_width, label_count = batch * label_width;
    for (int64_t i = global_thread(); i < x_count; i += grid_threads()) {
        const int64_t row = i / sample_width, col = i - row * sample_width;
        const int64_t sample = order[first + row];
        store_value<T>(x_out, i, samples[sample * sample_width + col]);
    }
    for (int64_t i = global_thread(); i < label_count; i += grid_threads()) {
        const int64_t row = i / label_width, col = i - row * label_width;
        labels_out[i] = labels[static_cast<int64_t>(order[first + row]) * label_width + col];
    }
}

}  // namespace

void convert(DType from, const void* in, DType to, void* out, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    if (from == to) {
        if (in != out)
            check_cuda(cudaMemcpyAsync(out, in, static_cast<size_t>(n) * dtype_size(from),
                                       cudaMemcpyDeviceToDevice, stream),
                       "convert: cudaMemcpyAsync");
        return;
    }
    with_dtype(from, [&](auto from_tag) {
        constexpr DType From = decltype(from_tag)::value;
        with_dtype(to, [&](auto to_tag) {
            constexpr DType To = decltype(to_tag)::value;
            convert_kernel<From, To><<<blocks_for(n), kThreads, 0, stream>>>(in, out, n);
        });
    });
    check_launch("convert");
}

void round_f32(Format format, float* x, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    switch (format) {
        case Format::FP32:
            return;
        case Format::TF32:
            round_f32_kernel<Format::TF32><<<blocks_for(n), kThreads, 0, stream>>>(x, n);
            break;
        case Format::FP16:
            round_f32_kernel<Format::FP16><<<blocks_for(n), kThreads, 0, stream>>>(x, n);
            break;
        case Format::BF16:
            round_f32_kernel<Format::BF16><<<blocks_for(n), kThreads, 0, stream>>>(x, n);
            break;
        default:
            throw ConfigError("round_f32: the CUDA backend does not round to " + format_name(format));
    }
    check_launch("round_f32");
}

void add_bias_rows(DType t, void* y, const float* bias, int64_t rows, int64_t cols, bool relu,
                   cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        if (relu)
            add_bias_rows_kernel<T, true>
                <<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, bias, rows, cols);
        else
            add_bias_rows_kernel<T, false>
                <<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, bias, rows, cols);
    });
    check_launch("add_bias_rows");
}

size_t bias_grad_rows_scratch_bytes(int64_t rows, int64_t cols) {
    const int64_t chunks = column_sum_chunks(rows);
    return chunks > 1 ? static_cast<size_t>(chunks * cols) * sizeof(float) : 0;
}

void bias_grad_rows(DType t, const void* dy, float* db, int64_t rows, int64_t cols, void* scratch,
                    cudaStream_t stream) {
    if (cols <= 0) return;  // rows == 0 still writes db = 0, as the CPU backend does
    const int64_t chunks = column_sum_chunks(rows);
    if (chunks > 65535) throw ConfigError("bias_grad_rows: too many rows for one grid");
    const dim3 block(kColumnLanes, kRowLanes);
    const dim3 grid(static_cast<unsigned>((cols + kColumnLanes - 1) / kColumnLanes),
                    static_cast<unsigned>(chunks));
    float* out = chunks > 1 ? static_cast<float*>(scratch) : db;
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        bias_grad_rows_kernel<T><<<grid, block, 0, stream>>>(dy, out, rows, cols);
    });
    check_launch("bias_grad_rows");
    if (chunks > 1) {
        finish_column_sums_kernel<<<blocks_for(cols * 32), kThreads, 0, stream>>>(out, db, chunks, cols);
        check_launch("finish_column_sums");
    }
}

void add_bias_channels(DType t, void* y, const float* bias, int64_t n, int64_t c, int64_t hw,
                       cudaStream_t stream) {
    if (n <= 0 || c <= 0 || hw <= 0) return;
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        add_bias_channels_kernel<T><<<blocks_for(n * c * hw), kThreads, 0, stream>>>(y, bias, n, c, hw);
    });
    check_launch("add_bias_channels");
}

void bias_grad_channels(DType t, const void* dy, float* db, int64_t n, int64_t c, int64_t hw,
                        cudaStream_t stream) {
    if (c <= 0) return;  // n * hw == 0 still writes db = 0
    if (c > 0x7fffffff) throw ConfigError("bias_grad_channels: too many channels for one grid");
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        bias_grad_channels_kernel<T><<<static_cast<unsigned>(c), kThreads, 0, stream>>>(dy, db, n, c, hw);
    });
    check_launch("bias_grad_channels");
}

void activation_forward(Activation kind, float slope, DType t, const void* x, void* y, int64_t n,
                        cudaStream_t stream) {
    if (n <= 0) return;
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        visit_activation(kind, [&](auto entry) {
            using A = decltype(entry);
            activation_forward_kernel<T, A><<<blocks_for(n), kThreads, 0, stream>>>(slope, x, y, n);
        });
    });
    check_launch("activation_forward");
}

void activation_backward(Activation kind, float slope, DType t, const void* x, const void* y, const void* dy,
                         void* dx, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        visit_activation(kind, [&](auto entry) {
            using A = decltype(entry);
            activation_backward_kernel<T, A><<<blocks_for(n), kThreads, 0, stream>>>(slope, x, y, dy, dx, n);
        });
    });
    check_launch("activation_backward");
}

void multiply(DType t, const void* x, const float* mask, void* y, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        multiply_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, mask, y, n);
    });
    check_launch("multiply");
}

void dropout_mask(float p, uint64_t seed, const int64_t* step, float* mask, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    if (!(p >= 0.0f && p < 1.0f))
        throw ConfigError("dropout_mask: drop probability " + std::to_string(p) + " outside [0, 1)");
    dropout_mask_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, seed, step, mask, n);
    check_launch("dropout_mask");
}

void gather_batch(const float* samples, int64_t sample_width, const float* labels, int64_t label_width,
                  const int32_t* order, const int64_t* offset, int64_t batch, DType x_dtype, void* x_out,
                  float* labels_out, cudaStream_t stream) {
    if (batch <= 0 || (sample_width <= 0 && label_width <= 0)) return;
    // A zero width leaves its loop empty; the divisions by it are never reached.
    const int64_t widest = sample_width > label_width ? sample_width : label_width;
    with_dtype(x_dtype, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        gather_batch_kernel<T><<<blocks_for(batch * widest), kThreads, 0, stream>>>(
            samples, sample_width, labels, label_width, order, offset, batch, x_out, labels_out);
    });
    check_launch("gather_batch");
}

}  // namespace mpwb::cuda::kernels
