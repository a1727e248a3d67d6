// A float64 forward pass of TransformerBlock, written from the definition (DESIGN.md, "Sequences
// and transformers") with naive loops and nothing of the engine's code, for the block's
// finite-difference gradient checks and its forward check. Parameters come in
// TransformerBlock::parameters() order; dropout masks (0 or 1 / (1 − p)) are given, or null.
#pragma once
#include <cmath>
#include <vector>

#include "core/nn/transformer_block.h"
#include "tests/backend/reference_ops.h"

namespace mpwb::ref {

struct BlockMasks {
    const Vec* attention = nullptr;        // [samples · heads, T, T]
    const Vec* after_attention = nullptr;  // [samples · T, d]
    const Vec* after_mlp = nullptr;        // [samples · T, d]
};

// What the attention saw, for the instability indicators' checks: the largest scaled score over
// unmasked positions, and per head the sum over samples and rows of -Σ p log p.
struct AttentionTrace {
    double logit_max = -INFINITY;
    std::vector<double> head_entropy_sum;
};

class ReferenceBlock {
public:
    ReferenceBlock(const TransformerBlockSettings& s, int64_t tokens, int64_t d) : s_(s), T_(tokens), d_(d) {}

    Vec forward(int64_t samples, const Vec& x, const std::vector<Vec>& params, const BlockMasks& masks = {},
                AttentionTrace* trace = nullptr) const {
        size_t next = 0;
        auto take = [&] { return &params.at(next++); };
        const bool norm_bias = s_.bias && s_.norm == NormKind::LayerNorm;
        const Vec* g1 = take();
        const Vec* b1 = norm_bias ? take() : nullptr;
        const Vec* wqkv = take();
        const Vec* bqkv = s_.bias ? take() : nullptr;
        const Vec* gq = s_.qk_norm ? take() : nullptr;
        const Vec* gk = s_.qk_norm ? take() : nullptr;
        const Vec* wo = take();
        const Vec* bo = s_.bias ? take() : nullptr;
        const Vec* g2 = take();
        const Vec* b2 = norm_bias ? take() : nullptr;
        const Vec* w1 = take();
        const Vec* bb1 = s_.bias ? take() : nullptr;
        const Vec* wu = s_.swiglu ? take() : nullptr;
        const Vec* bu = s_.swiglu && s_.bias ? take() : nullptr;
        const Vec* w2 = take();
        const Vec* bb2 = s_.bias ? take() : nullptr;

        const int64_t rows = samples * T_, F = TransformerBlock::hidden_width(s_, d_);
        const Vec n1 = norm(x, rows, d_, *g1, b1);
        const Vec qkv = linear(n1, rows, d_, 3 * d_, *wqkv, bqkv);
        Vec attn = attention(qkv, samples, gq, gk, masks.attention, trace);
        Vec proj = linear(attn, rows, d_, d_, *wo, bo);
        apply(proj, masks.after_attention);
        Vec h = x;
        for (size_t i = 0; i < h.size(); ++i) h[i] += proj[i];
        const Vec n2 = norm(h, rows, d_, *g2, b2);
        Vec a = linear(n2, rows, d_, F, *w1, bb1);
        if (s_.swiglu) {
            const Vec u = linear(n2, rows, d_, F, *wu, bu);
            for (size_t i = 0; i < a.size(); ++i) a[i] = a[i] / (1 + std::exp(-a[i])) * u[i];
        } else {
            for (double& v : a) v = activation(Activation::GELUTanh, 0, v);
        }
        Vec m = linear(a, rows, F, d_, *w2, bb2);
        apply(m, masks.after_mlp);
        for (size_t i = 0; i < h.size(); ++i) h[i] += m[i];
        return h;
    }

private:
    static void apply(Vec& v, const Vec* mask) {
        if (mask)
            for (size_t i = 0; i < v.size(); ++i) v[i] *= (*mask)[i];
    }

    Vec norm(const Vec& x, int64_t rows, int64_t width, const Vec& gain, const Vec* bias) const {
        Vec y(x.size());
        for (int64_t r = 0; r < rows; ++r) {
            const double* row = x.data() + r * width;
            double mean = 0, square = 0;
            for (int64_t j = 0; j < width; ++j) mean += row[j] / width;
            const bool layer = s_.norm == NormKind::LayerNorm;
            for (int64_t j = 0; j < width; ++j) {
                const double c = layer ? row[j] - mean : row[j];
                square += c * c / width;
            }
            const double rstd = 1 / std::sqrt(square + s_.eps);
            for (int64_t j = 0; j < width; ++j)
                y[r * width + j] =
                    ((layer ? row[j] - mean : row[j]) * rstd) * gain[j] + (bias ? (*bias)[j] : 0.0);
        }
        return y;
    }

    static Vec linear(const Vec& x, int64_t rows, int64_t in, int64_t out, const Vec& w, const Vec* b) {
        Vec y(static_cast<size_t>(rows * out));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < out; ++o) {
                double s = b ? (*b)[o] : 0.0;
                for (int64_t i = 0; i < in; ++i) s += w[o * in + i] * x[r * in + i];
                y[r * out + o] = s;
            }
        return y;
    }

    // Per sample and head: softmax over tokens ≤ t of q_t · k_j / sqrt(hs), then · v.
    Vec attention(const Vec& qkv, int64_t samples, const Vec* gq, const Vec* gk, const Vec* mask,
                  AttentionTrace* trace) const {
        const int64_t H = s_.heads, hs = d_ / H;
        if (trace) trace->head_entropy_sum.assign(static_cast<size_t>(H), 0.0);
        Vec out(static_cast<size_t>(samples * T_ * d_));
        auto head = [&](int64_t s, int64_t part, int64_t h, const Vec* gain) {
            Vec v(static_cast<size_t>(T_ * hs));
            for (int64_t t = 0; t < T_; ++t)
                for (int64_t j = 0; j < hs; ++j)
                    v[t * hs + j] = qkv[(s * T_ + t) * 3 * d_ + part * d_ + h * hs + j];
            return gain ? norm(v, T_, hs, *gain, nullptr) : v;
        };
        for (int64_t s = 0; s < samples; ++s)
            for (int64_t h = 0; h < H; ++h) {
                const Vec q = head(s, 0, h, gq), k = head(s, 1, h, gk), v = head(s, 2, h, nullptr);
                for (int64_t t = 0; t < T_; ++t) {
                    std::vector<double> p(static_cast<size_t>(t + 1));
                    double top = -INFINITY, sum = 0;
                    for (int64_t j = 0; j <= t; ++j) {
                        double dotp = 0;
                        for (int64_t c = 0; c < hs; ++c) dotp += q[t * hs + c] * k[j * hs + c];
                        p[j] = dotp / std::sqrt(static_cast<double>(hs));
                        top = std::max(top, p[j]);
                    }
                    if (trace) trace->logit_max = std::max(trace->logit_max, top);
                    for (double& e : p) sum += (e = std::exp(e - top));
                    for (int64_t j = 0; j <= t; ++j) {
                        p[j] /= sum;
                        if (trace && p[j] > 0)
                            trace->head_entropy_sum[static_cast<size_t>(h)] -= p[j] * std::log(p[j]);
                        if (mask) p[j] *= (*mask)[((s * H + h) * T_ + t) * T_ + j];
                    }
                    for (int64_t c = 0; c < hs; ++c) {
                        double o = 0;
                        for (int64_t j = 0; j <= t; ++j) o += p[j] * v[j * hs + c];
                        out[(s * T_ + t) * d_ + h * hs + c] = o;
                    }
                }
            }
        return out;
    }

    TransformerBlockSettings s_;
    int64_t T_, d_;
};

}  // namespace mpwb::ref
