// BatchNorm layer. Reads the FP32 master values of gamma and beta directly (never a reduced
// copy), as cuDNN's mixed-precision batch norm does.
#include "core/nn/batchnorm.h"

#include <cmath>

namespace mpwb {

BatchNorm::BatchNorm(float momentum, float eps) : momentum_(momentum), eps_(eps) {}

LayerPlan BatchNorm::plan(const Shape& input) const {
    if (input.size() != 1 && input.size() != 3)
        throw ShapeError("expects features [F] or an image [C x H x W], gets " + shape_to_string(input));
    return {input, saturating_mul(2, input[0]), 0};
}

Shape BatchNorm::build(const Shape& input) {
    (void)plan(input);
    channels_ = input[0];
    spatial_ = input.size() == 3 ? input[1] * input[2] : 1;
    gamma_.name = "gamma";
    beta_.name = "beta";
    for (Parameter* p : {&gamma_, &beta_}) {
        p->value.resize({channels_});
        p->grad.resize({channels_});
        p->weight_decay = false;
    }
    for (Tensor* t : {&running_mean_, &running_var_, &save_mean_, &save_invstd_}) t->resize({channels_});
    return input;
}

void BatchNorm::init(Rng&) {
    gamma_.value.fill(1.0f);
    beta_.value.fill(0.0f);
    running_mean_.fill(0.0f);
    running_var_.fill(1.0f);
}

void BatchNorm::forward(LayerContext& ctx, const Tensor& x, Tensor& y) {
    y.resize(x.shape());
    ctx.backend.batchnorm_forward(x.data(), y.data(), gamma_.value.data(), beta_.value.data(),
                                  running_mean_.data(), running_var_.data(), save_mean_.data(),
                                  save_invstd_.data(), x.dim(0), channels_, spatial_, momentum_, eps_,
                                  ctx.training);
}

void BatchNorm::backward(LayerContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    if (dx) dx->resize(x.shape());
    ctx.backend.batchnorm_backward(x.data(), dy.data(), gamma_.value.data(), save_mean_.data(),
                                   save_invstd_.data(), dx ? dx->data() : nullptr, gamma_.grad.data(),
                                   beta_.grad.data(), x.dim(0), channels_, spatial_);
}

nlohmann::json BatchNorm::to_json() const {
    return {{"type", "BatchNorm"},
            {"momentum", float_as_json_double(momentum_)},
            {"eps", float_as_json_double(eps_)}};
}

// BatchNorm1d over features, BatchNorm2d over the channels of an image; gamma and beta are
// PyTorch's weight and bias.
PytorchModule BatchNorm::pytorch_module(const Shape& input) const {
    return {"nn.BatchNorm" + std::string(input.size() == 3 ? "2d" : "1d") + "(" +
                std::to_string(input.at(0)) + ", eps=" + python_float(eps_) +
                ", momentum=" + python_float(momentum_) + ")",
            {},
            {{"gamma", "weight"}, {"beta", "bias"}}};
}

}  // namespace mpwb
