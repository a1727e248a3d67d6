// TransformerBlock: one pre-norm decoder block of a GPT, per sample [T, d] → [T, d]:
//   h = x + Dropout(Attn(Norm1(x))),   y = h + Dropout(MLP(Norm2(h)))
// with causal multi-head self-attention (one qkv projection, optional QK-norm per head over the
// head size, the output projection) and an MLP of GELU (tanh, GPT-2) or SwiGLU. The norms are
// row_norm's (LayerNorm or RMSNorm); the attention core is attention.h's.
//
// Its GEMMs are named (gemms()): attn.qkv, attn.scores, attn.values, attn.out, then mlp.fc1 and
// mlp.fc2 (GELU) or mlp.gate, mlp.up and mlp.fc2 (SwiGLU); each gets its own quantizer under a
// scaled recipe. Precision follows DESIGN.md ("Sequences and transformers"): the projections
// under the policy and recipe, softmax and norm statistics in FP32, every value the block keeps
// in the storage format, the residual stream too unless the context says fp32_residual; the norm
// gains keep FP32 (Parameter::keeps_fp32).
//
// Sizes: head size d / heads; the MLP's hidden width is ratio · d for GELU and, for SwiGLU,
// 2/3 · ratio · d rounded up to a multiple of 8 (LLaMA's rule, which keeps the parameter count
// of the GELU MLP), e.g. 344 for d 128 and ratio 4.
#pragma once
#include "core/nn/attention.h"
#include "core/nn/layer.h"
#include "core/nn/row_norm.h"
#include "core/nn/stability_values.h"

namespace mpwb {

struct TransformerBlockSettings {
    int64_t heads = 4;
    NormKind norm = NormKind::LayerNorm;
    float eps = 1e-5f;
    bool qk_norm = false;
    bool swiglu = false;  // false: GELU (tanh)
    int64_t mlp_ratio = 4;
    float attention_dropout = 0.0f;
    float residual_dropout = 0.0f;
    bool bias = true;  // the projections' biases and, for LayerNorm, the norms' biases
};

class TransformerBlock final : public Layer {
public:
    explicit TransformerBlock(const TransformerBlockSettings& settings);
    std::string kind() const override { return "TransformerBlock"; }
    LayerPlan plan(const Shape& input) const override;
    Shape build(const Shape& input) override;
    void init(Rng& rng) override;
    std::vector<Parameter*> parameters() override;
    bool runs_in_reduced_precision() const override { return true; }
    std::vector<NamedGemm> gemms() const override;
    bool writes_residual_stream() const override { return true; }
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    void release_saved() override;
    nlohmann::json to_json() const override;
    DeviceOp device_op() const override { return NoDeviceOp{}; }
    PytorchModule pytorch_module(const Shape& input) const override;

    const TransformerBlockSettings& settings() const { return settings_; }
    // The MLP's hidden width for model width d (see the file comment).
    static int64_t hidden_width(const TransformerBlockSettings& settings, int64_t d);

private:
    // A projection y = x · Wᵀ + b (W [out, in]) run as the layer's GEMM `gemm`.
    struct Projection {
        size_t gemm = 0;
        Parameter weight, bias;
    };
    struct Norm {
        Parameter gain, bias;  // bias empty for RMSNorm, QK-norm and LayerNorm without bias
        Tensor mean, rstd, out;
    };
    void run_attention(LayerContext& ctx, int64_t samples);
    void run_attention_backward(LayerContext& ctx, int64_t samples, const Tensor& dproj, Tensor& dnorm1);
    void run_mlp(LayerContext& ctx);
    void run_mlp_backward(LayerContext& ctx, const Tensor& dmlp, Tensor& dnorm2);
    void project(LayerContext& ctx, Projection& p, const Tensor& in, Tensor& out);
    // Weight and bias gradients, and din = dout · W when din is not null.
    void project_backward(LayerContext& ctx, Projection& p, const Tensor& in, const Tensor& dout,
                          Tensor* din);
    // out = Norm(in) over rows of `width`; din (may be dout) = its input gradient.
    void norm_forward(Norm& n, const Tensor& in, int64_t width, Tensor& out) const;
    void norm_backward(Norm& n, const Tensor& in, int64_t width, const Tensor& dout, Tensor& din) const;
    void size_norm(Norm& n, const std::string& name, int64_t width, bool with_bias);
    void size_projection(Projection& p, const std::string& name, size_t gemm, int64_t out, int64_t in);
    void dropout_forward(LayerContext& ctx, Tensor& values, Tensor& mask) const;
    HeadLayout head_layout(int64_t samples, int64_t ld, int64_t col0) const;
    AttentionShape attention_shape(int64_t samples) const;
    AttentionGemms attention_gemms() const;

    TransformerBlockSettings settings_;
    int64_t tokens_ = 0;  // T of the last forward pass (build: the planned T)
    int64_t d_ = 0, hidden_ = 0;
    Norm norm1_, norm2_, q_norm_, k_norm_;
    Projection qkv_, out_, fc1_, gate_, up_, fc2_;
    // Forward values kept for backward (rows = samples · T).
    Tensor qkv_out_, q_, k_, v_, q_raw_, k_raw_, heads_out_, merged_, attn_proj_, attn_mask_, h_;
    Tensor hidden_in_, up_out_, gate_sigmoid_, hidden_act_, mlp_out_, mlp_mask_;
    AttentionSaved attention_;
    BlockStability attention_stability_;  // a statistics step's attention indicators, until forward's end
    // Backward scratch.
    Tensor dqkv_, dq_, dk_, dv_, dheads_, dmerged_, dhidden_, dhidden2_, dnorm_, dnorm2_, dh_, dbranch_;
};

}  // namespace mpwb
