// TransformerBlock: sizes, parameters, the pre-norm forward and backward passes, JSON and the
// PyTorch module. The attention core (products, softmax, dropout) is in attention.cpp.
#include "core/nn/transformer_block.h"

#include <cmath>

#include "core/common/parallel.h"
#include "core/nn/stability_indicators.h"

namespace mpwb {
namespace {

// The GEMMs in gemms() order; the MLP's depend on its kind.
constexpr size_t kQkv = 0, kScores = 1, kValues = 2, kOut = 3, kFc1 = 4, kGate = 4, kUp = 5;
constexpr int64_t kInitStd100 = 2;  // projections start as N(0, 0.02²), as GPT-2 and nanoGPT

void store(LayerContext& ctx, Tensor& t) { ctx.backend.round(ctx.storage, t.data(), t.data(), t.numel()); }

// out = a + b, element by element (out may be a or b).
void add(const Tensor& a, const Tensor& b, Tensor& out) {
    out.resize(a.shape());
    const float* pa = a.data();
    const float* pb = b.data();
    float* po = out.data();
    parallel_for(a.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) po[i] = pa[i] + pb[i];
    });
}

size_t fc2_gemm(const TransformerBlockSettings& s) { return s.swiglu ? 6 : 5; }

// "heads" must divide d: the message names the field, both numbers and the nearest head counts
// that would do (what a user changing the field wants to know). The search is bounded, since a
// description may hold any width.
std::string heads_error(int64_t d, int64_t heads) {
    std::string text = "\"heads\": the model width d " + std::to_string(d) + " is not divisible by " +
                       std::to_string(heads) + " heads";
    if (heads > d) return text + "; at most " + std::to_string(d) + " heads (one feature each)";
    constexpr int64_t kSearch = 4096;
    int64_t below = heads - 1, above = heads + 1;
    while (below > 1 && heads - below < kSearch && d % below != 0) --below;
    while (above < d && above - heads < kSearch && d % above != 0) ++above;
    if (d % below != 0) return text;
    return text + "; " + std::to_string(below) + (d % above == 0 ? " or " + std::to_string(above) : "") +
           " heads divide it";
}

// The values a block holds per sample besides its output during a training step, counted from
// the members forward and backward size (transformer_block.h): [T, d] arrays, [T, 3d] (qkv and
// its gradient, counted as 3 [T, d] each), [T, F] MLP arrays, [heads, T, T] attention arrays and
// the norms' statistics (mean and rstd per row, per head for QK-norm).
void plan_kept_values(const TransformerBlockSettings& s, int64_t T, int64_t d, int64_t F, LayerPlan& p) {
    const bool attention_dropout = s.attention_dropout > 0.0f, residual_dropout = s.residual_dropout > 0.0f;
    // Forward: norm1, q, k, v, heads out, merged, attention projection, h, norm2, MLP out; qkv.
    const int64_t saved_d = 10 + 3 + (s.qk_norm ? 2 : 0) + (residual_dropout ? 2 : 0);
    const int64_t saved_f = s.swiglu ? 4 : 2;                   // hidden in and out (+ up, sigmoid)
    const int64_t saved_attention = attention_dropout ? 3 : 1;  // probabilities (+ mask, dropped)
    const int64_t norm_rows = saturating_mul(T, 2 + (s.qk_norm ? 2 * s.heads : 0));
    // Backward: dq, dk, dv, dheads, dmerged, dnorm, dh (+ dnorm2 for SwiGLU, dbranch); dqkv.
    const int64_t backward_d = 7 + 3 + (s.swiglu ? 1 : 0) + (residual_dropout ? 1 : 0);
    const int64_t backward_f = s.swiglu ? 2 : 1;
    const int64_t td = saturating_mul(T, d), tf = saturating_mul(T, F);
    const int64_t attention = saturating_mul(s.heads, saturating_mul(T, T));
    p.saved = saturating_add(
        saturating_add(saturating_mul(saved_d, td), saturating_mul(saved_f, tf)),
        saturating_add(saturating_mul(saved_attention, attention), saturating_mul(2, norm_rows)));
    p.backward = saturating_add(
        saturating_add(saturating_mul(backward_d, td), saturating_mul(backward_f, tf)), attention);
    const std::string t = std::to_string(T), heads = std::to_string(s.heads) + " heads × " + t + "²";
    const std::string td_text = " × [" + t + " × " + std::to_string(d) + "]";
    const std::string tf_text = " × [" + t + " × " + std::to_string(F) + "]";
    p.saved_detail = std::to_string(saved_attention) + " × " + heads + " attention probabilities" +
                     (attention_dropout ? " (with the dropout mask and the dropped copy)" : "") + " + " +
                     std::to_string(saved_d) + td_text + " + " + std::to_string(saved_f) + tf_text + " + " +
                     size_text(saturating_mul(2, norm_rows)) + " norm statistics";
    p.backward_detail = heads + " attention gradients + " + std::to_string(backward_d) + td_text + " + " +
                        std::to_string(backward_f) + tf_text;
}

}  // namespace

TransformerBlock::TransformerBlock(const TransformerBlockSettings& settings) : settings_(settings) {}

int64_t TransformerBlock::hidden_width(const TransformerBlockSettings& s, int64_t d) {
    const int64_t gelu = saturating_mul(s.mlp_ratio, d);
    if (!s.swiglu) return gelu;
    const int64_t two_thirds = saturating_mul(gelu, 2) / 3 + (saturating_mul(gelu, 2) % 3 ? 1 : 0);
    return saturating_mul((saturating_add(two_thirds, 7)) / 8, 8);
}

LayerPlan TransformerBlock::plan(const Shape& input) const {
    if (input.size() != 2)
        throw ShapeError("expects a sequence [T × d] (positions × features), gets " + shape_to_string(input) +
                         "; put an Embedding before it");
    const int64_t T = input[0], d = input[1];
    if (d % settings_.heads != 0) throw ShapeError(heads_error(d, settings_.heads));
    const int64_t F = hidden_width(settings_, d), hs = d / settings_.heads;
    const bool norm_bias = settings_.bias && settings_.norm == NormKind::LayerNorm;
    const int64_t norm = saturating_mul(norm_bias ? 2 : 1, d);
    const int64_t bias = settings_.bias ? 1 : 0;
    int64_t n = saturating_mul(2, norm);
    n = saturating_add(n, saturating_mul(3 * d, saturating_add(d, bias)));  // attn.qkv
    n = saturating_add(n, saturating_mul(d, saturating_add(d, bias)));      // attn.out
    if (settings_.qk_norm) n = saturating_add(n, 2 * hs);
    const int64_t up_matrices = settings_.swiglu ? 2 : 1;
    n = saturating_add(n, saturating_mul(up_matrices, saturating_mul(F, saturating_add(d, bias))));
    n = saturating_add(n, saturating_add(saturating_mul(d, F), bias * d));  // mlp.fc2
    LayerPlan p;
    p.output = input;
    p.parameters = n;
    plan_kept_values(settings_, T, d, F, p);
    return p;
}

void TransformerBlock::size_norm(Norm& n, const std::string& name, int64_t width, bool with_bias) {
    n.gain.name = name + ".weight";
    n.gain.value.resize({width});
    n.gain.grad.resize({width});
    n.gain.weight_decay = false;
    n.gain.keeps_fp32 = true;
    n.bias = Parameter();
    if (!with_bias) return;
    n.bias.name = name + ".bias";
    n.bias.value.resize({width});
    n.bias.grad.resize({width});
    n.bias.weight_decay = false;
    n.bias.keeps_fp32 = true;
}

void TransformerBlock::size_projection(Projection& p, const std::string& name, size_t gemm, int64_t out,
                                       int64_t in) {
    p.gemm = gemm;
    p.weight.name = name + ".weight";
    p.weight.value.resize({out, in});
    p.weight.grad.resize({out, in});
    p.bias = Parameter();
    if (!settings_.bias) return;
    p.bias.name = name + ".bias";
    p.bias.value.resize({out});
    p.bias.grad.resize({out});
    p.bias.weight_decay = false;
}

Shape TransformerBlock::build(const Shape& input) {
    LayerPlan p = plan(input);
    tokens_ = input[0];
    d_ = input[1];
    hidden_ = hidden_width(settings_, d_);
    const bool norm_bias = settings_.bias && settings_.norm == NormKind::LayerNorm;
    size_norm(norm1_, "ln1", d_, norm_bias);
    size_norm(norm2_, "ln2", d_, norm_bias);
    size_projection(qkv_, "attn.qkv", kQkv, 3 * d_, d_);
    size_projection(out_, "attn.out", kOut, d_, d_);
    if (settings_.qk_norm) {
        size_norm(q_norm_, "attn.q_norm", d_ / settings_.heads, false);
        size_norm(k_norm_, "attn.k_norm", d_ / settings_.heads, false);
    }
    if (settings_.swiglu) {
        size_projection(gate_, "mlp.gate", kGate, hidden_, d_);
        size_projection(up_, "mlp.up", kUp, hidden_, d_);
    } else {
        size_projection(fc1_, "mlp.fc1", kFc1, hidden_, d_);
    }
    size_projection(fc2_, "mlp.fc2", fc2_gemm(settings_), d_, hidden_);
    return std::move(p.output);
}

void TransformerBlock::init(Rng& rng) {
    const float std = static_cast<float>(kInitStd100) / 100.0f;
    for (Parameter* p : parameters()) {
        const bool gain = p->keeps_fp32 && p->name.ends_with(".weight");
        for (float& v : p->value.span()) v = gain ? 1.0f : p->value.rank() == 2 ? std * rng.normal() : 0.0f;
    }
}

std::vector<Parameter*> TransformerBlock::parameters() {
    std::vector<Parameter*> all;
    auto add_norm = [&](Norm& n) {
        all.push_back(&n.gain);
        if (!n.bias.value.empty()) all.push_back(&n.bias);
    };
    auto add_projection = [&](Projection& p) {
        all.push_back(&p.weight);
        if (!p.bias.value.empty()) all.push_back(&p.bias);
    };
    add_norm(norm1_);
    add_projection(qkv_);
    if (settings_.qk_norm) {
        add_norm(q_norm_);
        add_norm(k_norm_);
    }
    add_projection(out_);
    add_norm(norm2_);
    if (settings_.swiglu) {
        add_projection(gate_);
        add_projection(up_);
    } else {
        add_projection(fc1_);
    }
    add_projection(fc2_);
    return all;
}

std::vector<NamedGemm> TransformerBlock::gemms() const {
    std::vector<NamedGemm> g{{"attn.qkv"}, {"attn.scores", true}, {"attn.values", true}, {"attn.out"}};
    if (settings_.swiglu) {
        g.push_back({"mlp.gate"});
        g.push_back({"mlp.up"});
    } else {
        g.push_back({"mlp.fc1"});
    }
    g.push_back({"mlp.fc2"});
    return g;
}

HeadLayout TransformerBlock::head_layout(int64_t samples, int64_t ld, int64_t col0) const {
    return {samples, tokens_, settings_.heads, d_ / settings_.heads, ld, col0};
}

AttentionShape TransformerBlock::attention_shape(int64_t samples) const {
    return {samples * settings_.heads, tokens_, d_ / settings_.heads};
}

AttentionGemms TransformerBlock::attention_gemms() const { return {kScores, kValues}; }

void TransformerBlock::project(LayerContext& ctx, Projection& p, const Tensor& in, Tensor& out) {
    const int64_t n_out = p.weight.value.dim(0), n_in = p.weight.value.dim(1);
    const int64_t rows = in.numel() / n_in;
    SelectGemm use(ctx, p.gemm);
    const float* xq =
        ctx.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, in.data(), rows, n_in);
    const float* wq = ctx.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Cols,
                                  p.weight.forward_value().data(), n_out, n_in);
    out.resize({rows, n_out});
    ctx.gemm(false, true, rows, n_out, n_in, xq, n_in, wq, n_in, out.data(), n_out);
    if (!p.bias.value.empty())
        ctx.backend.add_bias_rows(out.data(), p.bias.forward_value().data(), rows, n_out);
}

// As Linear::backward: dW = doutᵀ · in sums over the rows; din = dout · W.
void TransformerBlock::project_backward(LayerContext& ctx, Projection& p, const Tensor& in,
                                        const Tensor& dout, Tensor* din) {
    const int64_t n_out = p.weight.value.dim(0), n_in = p.weight.value.dim(1);
    const int64_t rows = in.numel() / n_in;
    SelectGemm use(ctx, p.gemm);
    const float* dy_w =
        ctx.operand(GemmOperand::OutputGrad, GemmPass::WeightGrad, SumAlong::Rows, dout.data(), rows, n_out);
    const float* x_w =
        ctx.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, in.data(), rows, n_in);
    ctx.gemm(true, false, n_out, n_in, rows, dy_w, n_out, x_w, n_in, p.weight.grad.data(), n_in);
    if (!p.bias.value.empty()) ctx.backend.bias_grad_rows(dout.data(), p.bias.grad.data(), rows, n_out);
    if (!din) return;
    din->resize({rows, n_in});
    const float* dy_d =
        ctx.operand(GemmOperand::OutputGrad, GemmPass::DataGrad, SumAlong::Cols, dout.data(), rows, n_out);
    const float* w_d = ctx.operand(GemmOperand::Weight, GemmPass::DataGrad, SumAlong::Rows,
                                   p.weight.forward_value().data(), n_out, n_in);
    ctx.gemm(false, false, rows, n_in, n_out, dy_d, n_out, w_d, n_in, din->data(), n_in);
}

void TransformerBlock::norm_forward(Norm& n, const Tensor& in, int64_t width, Tensor& out) const {
    const RowNormShape shape{settings_.norm, in.numel() / width, width, settings_.eps};
    out.resize(in.shape());
    n.mean.resize({shape.rows});
    n.rstd.resize({shape.rows});
    row_norm_forward(shape, in.data(), n.gain.value.data(),
                     n.bias.value.empty() ? nullptr : n.bias.value.data(), out.data(), n.mean.data(),
                     n.rstd.data());
}

void TransformerBlock::norm_backward(Norm& n, const Tensor& in, int64_t width, const Tensor& dout,
                                     Tensor& din) const {
    const RowNormShape shape{settings_.norm, in.numel() / width, width, settings_.eps};
    if (&din != &dout) din.resize(in.shape());
    row_norm_backward(shape, in.data(), n.gain.value.data(), n.mean.data(), n.rstd.data(), dout.data(),
                      din.data(), n.gain.grad.data(), n.bias.value.empty() ? nullptr : n.bias.grad.data());
}

void TransformerBlock::dropout_forward(LayerContext& ctx, Tensor& values, Tensor& mask) const {
    const float p = settings_.residual_dropout;
    if (!(ctx.training && p > 0.0f && ctx.rng)) {
        mask = Tensor();
        return;
    }
    mask.resize(values.shape());
    const float keep_scale = 1.0f / (1.0f - p);
    for (float& m : mask.span()) m = ctx.rng->uniform() < p ? 0.0f : keep_scale;
    ctx.backend.multiply(values.data(), mask.data(), values.data(), values.numel());
}

void TransformerBlock::forward(LayerContext& ctx, const Tensor& x, Tensor& y) {
    // A sequence may be shorter than the one the block was built for (sampling a prompt of a few
    // tokens): T is the input's; causality makes its outputs those of the longer sequence's prefix.
    if (x.rank() != 3 || x.dim(2) != d_ || x.dim(1) < 1)
        throw ShapeError("expects [batch × T × " + std::to_string(d_) + "], gets " +
                         shape_to_string(x.shape()));
    tokens_ = x.dim(1);
    const int64_t samples = x.dim(0);
    norm_forward(norm1_, x, d_, norm1_.out);
    store(ctx, norm1_.out);
    run_attention(ctx, samples);
    add(x, attn_proj_, h_);
    if (!ctx.fp32_residual) store(ctx, h_);
    norm_forward(norm2_, h_, d_, norm2_.out);
    store(ctx, norm2_.out);
    run_mlp(ctx);
    add(h_, mlp_out_, y);  // the Network stores y as the residual stream
    if (ctx.stability) {
        // The stream as the block hands it over, before the Network's rounding to its format.
        const ResidualStability r = residual_stability(y.data(), samples * tokens_, d_);
        attention_stability_.residual_rms = r.rms;
        attention_stability_.outlier_ratio = r.outlier_ratio;
        ctx.stability->blocks.emplace_back(this, attention_stability_);
    }
}

void TransformerBlock::run_attention(LayerContext& ctx, int64_t samples) {
    project(ctx, qkv_, norm1_.out, qkv_out_);
    store(ctx, qkv_out_);
    const AttentionShape shape = attention_shape(samples);
    const Shape heads{shape.sequences, shape.tokens, shape.head_size};
    for (Tensor* t : {&q_, &k_, &v_, &heads_out_}) t->resize(heads);
    Tensor& q_split = settings_.qk_norm ? q_raw_ : q_;
    Tensor& k_split = settings_.qk_norm ? k_raw_ : k_;
    q_split.resize(heads);
    k_split.resize(heads);
    split_heads(head_layout(samples, 3 * d_, 0), qkv_out_.data(), q_split.data());
    split_heads(head_layout(samples, 3 * d_, d_), qkv_out_.data(), k_split.data());
    split_heads(head_layout(samples, 3 * d_, 2 * d_), qkv_out_.data(), v_.data());
    if (settings_.qk_norm) {
        norm_forward(q_norm_, q_raw_, shape.head_size, q_);
        norm_forward(k_norm_, k_raw_, shape.head_size, k_);
        store(ctx, q_);
        store(ctx, k_);
    }
    AttentionStability measured{.heads = settings_.heads};
    mpwb::attention_forward(ctx, attention_gemms(), shape, settings_.attention_dropout, q_.data(), k_.data(),
                            v_.data(), heads_out_.data(), attention_, ctx.stability ? &measured : nullptr);
    attention_stability_ = {.attn_logit_max = measured.logit_max,
                            .attn_entropy_mean = measured.entropy_mean,
                            .attn_entropy_min = measured.entropy_min};
    merged_.resize({samples * tokens_, d_});
    merge_heads(head_layout(samples, d_, 0), heads_out_.data(), merged_.data());
    store(ctx, merged_);
    project(ctx, out_, merged_, attn_proj_);
    store(ctx, attn_proj_);
    dropout_forward(ctx, attn_proj_, attn_mask_);
}

void TransformerBlock::run_mlp(LayerContext& ctx) {
    if (settings_.swiglu) {
        // SwiGLU: silu(gate) ⊙ up, silu(g) = g · sigmoid(g) with the table's sigmoid.
        project(ctx, gate_, norm2_.out, hidden_in_);
        project(ctx, up_, norm2_.out, up_out_);
        store(ctx, hidden_in_);
        store(ctx, up_out_);
        gate_sigmoid_.resize(hidden_in_.shape());
        ctx.backend.activation_forward(Activation::Sigmoid, 0.0f, hidden_in_.data(), gate_sigmoid_.data(),
                                       hidden_in_.numel());
        hidden_act_.resize(hidden_in_.shape());
        const float* g = hidden_in_.data();
        const float* s = gate_sigmoid_.data();
        const float* u = up_out_.data();
        float* a = hidden_act_.data();
        parallel_for(hidden_act_.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) a[i] = g[i] * s[i] * u[i];
        });
    } else {
        project(ctx, fc1_, norm2_.out, hidden_in_);
        store(ctx, hidden_in_);
        hidden_act_.resize(hidden_in_.shape());
        ctx.backend.activation_forward(Activation::GELUTanh, 0.0f, hidden_in_.data(), hidden_act_.data(),
                                       hidden_in_.numel());
    }
    store(ctx, hidden_act_);
    project(ctx, fc2_, hidden_act_, mlp_out_);
    store(ctx, mlp_out_);
    dropout_forward(ctx, mlp_out_, mlp_mask_);
}

void TransformerBlock::backward(LayerContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy,
                                Tensor* dx) {
    const int64_t samples = x.dim(0);
    // y = h + drop(mlp(norm2(h))): dh = dy + norm2ᵀ(mlpᵀ(drop(dy))).
    const Tensor* dmlp = &dy;
    if (!mlp_mask_.empty()) {
        dbranch_.resize(dy.shape());
        ctx.backend.multiply(dy.data(), mlp_mask_.data(), dbranch_.data(), dy.numel());
        dmlp = &dbranch_;
    }
    run_mlp_backward(ctx, *dmlp, dnorm_);
    store(ctx, dnorm_);
    norm_backward(norm2_, h_, d_, dnorm_, dnorm_);
    add(dy, dnorm_, dh_);
    if (!ctx.fp32_residual) store(ctx, dh_);
    // h = x + drop(attn(norm1(x))): dx = dh + norm1ᵀ(attnᵀ(drop(dh))).
    const Tensor* dproj = &dh_;
    if (!attn_mask_.empty()) {
        dbranch_.resize(dh_.shape());
        ctx.backend.multiply(dh_.data(), attn_mask_.data(), dbranch_.data(), dh_.numel());
        dproj = &dbranch_;
    }
    run_attention_backward(ctx, samples, *dproj, dnorm_);
    store(ctx, dnorm_);
    norm_backward(norm1_, x, d_, dnorm_, dnorm_);
    if (dx) add(dh_, dnorm_, *dx);
}

void TransformerBlock::run_attention_backward(LayerContext& ctx, int64_t samples, const Tensor& dproj,
                                              Tensor& dnorm1) {
    project_backward(ctx, out_, merged_, dproj, &dmerged_);
    store(ctx, dmerged_);
    const AttentionShape shape = attention_shape(samples);
    const Shape heads{shape.sequences, shape.tokens, shape.head_size};
    for (Tensor* t : {&dheads_, &dq_, &dk_, &dv_}) t->resize(heads);
    split_heads(head_layout(samples, d_, 0), dmerged_.data(), dheads_.data());
    mpwb::attention_backward(ctx, attention_gemms(), shape, q_.data(), k_.data(), v_.data(), dheads_.data(),
                             dq_.data(), dk_.data(), dv_.data(), attention_);
    if (settings_.qk_norm) {
        norm_backward(q_norm_, q_raw_, shape.head_size, dq_, dq_);
        norm_backward(k_norm_, k_raw_, shape.head_size, dk_, dk_);
    }
    dqkv_.resize({samples * tokens_, 3 * d_});
    merge_heads(head_layout(samples, 3 * d_, 0), dq_.data(), dqkv_.data());
    merge_heads(head_layout(samples, 3 * d_, d_), dk_.data(), dqkv_.data());
    merge_heads(head_layout(samples, 3 * d_, 2 * d_), dv_.data(), dqkv_.data());
    store(ctx, dqkv_);
    project_backward(ctx, qkv_, norm1_.out, dqkv_, &dnorm1);
}

void TransformerBlock::run_mlp_backward(LayerContext& ctx, const Tensor& dmlp, Tensor& dnorm2) {
    project_backward(ctx, fc2_, hidden_act_, dmlp, &dhidden_);
    store(ctx, dhidden_);
    if (!settings_.swiglu) {
        ctx.backend.activation_backward(Activation::GELUTanh, 0.0f, hidden_in_.data(), hidden_act_.data(),
                                        dhidden_.data(), dhidden_.data(), dhidden_.numel());
        store(ctx, dhidden_);
        project_backward(ctx, fc1_, norm2_.out, dhidden_, &dnorm2);
        return;
    }
    // a = g σ(g) u: da/dg = u (σ + g σ (1 − σ)), da/du = g σ.
    dhidden2_.resize(dhidden_.shape());
    const float* g = hidden_in_.data();
    const float* s = gate_sigmoid_.data();
    const float* u = up_out_.data();
    float* dgate = dhidden_.data();
    float* dup = dhidden2_.data();
    parallel_for(dhidden_.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
            const float da = dgate[i];
            dgate[i] = da * u[i] * (s[i] + g[i] * s[i] * (1.0f - s[i]));
            dup[i] = da * g[i] * s[i];
        }
    });
    store(ctx, dhidden_);
    store(ctx, dhidden2_);
    project_backward(ctx, gate_, norm2_.out, dhidden_, &dnorm2);
    project_backward(ctx, up_, norm2_.out, dhidden2_, &dnorm2_);
    add(dnorm2, dnorm2_, dnorm2);
}

// The forward values of the members list (transformer_block.h); the backward scratch stays, sized
// for the training batch.
void TransformerBlock::release_saved() {
    for (Tensor* t :
         {&qkv_out_, &q_, &k_, &v_, &q_raw_, &k_raw_, &heads_out_, &merged_, &attn_proj_, &attn_mask_, &h_,
          &hidden_in_, &up_out_, &gate_sigmoid_, &hidden_act_, &mlp_out_, &mlp_mask_})
        *t = Tensor();
    for (Norm* n : {&norm1_, &norm2_, &q_norm_, &k_norm_}) n->mean = n->rstd = n->out = Tensor();
    attention_ = AttentionSaved();
}

nlohmann::json TransformerBlock::to_json() const {
    const TransformerBlockSettings defaults;
    const TransformerBlockSettings& s = settings_;
    nlohmann::json j{{"type", "TransformerBlock"}, {"heads", s.heads}};
    if (s.norm != defaults.norm) j["rmsnorm"] = s.norm == NormKind::RMSNorm;
    if (s.eps != defaults.eps) j["eps"] = float_as_json_double(s.eps);
    if (s.qk_norm) j["qk_norm"] = true;
    if (s.swiglu) j["swiglu"] = true;
    if (s.mlp_ratio != defaults.mlp_ratio) j["mlp_ratio"] = s.mlp_ratio;
    if (s.attention_dropout != 0.0f) j["attn_dropout"] = float_as_json_double(s.attention_dropout);
    if (s.residual_dropout != 0.0f) j["resid_dropout"] = float_as_json_double(s.residual_dropout);
    if (!s.bias) j["bias"] = false;
    return j;
}

namespace {

// The block as the exported script defines it: the same parameter names (ln1, attn.qkv,
// attn.q_norm, attn.k_norm, attn.out, ln2, mlp.fc1 or mlp.gate and mlp.up, mlp.fc2) and the same
// math, softmax in FP32 with the causal mask.
const char* const kBlockClass = R"py(class TransformerBlock(nn.Module):
    """MP Workbench's pre-norm decoder block: x + Attn(Norm(x)), then x + MLP(Norm(x)), with
    causal multi-head self-attention (optional QK-norm) and a GELU (tanh) or SwiGLU MLP."""

    class Norm(nn.Module):
        """LayerNorm (rms=False) or RMSNorm over the last dimension, with a gain and optional bias."""

        def __init__(self, width, rms, eps, bias):
            super().__init__()
            self.rms, self.eps = rms, eps
            self.weight = nn.Parameter(torch.ones(width))
            self.bias = nn.Parameter(torch.zeros(width)) if bias else None

        def forward(self, x):
            if self.rms:
                y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            else:
                centred = x - x.mean(-1, keepdim=True)
                y = centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + self.eps)
            y = y * self.weight
            return y if self.bias is None else y + self.bias

    def __init__(self, d, heads, hidden, rms=False, eps=1e-5, qk_norm=False, swiglu=False,
                 attn_dropout=0.0, resid_dropout=0.0, bias=True):
        super().__init__()
        self.heads, self.qk_norm, self.swiglu = heads, qk_norm, swiglu
        norm_bias = bias and not rms
        self.ln1 = TransformerBlock.Norm(d, rms, eps, norm_bias)
        self.attn = nn.Module()
        self.attn.qkv = nn.Linear(d, 3 * d, bias=bias)
        if qk_norm:
            self.attn.q_norm = TransformerBlock.Norm(d // heads, rms, eps, False)
            self.attn.k_norm = TransformerBlock.Norm(d // heads, rms, eps, False)
        self.attn.out = nn.Linear(d, d, bias=bias)
        self.ln2 = TransformerBlock.Norm(d, rms, eps, norm_bias)
        self.mlp = nn.Module()
        if swiglu:
            self.mlp.gate = nn.Linear(d, hidden, bias=bias)
            self.mlp.up = nn.Linear(d, hidden, bias=bias)
        else:
            self.mlp.fc1 = nn.Linear(d, hidden, bias=bias)
        self.mlp.fc2 = nn.Linear(hidden, d, bias=bias)
        self.attn_dropout = nn.Dropout(attn_dropout)
        self.resid_dropout = nn.Dropout(resid_dropout)

    def attention(self, x):
        batch, tokens, d = x.shape
        q, k, v = self.attn.qkv(x).split(d, dim=2)
        q, k, v = (t.view(batch, tokens, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.qk_norm:
            q, k = self.attn.q_norm(q), self.attn.k_norm(k)
        scores = (q @ k.transpose(-2, -1)).float() * (d // self.heads) ** -0.5
        causal = torch.ones(tokens, tokens, dtype=torch.bool, device=x.device).tril()
        p = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1).to(v.dtype)
        out = self.attn_dropout(p) @ v
        return self.attn.out(out.transpose(1, 2).reshape(batch, tokens, d))

    def feed_forward(self, x):
        if self.swiglu:
            return self.mlp.fc2(nn.functional.silu(self.mlp.gate(x)) * self.mlp.up(x))
        return self.mlp.fc2(nn.functional.gelu(self.mlp.fc1(x), approximate="tanh"))

    def forward(self, x):
        x = x + self.resid_dropout(self.attention(self.ln1(x)))
        return x + self.resid_dropout(self.feed_forward(self.ln2(x))))py";

}  // namespace

PytorchModule TransformerBlock::pytorch_module(const Shape&) const {
    const TransformerBlockSettings& s = settings_;
    const std::string expression =
        "TransformerBlock(" + std::to_string(d_) + ", " + std::to_string(s.heads) + ", " +
        std::to_string(hidden_) + ", rms=" + python_bool(s.norm == NormKind::RMSNorm) +
        ", eps=" + python_float(s.eps) + ", qk_norm=" + python_bool(s.qk_norm) +
        ", swiglu=" + python_bool(s.swiglu) + ", attn_dropout=" + python_float(s.attention_dropout) +
        ", resid_dropout=" + python_float(s.residual_dropout) + ", bias=" + python_bool(s.bias) + ")";
    return {expression, kBlockClass};
}

}  // namespace mpwb
