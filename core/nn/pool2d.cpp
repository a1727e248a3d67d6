// Pooling layers.
#include "core/nn/pool2d.h"

namespace mpwb {

Pool2d::Pool2d(Mode mode, int64_t kernel, int64_t stride, int64_t padding)
    : mode_(mode), kernel_(kernel), stride_(stride), padding_(padding) {
    // The registry checks each setting's range; this rule ties two of them.
    if (padding > kernel / 2)  // not padding * 2: a huge padding overflows
        throw ShapeError("needs 0 <= padding <= kernel/2, gets padding " + std::to_string(padding));
}

LayerPlan Pool2d::plan(const Shape& input) const {
    if (input.size() != 3)
        throw ShapeError("expects an image input [channels x height x width], gets " +
                         shape_to_string(input));
    const int64_t out_h = window_output(input[1], kernel_, stride_, padding_);
    const int64_t out_w = window_output(input[2], kernel_, stride_, padding_);
    if (out_h < 1 || out_w < 1)
        throw ShapeError("window " + std::to_string(kernel_) + " does not fit a " + std::to_string(input[1]) +
                         "x" + std::to_string(input[2]) + " input");
    return {{input[0], out_h, out_w}, 0, 0};
}

Shape Pool2d::build(const Shape& input) {
    LayerPlan p = plan(input);
    channels_ = input[0];
    in_h_ = input[1];
    in_w_ = input[2];
    return std::move(p.output);
}

PoolGeometry Pool2d::geometry(int64_t batch) const {
    PoolGeometry g;
    g.batch = batch;
    g.channels = channels_;
    g.in_h = in_h_;
    g.in_w = in_w_;
    g.kernel = kernel_;
    g.stride = stride_;
    g.padding = padding_;
    return g;
}

void Pool2d::forward(LayerContext& ctx, const Tensor& x, Tensor& y) {
    const auto g = geometry(x.dim(0));
    y.resize({g.batch, channels_, g.out_h(), g.out_w()});
    if (mode_ == Mode::Max) {
        argmax_.resize(static_cast<size_t>(y.numel()));
        ctx.backend.maxpool_forward(g, x.data(), y.data(), argmax_.data());
    } else {
        ctx.backend.avgpool_forward(g, x.data(), y.data());
    }
}

void Pool2d::backward(LayerContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    if (!dx) return;
    const auto g = geometry(x.dim(0));
    dx->resize(x.shape());
    if (mode_ == Mode::Max)
        ctx.backend.maxpool_backward(g, dy.data(), argmax_.data(), dx->data());
    else
        ctx.backend.avgpool_backward(g, dy.data(), dx->data());
}

nlohmann::json Pool2d::to_json() const {
    return {{"type", kind()}, {"kernel", kernel_}, {"stride", stride_}, {"padding", padding_}};
}

PytorchModule Pool2d::pytorch_module(const Shape&) const {
    return {"nn." + kind() + "(kernel_size=" + std::to_string(kernel_) +
            ", stride=" + std::to_string(stride_) + ", padding=" + std::to_string(padding_) + ")"};
}

}  // namespace mpwb
