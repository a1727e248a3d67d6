// The Embedding layer kind: a language model's first layer. Per sample it reads [T] token ids
// (stored as float, as every dataset stores its values) and writes [T, d]: the token's row of a
// learned [vocab, d] table plus the position's row of a learned [context, d] table (GPT-2's wte
// and wpe). The vocabulary may come from the dataset (0: its classes, set_dataset_classes), since
// a character vocabulary depends on the text file.
#pragma once
#include "core/nn/layer.h"

namespace mpwb {

class Embedding final : public Layer {
public:
    // vocab 0: the dataset's classes, resolved when the network is built.
    Embedding(int64_t vocab, int64_t d_model, int64_t context);
    std::string kind() const override { return "Embedding"; }
    LayerPlan plan(const Shape& input) const override;
    Shape build(const Shape& input) override;
    void set_dataset_classes(int64_t classes) override { dataset_classes_ = classes; }
    bool reads_token_ids() const override { return true; }
    void init(Rng& rng) override;
    std::vector<Parameter*> parameters() override { return {&token_, &position_}; }
    // DataError naming the sample, the position and the value when an id is not a whole number
    // in [0, vocab).
    void forward(LayerContext& ctx, const Tensor& x, Tensor& y) override;
    // Token ids have no gradient: dx, when asked for, is zero.
    void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor* dx) override;
    nlohmann::json to_json() const override;
    DeviceOp device_op() const override { return NoDeviceOp{}; }
    PytorchModule pytorch_module(const Shape& input) const override;

    int64_t vocab() const { return vocab_; }  // resolved once built

private:
    int64_t vocab_, d_, context_;
    int64_t dataset_classes_ = 0;
    Parameter token_, position_;
};

}  // namespace mpwb
