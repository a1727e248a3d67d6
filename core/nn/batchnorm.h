// Batch normalisation over features ([N, F]) or channels ([N, C, H, W]). Statistics and the
// affine parameters stay FP32 in every policy, following the autocast rule.
#pragma once
#include "core/nn/layer.h"

namespace mpwb {

class BatchNorm final : public Layer {
public:
    explicit BatchNorm(float momentum = 0.1f, float eps = 1e-5f);
    std::string kind() const override { return "BatchNorm"; }
    LayerPlan plan(const Shape& input) const override;
    Shape build(const Shape& input) override;
    void init(Rng& rng) override;
    std::vector<Parameter*> parameters() override { return {&gamma_, &beta_}; }
    std::vector<Tensor*> buffers() override { return {&running_mean_, &running_var_}; }
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override;
    DeviceOp device_op() const override { return BatchNormOp{momentum_, eps_}; }
    PytorchModule pytorch_module(const Shape& input) const override;

    float momentum() const { return momentum_; }
    float eps() const { return eps_; }

private:
    float momentum_, eps_;
    int64_t channels_ = 0, spatial_ = 1;
    Parameter gamma_, beta_;
    Tensor running_mean_, running_var_, save_mean_, save_invstd_;
};

}  // namespace mpwb
