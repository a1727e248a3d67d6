// LayerNorm and RMSNorm over rows (see row_norm.h). The backward pass is the closed form:
// with x̂ = (x - mean) * rstd and g = dy * gain,
//   LayerNorm: dx = rstd * (g - mean(g) - x̂ * mean(g * x̂))
//   RMSNorm:   dx = rstd * (g - x̂ * mean(g * x̂))
#include "core/nn/row_norm.h"

#include <cmath>
#include <vector>

#include "core/common/error.h"
#include "core/common/parallel.h"

namespace mpwb {

NormKind parse_norm_kind(std::string_view name) {
    if (name == "layernorm") return NormKind::LayerNorm;
    if (name == "rmsnorm") return NormKind::RMSNorm;
    throw ConfigError("unknown norm \"" + std::string(name) + "\" (layernorm or rmsnorm)");
}

std::string norm_kind_name(NormKind kind) { return kind == NormKind::LayerNorm ? "layernorm" : "rmsnorm"; }

namespace {

constexpr int64_t kRowGrain = 16;

struct RowStats {
    float mean = 0.0f;
    float rstd = 0.0f;
};

RowStats row_stats(const RowNormShape& s, const float* x) {
    double mean = 0.0;
    if (s.kind == NormKind::LayerNorm) {
        for (int64_t j = 0; j < s.d; ++j) mean += x[j];
        mean /= static_cast<double>(s.d);
    }
    double square_sum = 0.0;
    for (int64_t j = 0; j < s.d; ++j) {
        const double centred = x[j] - mean;
        square_sum += centred * centred;
    }
    const double variance = square_sum / static_cast<double>(s.d);
    return {static_cast<float>(mean), static_cast<float>(1.0 / std::sqrt(variance + s.eps))};
}

}  // namespace

void row_norm_forward(const RowNormShape& s, const float* x, const float* gain, const float* bias, float* y,
                      float* mean, float* rstd) {
    const bool with_bias = bias && s.kind == NormKind::LayerNorm;
    parallel_for(s.rows, kRowGrain, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* xr = x + r * s.d;
            float* yr = y + r * s.d;
            const RowStats st = row_stats(s, xr);
            if (mean) mean[r] = st.mean;
            rstd[r] = st.rstd;
            for (int64_t j = 0; j < s.d; ++j) {
                float v = (xr[j] - st.mean) * st.rstd;
                if (gain) v *= gain[j];
                if (with_bias) v += bias[j];
                yr[j] = v;
            }
        }
    });
}

namespace {

// dx of one row.
void row_input_grad(const RowNormShape& s, const float* xr, const float* gain, float row_mean, float row_rstd,
                    const float* dyr, float* dxr) {
    double g_sum = 0.0, g_xhat_sum = 0.0;
    for (int64_t j = 0; j < s.d; ++j) {
        const double g = gain ? dyr[j] * gain[j] : dyr[j];
        const double xhat = (xr[j] - row_mean) * row_rstd;
        g_sum += g;
        g_xhat_sum += g * xhat;
    }
    const double inv_d = 1.0 / static_cast<double>(s.d);
    const double g_mean = s.kind == NormKind::LayerNorm ? g_sum * inv_d : 0.0;
    const double g_xhat_mean = g_xhat_sum * inv_d;
    for (int64_t j = 0; j < s.d; ++j) {
        const double g = gain ? dyr[j] * gain[j] : dyr[j];
        const double xhat = (xr[j] - row_mean) * row_rstd;
        dxr[j] = static_cast<float>(row_rstd * (g - g_mean - xhat * g_xhat_mean));
    }
}

}  // namespace

void row_norm_backward(const RowNormShape& s, const float* x, const float* gain, const float* mean,
                       const float* rstd, const float* dy, float* dx, float* dgain, float* dbias) {
    const auto row_mean = [&](int64_t r) { return s.kind == NormKind::LayerNorm ? mean[r] : 0.0f; };
    // Parameter gradients first: dx may alias dy. Columns in parallel, each summed over the rows
    // in order; a chunk walks the rows once and keeps its columns' sums, so every row is read a
    // cache line at a time instead of once per column.
    if (dgain || dbias) {
        parallel_for(s.d, kRowGrain, [&](int64_t begin, int64_t end) {
            thread_local std::vector<double> gain_sum, bias_sum;
            const int64_t width = end - begin;
            gain_sum.assign(static_cast<size_t>(width), 0.0);
            bias_sum.assign(static_cast<size_t>(width), 0.0);
            double* gs = gain_sum.data();
            double* bs = bias_sum.data();
            for (int64_t r = 0; r < s.rows; ++r) {
                const float* dyr = dy + r * s.d + begin;
                const float* xr = x + r * s.d + begin;
                const float m = row_mean(r), rs = rstd[r];
                for (int64_t j = 0; j < width; ++j) {
                    gs[j] += static_cast<double>(dyr[j]) * ((xr[j] - m) * rs);
                    bs[j] += dyr[j];
                }
            }
            for (int64_t j = 0; j < width; ++j) {
                if (dgain) dgain[begin + j] = static_cast<float>(gs[j]);
                if (dbias) dbias[begin + j] = static_cast<float>(bs[j]);
            }
        });
    }
    if (!dx) return;
    parallel_for(s.rows, kRowGrain, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            row_input_grad(s, x + r * s.d, gain, row_mean(r), rstd[r], dy + r * s.d, dx + r * s.d);
    });
}

}  // namespace mpwb
