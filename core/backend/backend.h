// Backend: the one interface through which layers, losses and the trainer do their math.
// Two implementations: cpu/ (OpenBLAS + threads, reduced formats emulated bit for bit) and
// cuda/ (cuBLASLt, cuDNN, own kernels). Pointers are in the backend's memory space.
// All arithmetic is FP32 with FP32 accumulation, as tensor cores do; reduced precision enters
// only through rounding (gemm operands, and Backend::round where the network stores a value).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/backend/activations.h"  // Activation: the activation table
#include "core/numeric/format.h"

namespace mpwb {

struct ConvGeometry {
    int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0;
    int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;
    int64_t stride = 1, padding = 0;
    int64_t out_h() const { return (in_h + 2 * padding - kernel_h) / stride + 1; }
    int64_t out_w() const { return (in_w + 2 * padding - kernel_w) / stride + 1; }
};

struct PoolGeometry {
    int64_t batch = 0, channels = 0, in_h = 0, in_w = 0;
    int64_t kernel = 2, stride = 2, padding = 0;
    int64_t out_h() const { return (in_h + 2 * padding - kernel) / stride + 1; }
    int64_t out_w() const { return (in_w + 2 * padding - kernel) / stride + 1; }
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;         // "cpu", "cuda"
    virtual std::string device_name() const = 0;  // "AMD EPYC ... (2 threads)", "NVIDIA H100 ..."

    // Row-major C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C. Operands are rounded to
    // `operand_format` first (FP32 leaves them alone); products accumulate in FP32.
    virtual void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                      int64_t ldc, Format operand_format) = 0;

    // A batch of independent products of one shape, C_i = op(A_i) · op(B_i) (alpha 1, beta 0),
    // with A_i = a + i·stride_a (likewise B, C): attention's products per (sample, head). The
    // default runs them one after another through gemm; a backend may run them in parallel.
    // Each C_i is summed the same way whatever the batch size or the thread count.
    struct GemmBatch {
        bool trans_a = false, trans_b = false;
        int64_t m = 0, n = 0, k = 0;
        int64_t lda = 0, ldb = 0, ldc = 0;
        int64_t stride_a = 0, stride_b = 0, stride_c = 0;
        int64_t count = 0;
    };
    virtual void gemm_batched(const GemmBatch& g, const float* a, const float* b, float* c,
                              Format operand_format) {
        for (int64_t i = 0; i < g.count; ++i)
            gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, 1.0f, a + i * g.stride_a, g.lda, b + i * g.stride_b,
                 g.ldb, 0.0f, c + i * g.stride_c, g.ldc, operand_format);
    }

    virtual void round(Format format, const float* in, float* out, int64_t n) = 0;
    virtual void scale(float factor, float* x, int64_t n) = 0;

    // y[r, c] += bias[c] for rows x cols; and its gradient db[c] = sum_r dy[r, c].
    virtual void add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) = 0;
    virtual void bias_grad_rows(const float* dy, float* db, int64_t rows, int64_t cols) = 0;
    // Channel bias for NCHW: y[n, c, :] += bias[c]; db[c] = sum over n and spatial.
    virtual void add_bias_channels(float* y, const float* bias, int64_t n, int64_t c, int64_t hw) = 0;
    virtual void bias_grad_channels(const float* dy, float* db, int64_t n, int64_t c, int64_t hw) = 0;

    virtual void activation_forward(Activation kind, float slope, const float* x, float* y, int64_t n) = 0;
    virtual void activation_backward(Activation kind, float slope, const float* x, const float* y,
                                     const float* dy, float* dx, int64_t n) = 0;

    // Convolution with weights [out_c, in_c, kh, kw]; bias may be null.
    virtual void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                                float* y, Format operand_format) = 0;
    // dx may be null (first layer). dw and db (may be null) are overwritten.
    virtual void conv2d_backward(const ConvGeometry& g, const float* x, const float* w, const float* dy,
                                 float* dx, float* dw, float* db, Format operand_format) = 0;

    // Max pooling records the winning input index per output for backward.
    virtual void maxpool_forward(const PoolGeometry& g, const float* x, float* y, int32_t* argmax) = 0;
    virtual void maxpool_backward(const PoolGeometry& g, const float* dy, const int32_t* argmax,
                                  float* dx) = 0;
    // Average pooling counts padded cells (count_include_pad = true, as PyTorch's default).
    virtual void avgpool_forward(const PoolGeometry& g, const float* x, float* y) = 0;
    virtual void avgpool_backward(const PoolGeometry& g, const float* dy, float* dx) = 0;

    // Batch normalisation over n x c x hw (hw = 1 for features); statistics in FP32.
    // Training: computes batch mean and inverse std into save_mean/save_invstd and updates the
    // running statistics with `momentum`. Inference: uses the running statistics.
    virtual void batchnorm_forward(const float* x, float* y, const float* gamma, const float* beta,
                                   float* running_mean, float* running_var, float* save_mean,
                                   float* save_invstd, int64_t n, int64_t c, int64_t hw, float momentum,
                                   float eps, bool training) = 0;
    virtual void batchnorm_backward(const float* x, const float* dy, const float* gamma,
                                    const float* save_mean, const float* save_invstd, float* dx,
                                    float* dgamma, float* dbeta, int64_t n, int64_t c, int64_t hw) = 0;

    // Inverted dropout: keep with probability 1-p, scale kept values by 1/(1-p). The mask is
    // drawn by the caller (seeded) and holds 0 or 1/(1-p).
    virtual void multiply(const float* x, const float* mask, float* y, int64_t n) = 0;

    // Mean softmax cross-entropy in FP32 over rows of logits[n, k] against class indices
    // (stored as floats). Writes dlogits = grad_scale * (softmax - onehot) / n; returns the loss
    // and the number of correct argmax predictions. z_loss > 0 adds PaLM's z-loss,
    // z_loss * mean(log² Z) with log Z a row's log-sum-exp, to the objective: its gradient
    // grad_scale * z_loss * 2 log Z * softmax / n joins dlogits and its value is LossResult's
    // z_term; `loss` stays the cross-entropy alone (nats per row), the figure people compare.
    struct LossResult {
        double loss = 0;
        int64_t correct = 0;
        double z_term = 0;  // z_loss * mean(log² Z); 0 without a z-loss
    };
    virtual LossResult softmax_cross_entropy(const float* logits, const float* labels, float* dlogits,
                                             int64_t n, int64_t k, float grad_scale, float z_loss = 0.0f) = 0;
    // Mean squared error over n x k; dpred = grad_scale * 2 (pred - target) / (n k).
    virtual LossResult mse(const float* pred, const float* target, float* dpred, int64_t n, int64_t k,
                           float grad_scale) = 0;

    // Multiplies x by factor and reports whether every result is finite (the unscale step).
    virtual bool scale_and_check_finite(float factor, float* x, int64_t n) = 0;
    virtual double sum_squares(const float* x, int64_t n) = 0;
};

// The CPU backend; always available.
std::unique_ptr<Backend> make_cpu_backend();
// The CUDA backend lives in a module loaded at run time: make_cuda_backend and
// make_default_backend in core/backend/default_backend.h.

}  // namespace mpwb
