// Activations, Flatten and Dropout.
#include "core/nn/simple_layers.h"

#include <cmath>

namespace mpwb {

ActivationLayer::ActivationLayer(Activation kind, float slope) : activation_(kind), slope_(slope) {}

std::string ActivationLayer::kind() const { return activation_info(activation_).name; }

void ActivationLayer::forward(LayerContext& ctx, const Tensor& x, Tensor& y) {
    y.resize(x.shape());
    ctx.backend.activation_forward(activation_, slope_, x.data(), y.data(), x.numel());
}

void ActivationLayer::backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                               Tensor* dx) {
    if (!dx) return;
    dx->resize(x.shape());
    ctx.backend.activation_backward(activation_, slope_, x.data(), y.data(), dy.data(), dx->data(),
                                    x.numel());
}

nlohmann::json ActivationLayer::to_json() const {
    nlohmann::json j{{"type", kind()}};
    if (activation_info(activation_).has_slope) j["slope"] = float_as_json_double(slope_);
    return j;
}

// The table's module, with the slope where it says "{slope}".
PytorchModule ActivationLayer::pytorch_module(const Shape&) const {
    std::string module = activation_info(activation_).pytorch;
    const std::string placeholder = "{slope}";
    if (const size_t at = module.find(placeholder); at != std::string::npos)
        module.replace(at, placeholder.size(), python_float(slope_));
    return {module};
}

void Flatten::forward(LayerContext&, const Tensor& x, Tensor& y) {
    y = x;
    y.resize({x.dim(0), x.numel() / x.dim(0)});
}

void Flatten::backward(LayerContext&, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    if (!dx) return;
    *dx = dy;
    dx->resize(x.shape());
}

Dropout::Dropout(float p) : p_(p) {}

void Dropout::forward(LayerContext& ctx, const Tensor& x, Tensor& y) {
    mask_active_ = ctx.training && p_ > 0.0f && ctx.rng;
    if (!mask_active_) {
        y = x;
        return;
    }
    mask_.resize(x.shape());
    const float keep_scale = 1.0f / (1.0f - p_);
    for (float& m : mask_.span()) m = ctx.rng->uniform() < p_ ? 0.0f : keep_scale;
    y.resize(x.shape());
    ctx.backend.multiply(x.data(), mask_.data(), y.data(), x.numel());
}

void Dropout::backward(LayerContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    if (!dx) return;
    if (!mask_active_) {
        *dx = dy;
        return;
    }
    dx->resize(x.shape());
    ctx.backend.multiply(dy.data(), mask_.data(), dx->data(), x.numel());
}

}  // namespace mpwb
