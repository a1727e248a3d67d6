// Linear layer. Initialisation follows PyTorch's default (uniform, bound 1/sqrt(fan_in)) so
// results can be compared with a PyTorch run of the same network.
#include "core/nn/linear.h"

#include <cmath>

namespace mpwb {

Linear::Linear(int64_t out_features, int64_t in_features, bool bias)
    : out_(out_features), in_(in_features), has_bias_(bias) {}

LayerPlan Linear::plan(const Shape& input) const {
    if (input.size() != 1)
        throw ShapeError("expects a flat input of features, gets " + shape_to_string(input) +
                         "; add Flatten before it");
    if (in_ != 0 && in_ != input[0])
        throw ShapeError("expects " + std::to_string(in_) + " inputs, gets " + std::to_string(input[0]));
    LayerPlan p;
    p.output = {out_};
    p.parameters = saturating_add(saturating_mul(out_, input[0]), has_bias_ ? out_ : 0);
    return p;
}

Shape Linear::build(const Shape& input) {
    LayerPlan p = plan(input);
    in_ = input[0];
    weight_.name = "weight";
    bias_.name = "bias";
    weight_.value.resize({out_, in_});
    weight_.grad.resize({out_, in_});
    if (has_bias_) {
        bias_.value.resize({out_});
        bias_.grad.resize({out_});
        bias_.weight_decay = false;
    }
    return std::move(p.output);
}

void Linear::init(Rng& rng) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(in_));
    for (float& w : weight_.value.span()) w = rng.uniform(-bound, bound);
    if (has_bias_)
        for (float& b : bias_.value.span()) b = rng.uniform(-bound, bound);
}

std::vector<Parameter*> Linear::parameters() {
    if (has_bias_) return {&weight_, &bias_};
    return {&weight_};
}

void Linear::forward(LayerContext& ctx, const Tensor& x, Tensor& y) {
    const int64_t n = x.dim(0);
    y.resize({n, out_});
    const float* xq = ctx.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, x.data(), n, in_);
    const float* wq = ctx.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Cols,
                                  weight_.forward_value().data(), out_, in_);
    ctx.gemm(false, true, n, out_, in_, xq, in_, wq, in_, y.data(), out_);
    if (has_bias_) ctx.backend.add_bias_rows(y.data(), bias_.forward_value().data(), n, out_);
}

// dw = dyᵀ · x sums over the batch (the operands' rows); dx = dy · w over out_features.
void Linear::backward(LayerContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    const int64_t n = x.dim(0);
    const float* dy_w =
        ctx.operand(GemmOperand::OutputGrad, GemmPass::WeightGrad, SumAlong::Rows, dy.data(), n, out_);
    const float* x_w =
        ctx.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, x.data(), n, in_);
    ctx.gemm(true, false, out_, in_, n, dy_w, out_, x_w, in_, weight_.grad.data(), in_);
    if (has_bias_) ctx.backend.bias_grad_rows(dy.data(), bias_.grad.data(), n, out_);
    if (dx) {
        dx->resize({n, in_});
        const float* dy_d =
            ctx.operand(GemmOperand::OutputGrad, GemmPass::DataGrad, SumAlong::Cols, dy.data(), n, out_);
        const float* w_d = ctx.operand(GemmOperand::Weight, GemmPass::DataGrad, SumAlong::Rows,
                                       weight_.forward_value().data(), out_, in_);
        ctx.gemm(false, false, n, in_, out_, dy_d, out_, w_d, in_, dx->data(), in_);
    }
}

nlohmann::json Linear::to_json() const {
    nlohmann::json j{{"type", "Linear"}, {"out", out_}};
    if (!has_bias_) j["bias"] = false;
    return j;
}

PytorchModule Linear::pytorch_module(const Shape&) const {
    return {"nn.Linear(" + std::to_string(in_) + ", " + std::to_string(out_) +
            ", bias=" + python_bool(has_bias_) + ")"};
}

}  // namespace mpwb
