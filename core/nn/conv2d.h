// 2-D convolution over NCHW inputs with square kernels, stride and zero padding.
#pragma once
#include "core/nn/layer.h"

namespace mpwb {

class Conv2d final : public Layer {
public:
    Conv2d(int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t padding = 0,
           int64_t in_channels = 0, bool bias = true);
    std::string kind() const override { return "Conv2d"; }
    LayerPlan plan(const Shape& input) const override;
    Shape build(const Shape& input) override;
    void init(Rng& rng) override;
    std::vector<Parameter*> parameters() override;
    bool runs_in_reduced_precision() const override { return true; }
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override;
    DeviceOp device_op() const override { return Conv2dOp{geometry(0)}; }
    PytorchModule pytorch_module(const Shape& input) const override;

    // The convolution at this batch; the input sizes are known once the layer is built.
    ConvGeometry geometry(int64_t batch) const;

private:
    int64_t out_c_, kernel_, stride_, padding_, in_c_ = 0, in_h_ = 0, in_w_ = 0;
    bool has_bias_;
    Parameter weight_, bias_;
};

}  // namespace mpwb
