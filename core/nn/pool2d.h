// Max and average pooling over NCHW inputs with square windows.
#pragma once
#include <vector>

#include "core/nn/layer.h"

namespace mpwb {

class Pool2d final : public Layer {
public:
    enum class Mode { Max, Average };
    Pool2d(Mode mode, int64_t kernel, int64_t stride, int64_t padding = 0);
    std::string kind() const override { return mode_ == Mode::Max ? "MaxPool2d" : "AvgPool2d"; }
    LayerPlan plan(const Shape& input) const override;
    Shape build(const Shape& input) override;
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override;
    DeviceOp device_op() const override {
        return PoolOp{mode_ == Mode::Max ? PoolOp::Mode::Max : PoolOp::Mode::Average, geometry(0)};
    }
    PytorchModule pytorch_module(const Shape& input) const override;

    // The pooling at this batch; the input sizes are known once the layer is built.
    PoolGeometry geometry(int64_t batch) const;
    int64_t kernel() const { return kernel_; }
    int64_t stride() const { return stride_; }
    int64_t padding() const { return padding_; }

private:
    Mode mode_;
    int64_t kernel_, stride_, padding_, channels_ = 0, in_h_ = 0, in_w_ = 0;
    std::vector<int32_t> argmax_;
};

}  // namespace mpwb
