// Linear (fully connected) layer: y = x W^T + b with W [out, in], as PyTorch stores it. On a
// flat input [F] it maps features; on a sequence [T, d] it maps the last dimension of every
// position (rows = batch x T), so a language model's head is a Linear.
#pragma once
#include "core/nn/layer.h"

namespace mpwb {

class Linear final : public Layer {
public:
    Linear(int64_t out_features, int64_t in_features = 0, bool bias = true);
    std::string kind() const override { return "Linear"; }
    LayerPlan plan(const Shape& input) const override;
    Shape build(const Shape& input) override;
    void set_dataset_classes(int64_t classes) override { dataset_classes_ = classes; }
    void init(Rng& rng) override;
    std::vector<Parameter*> parameters() override;
    bool runs_in_reduced_precision() const override { return true; }
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override;
    DeviceOp device_op() const override { return LinearOp{has_bias_}; }
    PytorchModule pytorch_module(const Shape& input) const override;

private:
    // The resolved outputs once built; before, 0 when they are to be the dataset's classes.
    int64_t out_, in_;
    int64_t dataset_classes_ = 0;
    bool has_bias_;
    Parameter weight_, bias_;
};

}  // namespace mpwb
