// CPU backend implementation. Loops are written so each output element is produced by exactly
// one chunk of parallel_for, which keeps results independent of the thread count.
#include "core/backend/cpu/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <thread>

#include "core/backend/cpu/cpu_conv_kernels.h"
#include "core/common/checked_arith.h"
#include "core/common/error.h"
#include "core/common/parallel.h"

namespace mpwb {
namespace {

constexpr int64_t kGrain = 1 << 14;
// gemm() cuts C into blocks of this many rows or columns (conv2d_forward cuts the same way).
constexpr int64_t kGemmBlock = 128;
// Elementwise loops capture their pointers by value: captured by reference, every iteration
// reloads them (a store through the output might change them), and the loop stays scalar.

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(colon + 2);
        }
    }
    return "CPU";
}

// Rounds a matrix region into scratch when the format asks for it; returns what to multiply.
const float* rounded_operand(Format f, const float* src, int64_t count, std::vector<float>& scratch) {
    if (f == Format::FP32) return src;
    scratch.resize(static_cast<size_t>(count));
    round_to_format(f, src, scratch.data(), static_cast<size_t>(count));
    return scratch.data();
}

// BLAS takes its sizes as int: a larger one cast down wraps to a negative or a small int, which
// OpenBLAS answers with "parameter number 13 had an illegal value" (forever, in a training loop)
// or with writes past the end of C. Networks are refused long before (NetworkLimits); this is
// the backend's own guard for any caller.
void check_blas_sizes(std::initializer_list<std::pair<const char*, int64_t>> sizes) {
    constexpr int64_t kMax = std::numeric_limits<blasint>::max();
    for (const auto& [name, value] : sizes)
        if (value < 0 || value > kMax)
            throw DeviceError("GEMM size " + std::string(name) + " = " + size_text(value) +
                              " is outside what BLAS accepts (0 to " + size_text(kMax) + ")");
}

// Samples per im2col chunk, keeping the column buffer near 32 MB.
int64_t conv_chunk(const ConvGeometry& g) {
    const int64_t per_sample = g.in_channels * g.kernel_h * g.kernel_w * g.out_h() * g.out_w();
    return std::clamp<int64_t>((int64_t{8} << 20) / std::max<int64_t>(per_sample, 1), 1, g.batch);
}

// OpenBLAS's threaded GEMM blocks the K loop differently for different thread counts, so its
// results change in the last bits with the thread count. C is cut instead into blocks that depend
// on the shape only (rows when m >= n, else columns, kGemmBlock at a time), each computed by
// single-threaded OpenBLAS: every block is summed the same way whatever the thread count. The
// operands are already rounded. A block's product depends on the block's width too (OpenBLAS's
// Haswell kernels sum a narrower call differently), so a caller that schedules blocks itself
// runs exactly these.
struct BlockedGemm {
    bool trans_a, trans_b;
    int64_t m, n, k;
    float alpha;
    const float* a;
    int64_t lda;
    const float* b;
    int64_t ldb;
    float beta;

    bool by_rows() const { return m >= n; }
    int64_t blocks() const { return ((by_rows() ? m : n) + kGemmBlock - 1) / kGemmBlock; }
    int64_t block_start(int64_t blk) const { return blk * kGemmBlock; }
    int64_t block_size(int64_t blk) const {
        return std::min(kGemmBlock, (by_rows() ? m : n) - block_start(blk));
    }

    // Block blk of C = alpha op(A) op(B) + beta C, C given at its origin with leading dimension ldc.
    void run_block(int64_t blk, float* c, int64_t ldc) const {
        const int64_t s = block_start(blk);
        run_block_into(blk, by_rows() ? c + s * ldc : c + s, ldc);
    }
    // The same, with C given at the block's own first element (a buffer holding just the block).
    void run_block_into(int64_t blk, float* block_c, int64_t ldc) const {
        const int64_t s = block_start(blk), len = block_size(blk);
        const auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
        const bool rows = by_rows();
        const float* block_a = !rows ? a : trans_a ? a + s : a + s * lda;
        const float* block_b = rows ? b : trans_b ? b + s * ldb : b + s;
        cblas_sgemm(CblasRowMajor, ta, tb, static_cast<blasint>(rows ? len : m),
                    static_cast<blasint>(rows ? n : len), static_cast<blasint>(k), alpha, block_a,
                    static_cast<blasint>(lda), block_b, static_cast<blasint>(ldb), beta, block_c,
                    static_cast<blasint>(ldc));
    }
};

// dw's blocks, then dx in groups of samples whose column product fits in about 2 MB.
void backward_tasks(const ConvGeometry& g, int64_t n0, int64_t nb, const BlockedGemm& dw_product, float* dw,
                    const BlockedGemm& dx_product, float* dx) {
    const int64_t ohw = g.out_h() * g.out_w(), ckk = dx_product.m, width = dx_product.n;
    const int64_t in_chw = g.in_channels * g.in_h * g.in_w;
    const int64_t group = std::clamp<int64_t>((int64_t{512} << 10) / std::max<int64_t>(ckk * ohw, 1), 1, nb);
    const int64_t groups = (nb + group - 1) / group, dw_blocks = dw_product.blocks();
    parallel_for(dw_blocks + groups, 1, [&](int64_t t0, int64_t t1) {
        thread_local std::vector<float> product;
        for (int64_t t = t0; t < t1; ++t) {
            if (t < dw_blocks) {
                dw_product.run_block(t, dw, ckk);
                continue;
            }
            const int64_t s0 = (t - dw_blocks) * group, s1 = std::min(nb, s0 + group);
            const int64_t first_block = s0 * ohw / kGemmBlock,
                          end_block = (s1 * ohw + kGemmBlock - 1) / kGemmBlock;
            const int64_t origin = first_block * kGemmBlock;
            const int64_t span = std::min(end_block * kGemmBlock, width) - origin;
            product.resize(static_cast<size_t>(ckk * span));
            for (int64_t blk = first_block; blk < end_block; ++blk)
                dx_product.run_block_into(blk, product.data() + (dx_product.block_start(blk) - origin), span);
            for (int64_t s = s0; s < s1; ++s)
                col2im_sample(g, product.data() + (s * ohw - origin), span, dx + (n0 + s) * in_chw);
        }
    });
}

}  // namespace

CpuBackend::CpuBackend() { sync_blas_threads(); }

// OpenBLAS runs single-threaded: gemm() spreads fixed blocks over the parallel_for pool itself.
void CpuBackend::sync_blas_threads() {
    if (blas_threads_ != 1) {
        blas_threads_ = 1;
        openblas_set_num_threads(1);
    }
}

std::string blas_core_name() { return openblas_get_corename(); }

std::string CpuBackend::device_name() const {
    return cpu_model_name() + " (" + std::to_string(thread_count()) + " threads, OpenBLAS " +
           blas_core_name() + ")";
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                      int64_t ldc, Format operand_format) {
    check_blas_sizes({{"m", m}, {"n", n}, {"k", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}});
    sync_blas_threads();
    // A region of rows x cols with leading dimension ld spans (rows - 1) * ld + cols elements;
    // rows * ld would read past the end of an operand that is a sub-matrix of a larger array.
    auto span = [](int64_t rows, int64_t cols, int64_t ld) { return rows > 0 ? (rows - 1) * ld + cols : 0; };
    const int64_t a_count = trans_a ? span(k, m, lda) : span(m, k, lda);
    const int64_t b_count = trans_b ? span(n, k, ldb) : span(k, n, ldb);
    const BlockedGemm product{trans_a,
                              trans_b,
                              m,
                              n,
                              k,
                              alpha,
                              rounded_operand(operand_format, a, a_count, round_a_),
                              lda,
                              rounded_operand(operand_format, b, b_count, round_b_),
                              ldb,
                              beta};
    // Small products stay on the calling thread (the blocks are the same either way).
    const int64_t grain =
        saturating_mul(saturating_mul(m, n), k) < (int64_t{1} << 18) ? product.blocks() + 1 : 1;
    parallel_for(product.blocks(), grain, [&](int64_t b0, int64_t b1) {
        for (int64_t blk = b0; blk < b1; ++blk) product.run_block(blk, c, ldc);
    });
}

// The operands are rounded once as whole batches; then each product runs on one thread in
// single-threaded OpenBLAS, so a C_i does not depend on which thread ran it.
void CpuBackend::gemm_batched(const GemmBatch& g, const float* a, const float* b, float* c,
                              Format operand_format) {
    if (g.count <= 0) return;
    check_blas_sizes({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"lda", g.lda}, {"ldb", g.ldb}, {"ldc", g.ldc}});
    sync_blas_threads();
    auto span = [](int64_t rows, int64_t cols, int64_t ld) { return rows > 0 ? (rows - 1) * ld + cols : 0; };
    const int64_t a_count =
        (g.count - 1) * g.stride_a + (g.trans_a ? span(g.k, g.m, g.lda) : span(g.m, g.k, g.lda));
    const int64_t b_count =
        (g.count - 1) * g.stride_b + (g.trans_b ? span(g.n, g.k, g.ldb) : span(g.k, g.n, g.ldb));
    const float* ra = rounded_operand(operand_format, a, a_count, round_a_);
    const float* rb = rounded_operand(operand_format, b, b_count, round_b_);
    const auto ta = g.trans_a ? CblasTrans : CblasNoTrans, tb = g.trans_b ? CblasTrans : CblasNoTrans;
    const int64_t work = std::max<int64_t>(1, saturating_mul(saturating_mul(g.m, g.n), g.k));
    parallel_for(g.count, std::max<int64_t>(1, (int64_t{1} << 16) / work), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
            cblas_sgemm(CblasRowMajor, ta, tb, static_cast<blasint>(g.m), static_cast<blasint>(g.n),
                        static_cast<blasint>(g.k), 1.0f, ra + i * g.stride_a, static_cast<blasint>(g.lda),
                        rb + i * g.stride_b, static_cast<blasint>(g.ldb), 0.0f, c + i * g.stride_c,
                        static_cast<blasint>(g.ldc));
    });
}

void CpuBackend::round(Format format, const float* in, float* out, int64_t n) {
    if (format == Format::FP32) {
        if (in != out) std::copy(in, in + n, out);
        return;
    }
    round_to_format(format, in, out, static_cast<size_t>(n));
}

void CpuBackend::scale(float factor, float* x, int64_t n) {
    parallel_for(n, kGrain, [=](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) x[i] *= factor;
    });
}

void CpuBackend::add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) {
    parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1)),
                 [=](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) {
                         float* row = y + r * cols;
                         for (int64_t j = 0; j < cols; ++j) row[j] += bias[j];
                     }
                 });
}

void CpuBackend::bias_grad_rows(const float* dy, float* db, int64_t rows, int64_t cols) {
    parallel_for(cols, 64, [&](int64_t c0, int64_t c1) {
        for (int64_t j = c0; j < c1; ++j) db[j] = 0.0f;
        for (int64_t r = 0; r < rows; ++r) {
            const float* row = dy + r * cols;
            for (int64_t j = c0; j < c1; ++j) db[j] += row[j];
        }
    });
}

void CpuBackend::add_bias_channels(float* y, const float* bias, int64_t n, int64_t c, int64_t hw) {
    parallel_for(n * c, 1, [=](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const float b = bias[p % c];
            float* plane = y + p * hw;
            for (int64_t i = 0; i < hw; ++i) plane[i] += b;
        }
    });
}

void CpuBackend::bias_grad_channels(const float* dy, float* db, int64_t n, int64_t c, int64_t hw) {
    parallel_for(c, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t ch = c0; ch < c1; ++ch) {
            double sum = 0;
            for (int64_t s = 0; s < n; ++s) {
                const float* plane = dy + (s * c + ch) * hw;
                float partial = 0.0f;
                for (int64_t i = 0; i < hw; ++i) partial += plane[i];
                sum += partial;
            }
            db[ch] = static_cast<float>(sum);
        }
    });
}

// One loop per activation (visit_activation dispatches once per tensor): the table's math inlines
// into it, so the simple activations vectorise.
void CpuBackend::activation_forward(Activation kind, float slope, const float* x, float* y, int64_t n) {
    visit_activation(kind, [=](auto entry) {
        using A = decltype(entry);
        parallel_for(n, kGrain, [=](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) y[i] = A::forward(x[i], slope);
        });
    });
}

void CpuBackend::activation_backward(Activation kind, float slope, const float* x, const float* y,
                                     const float* dy, float* dx, int64_t n) {
    visit_activation(kind, [=](auto entry) {
        using A = decltype(entry);
        parallel_for(n, kGrain, [=](int64_t i0, int64_t i1) {
            // dy is loaded unconditionally (it is an argument), so ReLU's select vectorises.
            for (int64_t i = i0; i < i1; ++i)
                dx[i] = A::backward(A::backward_reads_output ? 0.0f : x[i],
                                    A::backward_reads_output ? y[i] : 0.0f, dy[i], slope);
        });
    });
}

// The product W · columns is cut into the column blocks gemm() cuts (kGemmBlock wide), so every
// output is summed exactly as a whole-chunk gemm() sums it (OpenBLAS's sums depend on the shape of
// the call); but each block's columns are gathered just before its product, into a buffer that
// stays in cache, and its outputs go straight to NCHW with the bias, instead of a chunk-sized
// column matrix and product making two round trips through memory.
void CpuBackend::conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                                float* y, Format operand_format) {
    const int64_t ohw = g.out_h() * g.out_w();
    const int64_t ckk = g.in_channels * g.kernel_h * g.kernel_w, chw = g.in_channels * g.in_h * g.in_w;
    const int64_t chunk = conv_chunk(g);
    check_blas_sizes({{"m", g.out_channels}, {"n", kGemmBlock}, {"k", ckk}});
    sync_blas_threads();
    const float* xr = rounded_operand(operand_format, x, g.batch * chw, round_a_);
    const float* wr = rounded_operand(operand_format, w, g.out_channels * ckk, round_b_);
    for (int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
        const int64_t width = std::min(chunk, g.batch - n0) * ohw;
        if (g.out_channels >= width) {  // gemm() cuts rows then
            conv2d_chunk_by_rows(g, xr, wr, bias, n0, std::min(chunk, g.batch - n0), y);
            continue;
        }
        parallel_for((width + kGemmBlock - 1) / kGemmBlock, 1, [&](int64_t b0, int64_t b1) {
            thread_local std::vector<float> columns, product;
            columns.resize(static_cast<size_t>(ckk * kGemmBlock));
            product.resize(static_cast<size_t>(g.out_channels * kGemmBlock));
            for (int64_t blk = b0; blk < b1; ++blk) {
                const int64_t first = blk * kGemmBlock, count = std::min(kGemmBlock, width - first);
                im2col_columns(g, xr, n0, first, count, columns.data());
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(g.out_channels),
                            static_cast<blasint>(count), static_cast<blasint>(ckk), 1.0f, wr,
                            static_cast<blasint>(ckk), columns.data(), static_cast<blasint>(count), 0.0f,
                            product.data(), static_cast<blasint>(count));
                scatter_block(g, product.data(), bias, n0, first, count, y);
            }
        });
    }
}

// [out_c x count] block of outputs (columns first.. of the chunk from n0) to NCHW, plus the bias.
void CpuBackend::scatter_block(const ConvGeometry& g, const float* product, const float* bias, int64_t n0,
                               int64_t first, int64_t count, float* y) {
    const int64_t ohw = g.out_h() * g.out_w();
    for (int64_t j = first; j < first + count;) {
        const int64_t s = j / ohw, i0 = j % ohw, run = std::min(ohw - i0, first + count - j);
        for (int64_t oc = 0; oc < g.out_channels; ++oc) {
            const float b = bias ? bias[oc] : 0.0f;
            const float* src = product + oc * count + (j - first);
            float* dst = y + ((n0 + s) * g.out_channels + oc) * ohw + i0;
            for (int64_t i = 0; i < run; ++i) dst[i] = src[i] + b;
        }
        j += run;
    }
}

// A chunk with fewer outputs than channels (tiny images, small batches): gemm() cuts rows then, so
// the chunk's product runs as one gemm() (operands already rounded) and is rearranged after.
void CpuBackend::conv2d_chunk_by_rows(const ConvGeometry& g, const float* x, const float* w,
                                      const float* bias, int64_t n0, int64_t nb, float* y) {
    const int64_t ohw = g.out_h() * g.out_w();
    const int64_t ckk = g.in_channels * g.kernel_h * g.kernel_w;
    columns_.resize(static_cast<size_t>(ckk * nb * ohw));
    gathered_.resize(static_cast<size_t>(g.out_channels * nb * ohw));
    im2col(g, x, n0, nb, columns_.data());
    gemm(false, false, g.out_channels, nb * ohw, ckk, 1.0f, w, ckk, columns_.data(), nb * ohw, 0.0f,
         gathered_.data(), nb * ohw, Format::FP32);
    scatter_block(g, gathered_.data(), bias, n0, 0, nb * ohw, y);
}

// dw = dY · columnsᵀ and dx = col2im(Wᵀ · dY), both cut into gemm()'s blocks, so every output is
// summed as before. dx's product is not stored whole: each task takes a group of samples,
// computes the blocks that cover their columns into a buffer that stays in cache and adds them
// back into dx at once (a block shared by two groups is computed by both, identically). dw's few
// blocks and dx's groups run as one list of tasks, so a thread whose dw block is narrow (a
// 144-wide dw is cut 128 + 16) goes on with dx instead of waiting.
void CpuBackend::conv2d_backward(const ConvGeometry& g, const float* x, const float* w, const float* dy,
                                 float* dx, float* dw, float* db, Format operand_format) {
    const int64_t ohw = g.out_h() * g.out_w();
    const int64_t ckk = g.in_channels * g.kernel_h * g.kernel_w;
    const int64_t chunk = conv_chunk(g);
    check_blas_sizes({{"out_c", g.out_channels}, {"ckk", ckk}, {"width", chunk * ohw}});
    sync_blas_threads();
    if (db) bias_grad_channels(dy, db, g.batch, g.out_channels, ohw);
    const float* wr =
        dx ? rounded_operand(operand_format, w, g.out_channels * ckk, weights_rounded_) : nullptr;
    for (int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
        const int64_t nb = std::min(chunk, g.batch - n0), width = nb * ohw;
        columns_.resize(static_cast<size_t>(ckk * width));
        gathered_.resize(static_cast<size_t>(g.out_channels * width));
        // NCHW dy -> [out_c, nb*ohw]
        parallel_for(nb * g.out_channels, 1, [&](int64_t p0, int64_t p1) {
            for (int64_t p = p0; p < p1; ++p) {
                const int64_t s = p / g.out_channels, oc = p % g.out_channels;
                const float* src = dy + ((n0 + s) * g.out_channels + oc) * ohw;
                std::copy(src, src + ohw, gathered_.data() + oc * width + s * ohw);
            }
        });
        im2col(g, x, n0, nb, columns_.data());
        const float* dyr =
            rounded_operand(operand_format, gathered_.data(), g.out_channels * width, round_a_);
        const float* colr = rounded_operand(operand_format, columns_.data(), ckk * width, round_b_);
        const BlockedGemm dw_product{false, true,  g.out_channels,       ckk, width, 1.0f, dyr, width,
                                     colr,  width, n0 == 0 ? 0.0f : 1.0f};
        const BlockedGemm dx_product{true, false, ckk,   width, g.out_channels, 1.0f, wr,
                                     ckk,  dyr,   width, 0.0f};
        if (dx && !dx_product.by_rows()) {
            backward_tasks(g, n0, nb, dw_product, dw, dx_product, dx);
            continue;
        }
        parallel_for(dw_product.blocks(), 1, [&](int64_t b0, int64_t b1) {
            for (int64_t blk = b0; blk < b1; ++blk) dw_product.run_block(blk, dw, ckk);
        });
        if (dx) {  // a product with fewer columns than rows (tiny images, small batches): whole
            parallel_for(dx_product.blocks(), 1, [&](int64_t b0, int64_t b1) {
                for (int64_t blk = b0; blk < b1; ++blk) dx_product.run_block(blk, columns_.data(), width);
            });
            col2im(g, columns_.data(), n0, nb, dx);
        }
    }
}

void CpuBackend::maxpool_forward(const PoolGeometry& g, const float* x, float* y, int32_t* argmax) {
    maxpool_forward_planes(g, x, y, argmax);
}

void CpuBackend::maxpool_backward(const PoolGeometry& g, const float* dy, const int32_t* argmax, float* dx) {
    const int64_t ohw = g.out_h() * g.out_w(), ihw = g.in_h * g.in_w;
    parallel_for(g.batch * g.channels, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            std::fill(dx + p * ihw, dx + (p + 1) * ihw, 0.0f);
            for (int64_t o = p * ohw; o < (p + 1) * ohw; ++o)
                if (argmax[o] >= 0) dx[argmax[o]] += dy[o];
        }
    });
}

void CpuBackend::avgpool_forward(const PoolGeometry& g, const float* x, float* y) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    const float inv = 1.0f / static_cast<float>(g.kernel * g.kernel);
    parallel_for(g.batch * g.channels, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const float* plane = x + p * g.in_h * g.in_w;
            for (int64_t oy = 0; oy < oh; ++oy)
                for (int64_t ox = 0; ox < ow; ++ox) {
                    float sum = 0.0f;
                    for (int64_t ki = 0; ki < g.kernel; ++ki) {
                        const int64_t iy = oy * g.stride - g.padding + ki;
                        if (iy < 0 || iy >= g.in_h) continue;
                        for (int64_t kj = 0; kj < g.kernel; ++kj) {
                            const int64_t ix = ox * g.stride - g.padding + kj;
                            if (ix >= 0 && ix < g.in_w) sum += plane[iy * g.in_w + ix];
                        }
                    }
                    y[p * oh * ow + oy * ow + ox] = sum * inv;
                }
        }
    });
}

void CpuBackend::avgpool_backward(const PoolGeometry& g, const float* dy, float* dx) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    const float inv = 1.0f / static_cast<float>(g.kernel * g.kernel);
    parallel_for(g.batch * g.channels, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            float* plane = dx + p * g.in_h * g.in_w;
            std::fill(plane, plane + g.in_h * g.in_w, 0.0f);
            for (int64_t oy = 0; oy < oh; ++oy)
                for (int64_t ox = 0; ox < ow; ++ox) {
                    const float d = dy[p * oh * ow + oy * ow + ox] * inv;
                    for (int64_t ki = 0; ki < g.kernel; ++ki) {
                        const int64_t iy = oy * g.stride - g.padding + ki;
                        if (iy < 0 || iy >= g.in_h) continue;
                        for (int64_t kj = 0; kj < g.kernel; ++kj) {
                            const int64_t ix = ox * g.stride - g.padding + kj;
                            if (ix >= 0 && ix < g.in_w) plane[iy * g.in_w + ix] += d;
                        }
                    }
                }
        }
    });
}

void CpuBackend::batchnorm_forward(const float* x, float* y, const float* gamma, const float* beta,
                                   float* running_mean, float* running_var, float* save_mean,
                                   float* save_invstd, int64_t n, int64_t c, int64_t hw, float momentum,
                                   float eps, bool training) {
    parallel_for(c, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t ch = c0; ch < c1; ++ch) {
            float mean, invstd;
            if (training) {
                double sum = 0, sum_sq = 0;
                for (int64_t s = 0; s < n; ++s) {
                    const float* plane = x + (s * c + ch) * hw;
                    for (int64_t i = 0; i < hw; ++i) {
                        sum += plane[i];
                        sum_sq += static_cast<double>(plane[i]) * plane[i];
                    }
                }
                const double count = static_cast<double>(n * hw);
                const double m = sum / count;
                const double var = std::max(0.0, sum_sq / count - m * m);
                mean = static_cast<float>(m);
                invstd = static_cast<float>(1.0 / std::sqrt(var + eps));
                save_mean[ch] = mean;
                save_invstd[ch] = invstd;
                const double unbiased = count > 1 ? var * count / (count - 1) : var;
                running_mean[ch] = (1 - momentum) * running_mean[ch] + momentum * mean;
                running_var[ch] = (1 - momentum) * running_var[ch] + momentum * static_cast<float>(unbiased);
            } else {
                mean = running_mean[ch];
                invstd = 1.0f / std::sqrt(running_var[ch] + eps);
            }
            const float a = gamma[ch] * invstd, b = beta[ch] - mean * a;
            for (int64_t s = 0; s < n; ++s) {
                const float* in = x + (s * c + ch) * hw;
                float* out = y + (s * c + ch) * hw;
                for (int64_t i = 0; i < hw; ++i) out[i] = in[i] * a + b;
            }
        }
    });
}

void CpuBackend::batchnorm_backward(const float* x, const float* dy, const float* gamma,
                                    const float* save_mean, const float* save_invstd, float* dx,
                                    float* dgamma, float* dbeta, int64_t n, int64_t c, int64_t hw) {
    parallel_for(c, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t ch = c0; ch < c1; ++ch) {
            const float mean = save_mean[ch], invstd = save_invstd[ch];
            double sum_dy = 0, sum_dy_xhat = 0;
            for (int64_t s = 0; s < n; ++s) {
                const float* in = x + (s * c + ch) * hw;
                const float* d = dy + (s * c + ch) * hw;
                for (int64_t i = 0; i < hw; ++i) {
                    sum_dy += d[i];
                    sum_dy_xhat += static_cast<double>(d[i]) * (in[i] - mean) * invstd;
                }
            }
            dgamma[ch] = static_cast<float>(sum_dy_xhat);
            dbeta[ch] = static_cast<float>(sum_dy);
            if (!dx) continue;
            const double count = static_cast<double>(n * hw);
            const float k = gamma[ch] * invstd;
            const float mean_dy = static_cast<float>(sum_dy / count);
            const float mean_dy_xhat = static_cast<float>(sum_dy_xhat / count);
            for (int64_t s = 0; s < n; ++s) {
                const float* in = x + (s * c + ch) * hw;
                const float* d = dy + (s * c + ch) * hw;
                float* out = dx + (s * c + ch) * hw;
                for (int64_t i = 0; i < hw; ++i) {
                    const float xhat = (in[i] - mean) * invstd;
                    out[i] = k * (d[i] - mean_dy - xhat * mean_dy_xhat);
                }
            }
        }
    });
}

void CpuBackend::multiply(const float* x, const float* mask, float* y, int64_t n) {
    parallel_for(n, kGrain, [=](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) y[i] = x[i] * mask[i];
    });
}

// Without a z-loss the arithmetic is exactly the one it has always been (the golden
// trajectories hold it); the z-loss adds its own terms beside it.
Backend::LossResult CpuBackend::softmax_cross_entropy(const float* logits, const float* labels,
                                                      float* dlogits, int64_t n, int64_t k, float grad_scale,
                                                      float z_loss) {
    std::vector<double> row_loss(static_cast<size_t>(n)), row_z(static_cast<size_t>(n));
    std::vector<uint8_t> row_correct(static_cast<size_t>(n));
    const float g = grad_scale / static_cast<float>(n);
    parallel_for(n, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* z = logits + r * k;
            const auto label = static_cast<int64_t>(labels[r]);
            float zmax = z[0];
            int64_t arg = 0;
            for (int64_t j = 1; j < k; ++j)
                if (z[j] > zmax || std::isnan(z[j])) {
                    zmax = z[j];
                    arg = j;
                }
            float sum = 0.0f;
            for (int64_t j = 0; j < k; ++j) sum += std::exp(z[j] - zmax);
            const float log_sum = std::log(sum);
            row_loss[static_cast<size_t>(r)] = static_cast<double>(log_sum + zmax - z[label]);
            row_correct[static_cast<size_t>(r)] = arg == label;
            const float log_z = log_sum + zmax;
            if (z_loss != 0.0f) row_z[static_cast<size_t>(r)] = static_cast<double>(log_z) * log_z;
            if (dlogits) {
                float* d = dlogits + r * k;
                for (int64_t j = 0; j < k; ++j) {
                    const float p = std::exp(z[j] - zmax - log_sum);
                    d[j] = g * (p - (j == label ? 1.0f : 0.0f));
                }
                if (z_loss != 0.0f) {
                    const float z_factor = g * z_loss * 2.0f * log_z;  // d(log Z)/dz_j is p_j
                    for (int64_t j = 0; j < k; ++j) d[j] += z_factor * std::exp(z[j] - zmax - log_sum);
                }
            }
        }
    });
    LossResult result;
    for (int64_t r = 0; r < n; ++r) {
        result.loss += row_loss[static_cast<size_t>(r)];
        result.correct += row_correct[static_cast<size_t>(r)];
        result.z_term += row_z[static_cast<size_t>(r)];
    }
    result.loss /= static_cast<double>(n);
    result.z_term *= static_cast<double>(z_loss) / static_cast<double>(n);
    return result;
}

Backend::LossResult CpuBackend::mse(const float* pred, const float* target, float* dpred, int64_t n,
                                    int64_t k, float grad_scale) {
    const int64_t count = n * k;
    double sum = 0;
    const float g = 2.0f * grad_scale / static_cast<float>(count);
    for (int64_t i = 0; i < count; ++i) {
        const float diff = pred[i] - target[i];
        sum += static_cast<double>(diff) * diff;
        if (dpred) dpred[i] = g * diff;
    }
    return {sum / static_cast<double>(count), 0};
}

bool CpuBackend::scale_and_check_finite(float factor, float* x, int64_t n) {
    bool finite = true;
    for (int64_t i = 0; i < n; ++i) {
        x[i] *= factor;
        finite &= std::isfinite(x[i]);
    }
    return finite;
}

double CpuBackend::sum_squares(const float* x, int64_t n) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
    return sum;
}

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace mpwb
