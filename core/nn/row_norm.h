// Normalisation over the last dimension of a [rows, d] array: LayerNorm (mean and variance) and
// RMSNorm (root mean square only), with an optional per-channel gain and bias. The norm layers and
// the transformer block's norms (pre-norm and QK-norm) share this one definition, so a numerics
// change lands in every norm at once. Statistics are FP32 outputs of double sums over the row,
// whatever the policy, following autocast's rule for normalisation. Rows are independent and run
// in parallel; the gain and bias gradients sum over rows in a fixed order, so results do not
// depend on the thread count.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mpwb {

enum class NormKind { LayerNorm, RMSNorm };

// "layernorm", "rmsnorm": how JSON settings and messages name a kind; ConfigError otherwise.
NormKind parse_norm_kind(std::string_view name);
std::string norm_kind_name(NormKind kind);

struct RowNormShape {
    NormKind kind = NormKind::LayerNorm;
    int64_t rows = 0;
    int64_t d = 0;
    float eps = 1e-5f;
};

// y = (x - mean) * rstd * gain + bias (LayerNorm) or x * rstd * gain (RMSNorm), row by row.
// gain and bias may be null (no affine; RMSNorm never reads bias). mean (LayerNorm only; may be
// null for RMSNorm) and rstd receive one value per row for the backward pass. y may alias x.
void row_norm_forward(const RowNormShape& shape, const float* x, const float* gain, const float* bias,
                      float* y, float* mean, float* rstd);

// Given dy, writes dx (when not null; may alias dy) and overwrites dgain / dbias (when not null)
// with their gradients summed over the rows. x, mean and rstd are the forward pass's.
void row_norm_backward(const RowNormShape& shape, const float* x, const float* gain, const float* mean,
                       const float* rstd, const float* dy, float* dx, float* dgain, float* dbias);

}  // namespace mpwb
