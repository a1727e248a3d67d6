// Linear layer. Initialisation follows PyTorch's default (uniform, bound 1/sqrt(fan_in)) so
// results can be compared with a PyTorch run of the same network.
#include "core/nn/linear.h"

#include <cmath>

namespace mpwb {

Linear::Linear(int64_t out_features, int64_t in_features, bool bias)
    : out_(out_features), in_(in_features), has_bias_(bias) {}

namespace {

// "out" 0 takes the dataset's classes; a network built without a dataset cannot resolve it.
int64_t resolved_outputs(int64_t out, int64_t dataset_classes) {
    if (out != 0) return out;
    if (dataset_classes <= 0)
        throw ShapeError(
            "\"out\" (outputs) is 0, which takes the dataset's classes, and no dataset gives them here; "
            "set \"out\"");
    return dataset_classes;
}

}  // namespace

// [F] → [out], or [T, d] → [T, out] acting on the last dimension. An image ([C, H, W]) asks
// for Flatten rather than being read as rows: nobody means a Linear along an image's width.
LayerPlan Linear::plan(const Shape& input) const {
    if (input.size() != 1 && input.size() != 2)
        throw ShapeError("expects a flat input of features or a sequence [T, d], gets " +
                         shape_to_string(input) + "; add Flatten before it");
    const int64_t width = input.back();
    if (in_ != 0 && in_ != width)
        throw ShapeError("expects " + std::to_string(in_) + " inputs, gets " + std::to_string(width));
    const int64_t out = resolved_outputs(out_, dataset_classes_);
    LayerPlan p;
    p.output = input;
    p.output.back() = out;
    p.parameters = saturating_add(saturating_mul(out, width), has_bias_ ? out : 0);
    return p;
}

Shape Linear::build(const Shape& input) {
    LayerPlan p = plan(input);
    in_ = input.back();
    out_ = p.output.back();
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

// Rows are the batch's samples, or its samples' positions: the GEMM is the same.
void Linear::forward(LayerContext& ctx, const Tensor& x, Tensor& y) {
    const int64_t n = x.numel() / in_;
    Shape out_shape = x.shape();
    out_shape.back() = out_;
    y.resize(std::move(out_shape));
    const float* xq = ctx.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, x.data(), n, in_);
    const float* wq = ctx.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Cols,
                                  weight_.forward_value().data(), out_, in_);
    ctx.gemm(false, true, n, out_, in_, xq, in_, wq, in_, y.data(), out_);
    if (has_bias_) ctx.backend.add_bias_rows(y.data(), bias_.forward_value().data(), n, out_);
}

// dw = dyᵀ · x sums over the batch (the operands' rows); dx = dy · w over out_features.
void Linear::backward(LayerContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    const int64_t n = x.numel() / in_;
    const float* dy_w =
        ctx.operand(GemmOperand::OutputGrad, GemmPass::WeightGrad, SumAlong::Rows, dy.data(), n, out_);
    const float* x_w =
        ctx.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, x.data(), n, in_);
    ctx.gemm(true, false, out_, in_, n, dy_w, out_, x_w, in_, weight_.grad.data(), in_);
    if (has_bias_) ctx.backend.bias_grad_rows(dy.data(), bias_.grad.data(), n, out_);
    if (dx) {
        dx->resize(x.shape());
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
