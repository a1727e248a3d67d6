// Causal attention's products, softmax and dropout (see attention.h). The products run as
// batched GEMMs over (sample, head); the softmax and its backward run row by row in parallel,
// each row on one thread, so results do not depend on the thread count.
#include "core/nn/attention.h"

#include <algorithm>
#include <cmath>

#include "core/common/parallel.h"
#include "core/nn/stability_indicators.h"

namespace mpwb {
namespace {

using Batch = Backend::GemmBatch;

float score_scale(const AttentionShape& shape) {
    return 1.0f / std::sqrt(static_cast<float>(shape.head_size));
}

// Row t of each sequence sees tokens 0..t: P = softmax(scale · S) over them in FP32, with the
// row maximum subtracted; the masked entries are 0. In place.
void causal_softmax(const AttentionShape& shape, float scale, float* scores) {
    const int64_t T = shape.tokens;
    parallel_for(shape.sequences * T, std::max<int64_t>(1, 4096 / T), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            float* row = scores + r * T;
            const int64_t seen = r % T + 1;
            float top = -INFINITY;
            for (int64_t j = 0; j < seen; ++j) top = std::max(top, row[j] * scale);
            float sum = 0.0f;
            for (int64_t j = 0; j < seen; ++j) {
                row[j] = std::exp(row[j] * scale - top);
                sum += row[j];
            }
            const float inverse = 1.0f / sum;
            for (int64_t j = 0; j < seen; ++j) row[j] *= inverse;
            std::fill(row + seen, row + T, 0.0f);
        }
    });
}

// dS = scale · P ⊙ (dP − Σ_j P_j dP_j) row by row, in place over dP; masked entries 0.
void causal_softmax_backward(const AttentionShape& shape, float scale, const float* probs, float* grad) {
    const int64_t T = shape.tokens;
    parallel_for(shape.sequences * T, std::max<int64_t>(1, 4096 / T), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* p = probs + r * T;
            float* g = grad + r * T;
            const int64_t seen = r % T + 1;
            float dot = 0.0f;
            for (int64_t j = 0; j < seen; ++j) dot += p[j] * g[j];
            for (int64_t j = 0; j < seen; ++j) g[j] = scale * p[j] * (g[j] - dot);
            std::fill(g + seen, g + T, 0.0f);
        }
    });
}

void store(LayerContext& ctx, float* values, int64_t n) { ctx.backend.round(ctx.storage, values, values, n); }

}  // namespace

void attention_forward(LayerContext& ctx, const AttentionGemms& gemms, const AttentionShape& shape,
                       float dropout, const float* q, const float* k, const float* v, float* out,
                       AttentionSaved& saved, AttentionStability* stability) {
    const int64_t S = shape.sequences, T = shape.tokens, hs = shape.head_size;
    saved.probabilities.resize({S, T, T});
    float* p = saved.probabilities.data();
    {
        SelectGemm use(ctx, gemms.scores);
        const float* qq = ctx.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, q, S * T, hs);
        const float* kq = ctx.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Cols, k, S * T, hs);
        ctx.gemm_batched(Batch{false, true, T, T, hs, hs, hs, T, T * hs, T * hs, T * T, S}, qq, kq, p);
    }
    if (stability) stability->logit_max = max_causal_logit(p, S, T, score_scale(shape));
    causal_softmax(shape, score_scale(shape), p);
    if (stability) {
        const HeadEntropy e = attention_entropy(p, S / stability->heads, stability->heads, T);
        stability->entropy_mean = e.mean;
        stability->entropy_min = e.min;
    }
    store(ctx, p, S * T * T);
    const float* used = p;
    saved.dropped = Tensor();
    saved.mask = Tensor();
    if (ctx.training && dropout > 0.0f && ctx.rng) {
        saved.mask.resize({S, T, T});
        const float keep_scale = 1.0f / (1.0f - dropout);
        for (float& m : saved.mask.span()) m = ctx.rng->uniform() < dropout ? 0.0f : keep_scale;
        saved.dropped.resize({S, T, T});
        ctx.backend.multiply(p, saved.mask.data(), saved.dropped.data(), S * T * T);
        used = saved.dropped.data();
    }
    SelectGemm use(ctx, gemms.values);
    const float* pq = ctx.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, used, S * T, T);
    const float* vq = ctx.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Rows, v, S * T, hs);
    ctx.gemm_batched(Batch{false, false, T, hs, T, T, hs, hs, T * T, T * hs, T * hs, S}, pq, vq, out);
}

void attention_backward(LayerContext& ctx, const AttentionGemms& gemms, const AttentionShape& shape,
                        const float* q, const float* k, const float* v, const float* dout, float* dq,
                        float* dk, float* dv, AttentionSaved& saved) {
    const int64_t S = shape.sequences, T = shape.tokens, hs = shape.head_size;
    const float* used = saved.dropped.empty() ? saved.probabilities.data() : saved.dropped.data();
    saved.scratch.resize({S, T, T});
    float* grad = saved.scratch.data();
    {
        // dP = dO · Vᵀ; dV = Pᵀ · dO (P as the product read it, after dropout).
        SelectGemm use(ctx, gemms.values);
        const float* dod =
            ctx.operand(GemmOperand::OutputGrad, GemmPass::DataGrad, SumAlong::Cols, dout, S * T, hs);
        const float* vd = ctx.operand(GemmOperand::Weight, GemmPass::DataGrad, SumAlong::Cols, v, S * T, hs);
        ctx.gemm_batched(Batch{false, true, T, T, hs, hs, hs, T, T * hs, T * hs, T * T, S}, dod, vd, grad);
        const float* pw =
            ctx.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, used, S * T, T);
        const float* dow =
            ctx.operand(GemmOperand::OutputGrad, GemmPass::WeightGrad, SumAlong::Rows, dout, S * T, hs);
        ctx.gemm_batched(Batch{true, false, T, hs, T, T, hs, hs, T * T, T * hs, T * hs, S}, pw, dow, dv);
    }
    if (!saved.mask.empty()) ctx.backend.multiply(grad, saved.mask.data(), grad, S * T * T);
    causal_softmax_backward(shape, score_scale(shape), saved.probabilities.data(), grad);
    store(ctx, grad, S * T * T);
    // dQ = dS · K; dK = dSᵀ · Q.
    SelectGemm use(ctx, gemms.scores);
    const float* dsd =
        ctx.operand(GemmOperand::OutputGrad, GemmPass::DataGrad, SumAlong::Cols, grad, S * T, T);
    const float* kd = ctx.operand(GemmOperand::Weight, GemmPass::DataGrad, SumAlong::Rows, k, S * T, hs);
    ctx.gemm_batched(Batch{false, false, T, hs, T, T, hs, hs, T * T, T * hs, T * hs, S}, dsd, kd, dq);
    const float* dsw =
        ctx.operand(GemmOperand::OutputGrad, GemmPass::WeightGrad, SumAlong::Rows, grad, S * T, T);
    const float* qw = ctx.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, q, S * T, hs);
    ctx.gemm_batched(Batch{true, false, T, hs, T, T, hs, hs, T * T, T * hs, T * hs, S}, dsw, qw, dk);
}

void split_heads(const HeadLayout& l, const float* rows, float* heads) {
    parallel_for(l.samples * l.heads, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t s = i / l.heads, h = i % l.heads;
            for (int64_t t = 0; t < l.tokens; ++t) {
                const float* from = rows + (s * l.tokens + t) * l.ld + l.col0 + h * l.head_size;
                std::copy(from, from + l.head_size, heads + (i * l.tokens + t) * l.head_size);
            }
        }
    });
}

void merge_heads(const HeadLayout& l, const float* heads, float* rows) {
    parallel_for(l.samples * l.heads, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t s = i / l.heads, h = i % l.heads;
            for (int64_t t = 0; t < l.tokens; ++t) {
                const float* from = heads + (i * l.tokens + t) * l.head_size;
                std::copy(from, from + l.head_size,
                          rows + (s * l.tokens + t) * l.ld + l.col0 + h * l.head_size);
            }
        }
    });
}

}  // namespace mpwb
