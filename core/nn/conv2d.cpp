// Conv2d layer; the math is the backend's (im2col + GEMM on the CPU, cuDNN on the GPU).
#include "core/nn/conv2d.h"

#include <cmath>

namespace mpwb {

Conv2d::Conv2d(int64_t out_channels, int64_t kernel, int64_t stride, int64_t padding, int64_t in_channels,
               bool bias)
    : out_c_(out_channels),
      kernel_(kernel),
      stride_(stride),
      padding_(padding),
      in_c_(in_channels),
      has_bias_(bias) {}

LayerPlan Conv2d::plan(const Shape& input) const {
    if (input.size() != 3)
        throw ShapeError("expects an image input [channels x height x width], gets " +
                         shape_to_string(input));
    if (in_c_ != 0 && in_c_ != input[0])
        throw ShapeError("expects " + std::to_string(in_c_) + " input channels, gets " +
                         std::to_string(input[0]));
    const int64_t out_h = window_output(input[1], kernel_, stride_, padding_);
    const int64_t out_w = window_output(input[2], kernel_, stride_, padding_);
    if (out_h < 1 || out_w < 1)
        throw ShapeError("kernel " + std::to_string(kernel_) + " does not fit a " + std::to_string(input[1]) +
                         "x" + std::to_string(input[2]) + " input with padding " + std::to_string(padding_));
    const int64_t taps = saturating_mul(input[0], saturating_mul(kernel_, kernel_));  // in_c * k * k
    LayerPlan p;
    p.output = {out_c_, out_h, out_w};
    p.parameters = saturating_add(saturating_mul(out_c_, taps), has_bias_ ? out_c_ : 0);
    p.workspace = saturating_mul(taps, saturating_mul(out_h, out_w));
    return p;
}

Shape Conv2d::build(const Shape& input) {
    LayerPlan p = plan(input);
    in_c_ = input[0];
    in_h_ = input[1];
    in_w_ = input[2];
    weight_.name = "weight";
    bias_.name = "bias";
    weight_.value.resize({out_c_, in_c_, kernel_, kernel_});
    weight_.grad.resize(weight_.value.shape());
    if (has_bias_) {
        bias_.value.resize({out_c_});
        bias_.grad.resize({out_c_});
        bias_.weight_decay = false;
    }
    return std::move(p.output);
}

ConvGeometry Conv2d::geometry(int64_t batch) const {
    ConvGeometry g;
    g.batch = batch;
    g.in_channels = in_c_;
    g.in_h = in_h_;
    g.in_w = in_w_;
    g.out_channels = out_c_;
    g.kernel_h = g.kernel_w = kernel_;
    g.stride = stride_;
    g.padding = padding_;
    return g;
}

void Conv2d::init(Rng& rng) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(in_c_ * kernel_ * kernel_));
    for (float& w : weight_.value.span()) w = rng.uniform(-bound, bound);
    if (has_bias_)
        for (float& b : bias_.value.span()) b = rng.uniform(-bound, bound);
}

std::vector<Parameter*> Conv2d::parameters() {
    if (has_bias_) return {&weight_, &bias_};
    return {&weight_};
}

// Under a scaled recipe the operands are quantized as tensors, blocks running along each
// sample's (or each filter's) contiguous values, before the backend's im2col: exact for the
// per-tensor recipes, and for block recipes the filter blocks match the GEMM's summed dimension
// while the activation blocks follow the tensor's layout (Transformer Engine has no FP8
// convolution to follow).
void Conv2d::forward(LayerContext& ctx, const Tensor& x, Tensor& y) {
    const auto g = geometry(x.dim(0));
    y.resize({g.batch, out_c_, g.out_h(), g.out_w()});
    const int64_t taps = in_c_ * kernel_ * kernel_;
    const float* xq = ctx.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, x.data(), g.batch,
                                  x.numel() / g.batch);
    const float* wq = ctx.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Cols,
                                  weight_.forward_value().data(), out_c_, taps);
    ctx.backend.conv2d_forward(g, xq, wq, has_bias_ ? bias_.forward_value().data() : nullptr, y.data(),
                               ctx.gemm_operands);
}

void Conv2d::backward(LayerContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    const auto g = geometry(x.dim(0));
    if (dx) dx->resize(x.shape());
    const int64_t taps = in_c_ * kernel_ * kernel_;
    const float* xq = ctx.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Cols, x.data(), g.batch,
                                  x.numel() / g.batch);
    const float* wq = ctx.operand(GemmOperand::Weight, GemmPass::DataGrad, SumAlong::Cols,
                                  weight_.forward_value().data(), out_c_, taps);
    const float* dyq = ctx.operand(GemmOperand::OutputGrad, GemmPass::DataGrad, SumAlong::Cols, dy.data(),
                                   g.batch, dy.numel() / g.batch);
    // The bias gradient sums the unquantized dy, as the recipes keep bias math in high precision.
    const bool bias_from_dy = has_bias_ && dyq != dy.data();
    if (ctx.quantizers && !ctx.quantizers->shares(GemmPass::DataGrad, GemmPass::WeightGrad)) {
        // Precision rules give the two backward GEMMs different recipes: each reads its own dy,
        // so the backend runs twice, the data-gradient call into a discarded weight gradient.
        const float* dy_w = ctx.operand(GemmOperand::OutputGrad, GemmPass::WeightGrad, SumAlong::Cols,
                                        dy.data(), g.batch, dy.numel() / g.batch);
        ctx.backend.conv2d_backward(g, xq, wq, dy_w, nullptr, weight_.grad.data(), nullptr,
                                    ctx.gemm_operands);
        if (dx) {
            std::vector<float> discarded(static_cast<size_t>(weight_.grad.numel()));
            ctx.backend.conv2d_backward(g, xq, wq, dyq, dx->data(), discarded.data(), nullptr,
                                        ctx.gemm_operands);
        }
        if (has_bias_)
            ctx.backend.bias_grad_channels(dy.data(), bias_.grad.data(), g.batch, out_c_,
                                           g.out_h() * g.out_w());
        return;
    }
    ctx.backend.conv2d_backward(g, xq, wq, dyq, dx ? dx->data() : nullptr, weight_.grad.data(),
                                has_bias_ && !bias_from_dy ? bias_.grad.data() : nullptr, ctx.gemm_operands);
    if (bias_from_dy)
        ctx.backend.bias_grad_channels(dy.data(), bias_.grad.data(), g.batch, out_c_, g.out_h() * g.out_w());
}

nlohmann::json Conv2d::to_json() const {
    nlohmann::json j{{"type", "Conv2d"},
                     {"out_channels", out_c_},
                     {"kernel", kernel_},
                     {"stride", stride_},
                     {"padding", padding_}};
    if (!has_bias_) j["bias"] = false;
    return j;
}

PytorchModule Conv2d::pytorch_module(const Shape&) const {
    return {"nn.Conv2d(" + std::to_string(in_c_) + ", " + std::to_string(out_c_) +
            ", kernel_size=" + std::to_string(kernel_) + ", stride=" + std::to_string(stride_) +
            ", padding=" + std::to_string(padding_) + ", bias=" + python_bool(has_bias_) + ")"};
}

}  // namespace mpwb
