// Layer: one step of a sequential network. Layers compute in FP32 on inputs the network has
// already rounded to the storage format; the network, not the layer, rounds what a layer stores
// (outputs, input gradients, weight gradients), so the precision policy lives in one place.
// Layers are made from their JSON by the layer registry (layer_registry.h), which checks every
// setting's type and range; a layer's constructor trusts its arguments. A layer also says what it
// is elsewhere: its op on a device engine (device_op) and its PyTorch module (pytorch_module), so
// a kind is its own file plus its registry entry.
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/device_op.h"
#include "core/common/checked_arith.h"
#include "core/common/rng.h"
#include "core/common/text_format.h"  // float_as_json_double: how each layer's to_json writes a float setting
#include "core/nn/pytorch_module.h"
#include "core/precision/gemm_quantizers.h"
#include "core/tensor/parameter.h"
#include "core/tensor/tensor.h"

namespace mpwb {

// Thrown by Layer::build with the reason only; Network adds "layer i (Kind): ".
class ShapeError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// What a layer would make of a per-sample input, worked out without allocating anything, so a
// network can be measured against its limits before a byte of it exists. Sizes saturate at
// INT64_MAX instead of wrapping (a wrapped product once sized a too-small weight buffer).
struct LayerPlan {
    Shape output;            // per-sample output shape
    int64_t parameters = 0;  // trainable values
    int64_t workspace = 0;   // per-sample scratch the backend needs (Conv2d's im2col columns), in elements
    // Per-sample values the layer holds besides its output during a training step, in elements:
    // what its forward pass keeps for backward (saved) and its backward pass's own buffers
    // (backward). An evaluation holds one layer's saved values at a time (Network::infer).
    int64_t saved = 0;
    int64_t backward = 0;
    // What saved and backward are, for the limit's message: "1 × 4 heads × 64² attention
    // probabilities + 13 × [64 × 128] + ...". Empty for none.
    std::string saved_detail = {}, backward_detail = {};
};

// Output length of a sliding window (convolution, pooling) over a padded input; saturates.
// 0 when the window does not fit.
inline int64_t window_output(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
    const int64_t padded = saturating_add(in, saturating_mul(2, padding));
    return padded < kernel ? 0 : (padded - kernel) / stride + 1;
}

// One GEMM a layer runs, as the Network gives it a quantizer under a scaled recipe. A layer with
// one GEMM (Linear, Conv2d) leaves it unnamed; a transformer block names each ("attn.qkv"), and
// its statistics, rules and reports address it as "<layer index>.<name>".
struct NamedGemm {
    std::string name;
    // An attention product (Q·Kᵀ, P·V): no weight; quantized only when the recipe's fp8_attention
    // is on, then per tensor with current scaling (DESIGN.md, "Sequences and transformers").
    bool attention_product = false;
};

struct StabilitySink;  // core/nn/stability_indicators.h

struct LayerContext {
    Backend& backend;
    Format gemm_operands = Format::FP32;  // TF32 rounds GEMM/conv operands; other policies store them rounded
    bool training = true;
    Rng* rng = nullptr;  // dropout masks
    // Under a scaled recipe, precision rules or what-if recipes, the quantizers of the GEMM being
    // run (the Network sets the layer's first around each layer's forward and backward; a layer
    // with named GEMMs selects its own from layer_quantizers); null otherwise.
    GemmQuantizers* quantizers = nullptr;
    // The quantizers of the layer's GEMMs in Layer::gemms() order; empty when the run has none.
    // Set by the Network around each layer.
    std::span<GemmQuantizers* const> layer_quantizers = {};
    // The policy's storage format of activations (what a layer keeps of the values it stores
    // between its own steps); FP32 keeps everything. Set by Network::forward and backward.
    Format storage = Format::FP32;
    // The residual stream stays FP32 whatever the storage format (Megatron's
    // fp32_residual_connection); set by the Network from the policy.
    bool fp32_residual = false;
    // Set by the engine around a statistics step's forward pass: the layers that have
    // instability indicators (a transformer block) compute them into it. Null: nothing computed.
    StabilitySink* stability = nullptr;

    GemmQuantizers* quantizers_of(size_t gemm) const {
        return gemm < layer_quantizers.size() ? layer_quantizers[gemm] : nullptr;
    }

    // The operand as the layer's GEMM reads it in `pass`: quantized by that pass's recipe, or as it is.
    const float* operand(GemmOperand which, GemmPass pass, SumAlong along, const float* values, int64_t rows,
                         int64_t cols) const {
        return quantizers ? quantizers->operand(which, pass, along, values, rows, cols) : values;
    }
    // The recipe settings of the pass whose operands were taken last, when it emulates a narrow
    // accumulator; null otherwise.
    const ScaledRecipeConfig* narrow_accumulator() const {
        const ScaledRecipeConfig* c = quantizers ? quantizers->serving() : nullptr;
        return c && c->accumulator_bits > 0 ? c : nullptr;
    }
    // A batch of products of one shape (Backend::GemmBatch), through the backend's batched GEMM
    // or, when the pass's recipe emulates a narrow accumulator, through that one product at a time.
    void gemm_batched(const Backend::GemmBatch& g, const float* a, const float* b, float* c) const {
        if (const ScaledRecipeConfig* acc = narrow_accumulator()) {
            for (int64_t i = 0; i < g.count; ++i)
                limited_accumulator_gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, a + i * g.stride_a, g.lda,
                                         b + i * g.stride_b, g.ldb, c + i * g.stride_c, g.ldc,
                                         acc->accumulator_bits, acc->accumulator_interval);
        } else {
            backend.gemm_batched(g, a, b, c, gemm_operands);
        }
    }
    // C = op(A) · op(B) (alpha 1, beta 0) through the backend, or through the pass's narrow
    // accumulator when its recipe emulates one.
    void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const float* b, int64_t ldb, float* c, int64_t ldc) const {
        if (const ScaledRecipeConfig* acc = narrow_accumulator())
            limited_accumulator_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, acc->accumulator_bits,
                                     acc->accumulator_interval);
        else
            backend.gemm(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc, gemm_operands);
    }
};

class Layer {
public:
    virtual ~Layer() = default;
    virtual std::string kind() const = 0;
    // Checks the per-sample input shape and works out the sizes; ShapeError when it does not fit.
    virtual LayerPlan plan(const Shape& input) const = 0;
    // plan(), then sizes the parameters; returns the output shape.
    virtual Shape build(const Shape& input) = 0;
    // The class count of the dataset the network is built for (0: none known). A setting whose
    // value 0 means "the dataset's classes" (a language model's vocabulary, its head's outputs)
    // takes it here; Network::build and inspect pass it to every layer before planning.
    virtual void set_dataset_classes(int64_t) {}
    // A first layer that reads token ids (Embedding): the network passes its input unrounded,
    // since an id above 256 does not survive BF16.
    virtual bool reads_token_ids() const { return false; }
    virtual void init(Rng&) {}
    virtual std::vector<Parameter*> parameters() { return {}; }
    // Buffers that are not trained but belong to the model (BatchNorm running statistics).
    virtual std::vector<Tensor*> buffers() { return {}; }
    // GEMM and convolution layers run in the reduced format under mixed policies; the rest
    // (normalisation) keep FP32 parameters, following the autocast rule.
    virtual bool runs_in_reduced_precision() const { return false; }
    // The GEMMs the layer runs, each with its own quantizer under a scaled recipe: by default one
    // unnamed GEMM for a layer that runs in reduced precision, none otherwise.
    virtual std::vector<NamedGemm> gemms() const {
        if (runs_in_reduced_precision()) return {NamedGemm{}};
        return {};
    }
    // The layer's output is a residual stream (x + f(x)): kept FP32 under the policy's
    // fp32_residual setting instead of being rounded to the storage format.
    virtual bool writes_residual_stream() const { return false; }
    virtual void forward(LayerContext& ctx, const Tensor& x, Tensor& y) = 0;
    // Frees what forward kept for backward (no backward follows: Network::infer); the next
    // forward sizes it again. Layers that keep little leave it.
    virtual void release_saved() {}
    // Writes dx (when not null) and overwrites the parameters' grads.
    virtual void backward(LayerContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                          Tensor* dx) = 0;
    virtual nlohmann::json to_json() const = 0;
    // What the CUDA step runs for this built layer, or NoDeviceOp when no device engine can run
    // it (the network then trains on the host engine: Network::missing_device_op).
    virtual DeviceOp device_op() const = 0;
    // This built layer as a PyTorch module, given its per-sample input shape.
    virtual PytorchModule pytorch_module(const Shape& input) const = 0;

    int64_t parameter_count() {
        int64_t n = 0;
        for (auto* p : parameters()) n += p->value.numel();
        return n;
    }
};

}  // namespace mpwb
