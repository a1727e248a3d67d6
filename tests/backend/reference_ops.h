// Float64 reference implementations of the Backend ops, written as the naive loops of their
// definitions (no im2col, no blocking, no threads) so they share nothing with the CPU backend.
// The backend op tests compare against them, and the gradient tests finite-difference them.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/backend/backend.h"

namespace mpwb::ref {

using Vec = std::vector<double>;

inline Vec to_double(const float* p, int64_t n) { return Vec(p, p + n); }

// C = alpha op(A) op(B) + beta C, row-major with leading dimensions.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const Vec& a, int64_t lda,
                 const Vec& b, int64_t ldb, double beta, Vec& c, int64_t ldc) {
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t p = 0; p < k; ++p) {
                const double av = ta ? a[p * lda + i] : a[i * lda + p];
                const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                s += av * bv;
            }
            c[i * ldc + j] = alpha * s + beta * c[i * ldc + j];
        }
}

// Per-element bound on FP32 accumulation error of a length-k dot product: sum |a_p b_p| k 2^-24.
inline double gemm_abs_sum(bool ta, bool tb, int64_t i, int64_t j, int64_t k, const Vec& a, int64_t lda,
                           const Vec& b, int64_t ldb) {
    double s = 0;
    for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[p * lda + i] : a[i * lda + p];
        const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += std::fabs(av * bv);
    }
    return s;
}

// Every entry of the activation table (core/backend/activations.h); an entry without a case here
// gets 0 and fails the tests that compare against it.
inline double activation(Activation kind, double slope, double x) {
    switch (kind) {
        case Activation::ReLU:
            return x > 0 ? x : 0;
        case Activation::LeakyReLU:
            return x > 0 ? x : slope * x;
        case Activation::GELU:
            return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
        case Activation::GELUTanh:
            return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        case Activation::Tanh:
            return std::tanh(x);
        case Activation::Sigmoid:
            return 1.0 / (1.0 + std::exp(-x));
    }
    return 0;
}

inline double activation_grad(Activation kind, double slope, double x) {
    switch (kind) {
        case Activation::ReLU:
            return x > 0 ? 1 : 0;
        case Activation::LeakyReLU:
            return x > 0 ? 1 : slope;
        case Activation::GELU:
            return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
        case Activation::GELUTanh: {  // d/dx of 0.5 x (1 + tanh(u)), u = sqrt(2/π) (x + 0.044715 x³)
            const double k = std::sqrt(2 / M_PI);
            const double t = std::tanh(k * (x + 0.044715 * x * x * x));
            return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
        }
        case Activation::Tanh: {
            const double t = std::tanh(x);
            return 1 - t * t;
        }
        case Activation::Sigmoid: {
            const double s = 1.0 / (1.0 + std::exp(-x));
            return s * (1 - s);
        }
    }
    return 0;
}

inline Vec conv2d_forward(const ConvGeometry& g, const Vec& x, const Vec& w, const Vec* bias) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    Vec y(static_cast<size_t>(g.batch * g.out_channels * oh * ow));
    for (int64_t n = 0; n < g.batch; ++n)
        for (int64_t oc = 0; oc < g.out_channels; ++oc)
            for (int64_t oy = 0; oy < oh; ++oy)
                for (int64_t ox = 0; ox < ow; ++ox) {
                    double s = bias ? (*bias)[oc] : 0.0;
                    for (int64_t ic = 0; ic < g.in_channels; ++ic)
                        for (int64_t ki = 0; ki < g.kernel_h; ++ki)
                            for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
                                const int64_t iy = oy * g.stride - g.padding + ki;
                                const int64_t ix = ox * g.stride - g.padding + kj;
                                if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
                                s += x[((n * g.in_channels + ic) * g.in_h + iy) * g.in_w + ix] *
                                     w[((oc * g.in_channels + ic) * g.kernel_h + ki) * g.kernel_w + kj];
                            }
                    y[((n * g.out_channels + oc) * oh + oy) * ow + ox] = s;
                }
    return y;
}

// Gradients of conv2d_forward: dx, dw, db (each sized by the caller's geometry).
inline void conv2d_backward(const ConvGeometry& g, const Vec& x, const Vec& w, const Vec& dy, Vec& dx,
                            Vec& dw, Vec& db) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    dx.assign(static_cast<size_t>(g.batch * g.in_channels * g.in_h * g.in_w), 0.0);
    dw.assign(static_cast<size_t>(g.out_channels * g.in_channels * g.kernel_h * g.kernel_w), 0.0);
    db.assign(static_cast<size_t>(g.out_channels), 0.0);
    for (int64_t n = 0; n < g.batch; ++n)
        for (int64_t oc = 0; oc < g.out_channels; ++oc)
            for (int64_t oy = 0; oy < oh; ++oy)
                for (int64_t ox = 0; ox < ow; ++ox) {
                    const double d = dy[((n * g.out_channels + oc) * oh + oy) * ow + ox];
                    db[oc] += d;
                    for (int64_t ic = 0; ic < g.in_channels; ++ic)
                        for (int64_t ki = 0; ki < g.kernel_h; ++ki)
                            for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
                                const int64_t iy = oy * g.stride - g.padding + ki;
                                const int64_t ix = ox * g.stride - g.padding + kj;
                                if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
                                const int64_t xi = ((n * g.in_channels + ic) * g.in_h + iy) * g.in_w + ix;
                                const int64_t wi =
                                    ((oc * g.in_channels + ic) * g.kernel_h + ki) * g.kernel_w + kj;
                                dx[xi] += d * w[wi];
                                dw[wi] += d * x[xi];
                            }
                }
}

// Max pooling over the window cells inside the image (padding never wins, as in PyTorch); the
// first maximum in scan order wins a tie; a NaN in the window makes the output NaN.
inline Vec maxpool_forward(const PoolGeometry& g, const Vec& x, std::vector<int64_t>* argmax = nullptr) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    Vec y(static_cast<size_t>(g.batch * g.channels * oh * ow));
    if (argmax) argmax->assign(y.size(), -1);
    for (int64_t p = 0; p < g.batch * g.channels; ++p)
        for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
                double best = -std::numeric_limits<double>::infinity();
                int64_t best_i = -1;
                bool nan = false;
                for (int64_t ki = 0; ki < g.kernel; ++ki)
                    for (int64_t kj = 0; kj < g.kernel; ++kj) {
                        const int64_t iy = oy * g.stride - g.padding + ki;
                        const int64_t ix = ox * g.stride - g.padding + kj;
                        if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
                        const int64_t i = p * g.in_h * g.in_w + iy * g.in_w + ix;
                        if (std::isnan(x[i])) nan = true;
                        if (best_i < 0 || x[i] > best) {
                            best = x[i];
                            best_i = i;
                        }
                    }
                const int64_t o = (p * oh + oy) * ow + ox;
                y[o] = nan ? std::numeric_limits<double>::quiet_NaN() : best;
                if (argmax) (*argmax)[o] = best_i;
            }
    return y;
}

// Average pooling dividing by the full window (count_include_pad = true).
inline Vec avgpool_forward(const PoolGeometry& g, const Vec& x) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    Vec y(static_cast<size_t>(g.batch * g.channels * oh * ow));
    for (int64_t p = 0; p < g.batch * g.channels; ++p)
        for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
                double s = 0;
                for (int64_t ki = 0; ki < g.kernel; ++ki)
                    for (int64_t kj = 0; kj < g.kernel; ++kj) {
                        const int64_t iy = oy * g.stride - g.padding + ki;
                        const int64_t ix = ox * g.stride - g.padding + kj;
                        if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
                        s += x[p * g.in_h * g.in_w + iy * g.in_w + ix];
                    }
                y[(p * oh + oy) * ow + ox] = s / static_cast<double>(g.kernel * g.kernel);
            }
    return y;
}

inline Vec avgpool_backward(const PoolGeometry& g, const Vec& dy) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    Vec dx(static_cast<size_t>(g.batch * g.channels * g.in_h * g.in_w), 0.0);
    for (int64_t p = 0; p < g.batch * g.channels; ++p)
        for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox)
                for (int64_t ki = 0; ki < g.kernel; ++ki)
                    for (int64_t kj = 0; kj < g.kernel; ++kj) {
                        const int64_t iy = oy * g.stride - g.padding + ki;
                        const int64_t ix = ox * g.stride - g.padding + kj;
                        if (iy < 0 || iy >= g.in_h || ix < 0 || ix >= g.in_w) continue;
                        dx[p * g.in_h * g.in_w + iy * g.in_w + ix] +=
                            dy[(p * oh + oy) * ow + ox] / static_cast<double>(g.kernel * g.kernel);
                    }
    return dx;
}

// Batch normalisation over n x c x hw with batch statistics (biased variance).
struct BatchNormStats {
    Vec mean, var;
};
inline Vec batchnorm_train(const Vec& x, const Vec& gamma, const Vec& beta, int64_t n, int64_t c, int64_t hw,
                           double eps, BatchNormStats* stats = nullptr) {
    Vec y(x.size());
    BatchNormStats st;
    st.mean.assign(static_cast<size_t>(c), 0.0);
    st.var.assign(static_cast<size_t>(c), 0.0);
    const double count = static_cast<double>(n * hw);
    for (int64_t ch = 0; ch < c; ++ch) {
        double m = 0;
        for (int64_t s = 0; s < n; ++s)
            for (int64_t i = 0; i < hw; ++i) m += x[(s * c + ch) * hw + i];
        m /= count;
        double v = 0;
        for (int64_t s = 0; s < n; ++s)
            for (int64_t i = 0; i < hw; ++i)
                v += (x[(s * c + ch) * hw + i] - m) * (x[(s * c + ch) * hw + i] - m);
        v /= count;
        st.mean[ch] = m;
        st.var[ch] = v;
        const double inv = 1.0 / std::sqrt(v + eps);
        for (int64_t s = 0; s < n; ++s)
            for (int64_t i = 0; i < hw; ++i) {
                const int64_t k = (s * c + ch) * hw + i;
                y[k] = gamma[ch] * (x[k] - m) * inv + beta[ch];
            }
    }
    if (stats) *stats = st;
    return y;
}

// Mean softmax cross-entropy over rows, by log-sum-exp in double.
inline double softmax_cross_entropy(const Vec& z, const std::vector<int64_t>& labels, int64_t n, int64_t k,
                                    Vec* dlogits = nullptr, double grad_scale = 1) {
    double total = 0;
    if (dlogits) dlogits->assign(static_cast<size_t>(n * k), 0.0);
    for (int64_t r = 0; r < n; ++r) {
        double zmax = z[r * k];
        for (int64_t j = 1; j < k; ++j) zmax = std::max(zmax, z[r * k + j]);
        double s = 0;
        for (int64_t j = 0; j < k; ++j) s += std::exp(z[r * k + j] - zmax);
        const double lse = zmax + std::log(s);
        total += lse - z[r * k + labels[r]];
        if (dlogits)
            for (int64_t j = 0; j < k; ++j)
                (*dlogits)[r * k + j] = grad_scale *
                                        (std::exp(z[r * k + j] - lse) - (j == labels[r] ? 1.0 : 0.0)) /
                                        static_cast<double>(n);
    }
    return total / static_cast<double>(n);
}

inline double mse(const Vec& pred, const Vec& target) {
    double s = 0;
    for (size_t i = 0; i < pred.size(); ++i) s += (pred[i] - target[i]) * (pred[i] - target[i]);
    return s / static_cast<double>(pred.size());
}

}  // namespace mpwb::ref
