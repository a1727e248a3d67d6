// Layers without weights of their own: activations (one class for every entry of the activation
// table, core/backend/activations.h), Flatten, Dropout and Identity.
#pragma once
#include "core/nn/layer.h"

namespace mpwb {

class ActivationLayer final : public Layer {
public:
    explicit ActivationLayer(Activation kind, float slope = 0.01f);
    std::string kind() const override;
    LayerPlan plan(const Shape& input) const override { return {input, 0, 0}; }
    Shape build(const Shape& input) override { return input; }
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override;
    DeviceOp device_op() const override { return ActivationOp{activation_, slope_}; }
    PytorchModule pytorch_module(const Shape& input) const override;

    float slope() const { return slope_; }  // used by the entries with has_slope only

private:
    Activation activation_;
    float slope_;
};

class Flatten final : public Layer {
public:
    std::string kind() const override { return "Flatten"; }
    LayerPlan plan(const Shape& input) const override {
        return {{checked_product(input).value_or(kInt64Max)}, 0, 0};
    }
    Shape build(const Shape& input) override { return plan(input).output; }
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override { return {{"type", "Flatten"}}; }
    DeviceOp device_op() const override { return ReshapeOp{}; }
    PytorchModule pytorch_module(const Shape&) const override { return {"nn.Flatten()"}; }
};

// Passes its input through: a placeholder where a layer may or may not be (a sweep's "none").
// Not final: the tests' kind without a device op is an Identity (tests/nn/host_only_layer.h).
class Identity : public Layer {
public:
    std::string kind() const override { return "Identity"; }
    LayerPlan plan(const Shape& input) const override { return {input, 0, 0}; }
    Shape build(const Shape& input) override { return input; }
    void forward(LayerContext&, const Tensor& x, Tensor& y) override { y = x; }
    void backward(LayerContext&, const Tensor&, const Tensor&, const Tensor& dy, Tensor* dx) override {
        if (dx) *dx = dy;
    }
    nlohmann::json to_json() const override { return {{"type", "Identity"}}; }
    DeviceOp device_op() const override { return ReshapeOp{}; }
    PytorchModule pytorch_module(const Shape&) const override { return {"nn.Identity()"}; }
};

class Dropout final : public Layer {
public:
    explicit Dropout(float p);
    std::string kind() const override { return "Dropout"; }
    LayerPlan plan(const Shape& input) const override { return {input, 0, 0}; }
    Shape build(const Shape& input) override { return input; }
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override { return {{"type", "Dropout"}, {"p", float_as_json_double(p_)}}; }
    DeviceOp device_op() const override { return DropoutOp{p_}; }
    PytorchModule pytorch_module(const Shape&) const override {
        return {"nn.Dropout(p=" + python_float(p_) + ")"};
    }

    float p() const { return p_; }  // drop probability

private:
    float p_;
    Tensor mask_;
    bool mask_active_ = false;
};

}  // namespace mpwb
