// The LayerNorm and RMSNorm layer kinds: normalisation over the last dimension of a flat [d] or
// sequence [T, d] input, with an optional learned gain (and, for LayerNorm, bias). One class for
// both kinds, as the math is one (core/nn/row_norm.h); this file adds only what makes it a layer:
// its parameters, the statistics kept for the backward pass and its PyTorch module.
#pragma once
#include "core/nn/layer.h"
#include "core/nn/row_norm.h"

namespace mpwb {

class NormLayer final : public Layer {
public:
    // bias: LayerNorm only (RMSNorm has none); affine false means neither gain nor bias.
    NormLayer(NormKind kind, float eps, bool affine, bool bias);
    std::string kind() const override { return kind_ == NormKind::LayerNorm ? "LayerNorm" : "RMSNorm"; }
    LayerPlan plan(const Shape& input) const override;
    Shape build(const Shape& input) override;
    void init(Rng& rng) override;
    std::vector<Parameter*> parameters() override;
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override;
    DeviceOp device_op() const override { return NoDeviceOp{}; }
    PytorchModule pytorch_module(const Shape& input) const override;

private:
    bool has_bias() const { return affine_ && bias_on_ && kind_ == NormKind::LayerNorm; }
    RowNormShape row_shape(const Tensor& x) const;

    NormKind kind_;
    float eps_;
    bool affine_, bias_on_;
    int64_t d_ = 0;
    Parameter gain_, bias_;
    Tensor mean_, rstd_;  // one per row of the last forward pass, for backward
};

}  // namespace mpwb
