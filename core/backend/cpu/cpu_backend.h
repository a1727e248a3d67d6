// The CPU backend: FP32 GEMM through OpenBLAS cblas_sgemm, everything elementwise on the
// parallel_for pool. Reduced formats are emulated where the GPU rounds: GEMM operands are rounded
// to the storage format and multiplied exactly in FP32 (an FP16 or BF16 product fits in FP32's
// 24-bit mantissa), with FP32 accumulation as on tensor cores.
#pragma once
#include <vector>

#include "core/backend/backend.h"

namespace mpwb {

class CpuBackend : public Backend {
public:
    CpuBackend();
    std::string name() const override { return "cpu"; }
    std::string device_name() const override;

    void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
              Format operand_format) override;
    void gemm_batched(const GemmBatch& g, const float* a, const float* b, float* c,
                      Format operand_format) override;
    void round(Format format, const float* in, float* out, int64_t n) override;
    void scale(float factor, float* x, int64_t n) override;
    void add_bias_rows(float* y, const float* bias, int64_t rows, int64_t cols) override;
    void bias_grad_rows(const float* dy, float* db, int64_t rows, int64_t cols) override;
    void add_bias_channels(float* y, const float* bias, int64_t n, int64_t c, int64_t hw) override;
    void bias_grad_channels(const float* dy, float* db, int64_t n, int64_t c, int64_t hw) override;
    void activation_forward(Activation kind, float slope, const float* x, float* y, int64_t n) override;
    void activation_backward(Activation kind, float slope, const float* x, const float* y, const float* dy,
                             float* dx, int64_t n) override;
    void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
                        Format operand_format) override;
    void conv2d_backward(const ConvGeometry& g, const float* x, const float* w, const float* dy, float* dx,
                         float* dw, float* db, Format operand_format) override;
    void maxpool_forward(const PoolGeometry& g, const float* x, float* y, int32_t* argmax) override;
    void maxpool_backward(const PoolGeometry& g, const float* dy, const int32_t* argmax, float* dx) override;
    void avgpool_forward(const PoolGeometry& g, const float* x, float* y) override;
    void avgpool_backward(const PoolGeometry& g, const float* dy, float* dx) override;
    void batchnorm_forward(const float* x, float* y, const float* gamma, const float* beta,
                           float* running_mean, float* running_var, float* save_mean, float* save_invstd,
                           int64_t n, int64_t c, int64_t hw, float momentum, float eps,
                           bool training) override;
    void batchnorm_backward(const float* x, const float* dy, const float* gamma, const float* save_mean,
                            const float* save_invstd, float* dx, float* dgamma, float* dbeta, int64_t n,
                            int64_t c, int64_t hw) override;
    void multiply(const float* x, const float* mask, float* y, int64_t n) override;
    LossResult softmax_cross_entropy(const float* logits, const float* labels, float* dlogits, int64_t n,
                                     int64_t k, float grad_scale, float z_loss = 0.0f) override;
    LossResult mse(const float* pred, const float* target, float* dpred, int64_t n, int64_t k,
                   float grad_scale) override;
    bool scale_and_check_finite(float factor, float* x, int64_t n) override;
    double sum_squares(const float* x, int64_t n) override;

private:
    void sync_blas_threads();
    void conv2d_chunk_by_rows(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                              int64_t n0, int64_t nb, float* y);
    static void scatter_block(const ConvGeometry& g, const float* product, const float* bias, int64_t n0,
                              int64_t first, int64_t count, float* y);
    int blas_threads_ = 0;
    // Scratch reused across calls so the step loop does not allocate.
    std::vector<float> round_a_, round_b_, columns_, gathered_, weights_rounded_;
};

}  // namespace mpwb
