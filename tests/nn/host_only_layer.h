// HostOnlyLayer: a layer kind that no device engine runs (its device op is NoDeviceOp). It passes
// its input through on the host. The tests of the device plan's refusal and of the Trainer's
// fallback to the host engine put it into a network (Network::from_layers): no registered kind
// lacks a device op today.
#pragma once
#include "core/nn/layer.h"

namespace mpwb::test {

class HostOnlyLayer final : public Layer {
public:
    std::string kind() const override { return "HostOnly"; }
    LayerPlan plan(const Shape& input) const override { return {input, 0, 0}; }
    Shape build(const Shape& input) override { return input; }
    void forward(LayerContext&, const Tensor& x, Tensor& y) override { y = x; }
    void backward(LayerContext&, const Tensor&, const Tensor&, const Tensor& dy, Tensor* dx) override {
        if (dx) *dx = dy;
    }
    nlohmann::json to_json() const override { return {{"type", kind()}}; }
    DeviceOp device_op() const override { return NoDeviceOp{}; }
    PytorchModule pytorch_module(const Shape&) const override { return {"nn.Identity()"}; }
};

}  // namespace mpwb::test
