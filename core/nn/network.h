// Network: a JSON-describable sequence of layers with shape inference, parameter counts and
// errors that name the layer ("layer 3 (Linear): expects 784 inputs, gets 1152"). It owns the
// activations and gradients of a step and applies the precision policy's storage rounding to
// every value a layer stores.
#pragma once
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/nn/gemm_precision_plan.h"
#include "core/nn/gradient_kind.h"
#include "core/nn/layer.h"
#include "core/nn/layer_registry.h"  // make_layer, layer_kinds: the kinds a description may name
#include "core/nn/loss_registry.h"   // the losses a description may name
#include "core/numeric/exponent_histogram.h"
#include "core/precision/precision_policy.h"

namespace mpwb {

// Sees gradients as the scaled FP32 values, before they are rounded to their storage format.
class GradientProbe {
public:
    virtual ~GradientProbe() = default;
    // layer: index of the layer whose output (Activation) or parameter (Weight) the gradient is of.
    virtual void observe(size_t layer, GradientKind kind, const std::string& parameter, const float* values,
                         int64_t count) = 0;
    // The same, for an engine that bins the values where they are (the CUDA engine histograms
    // its gradients on the device and hands over only the counts).
    virtual void observe_histogram(size_t layer, GradientKind kind, const std::string& parameter,
                                   const ExponentHistogram& histogram) = 0;
};

// What a network may need, checked before anything is allocated (Network::build, inspect).
// Every figure is in elements of 4 bytes; the training step keeps about three copies of the
// parameters (value, gradient, optimizer state) and two of the activations (value, gradient).
struct NetworkLimits {
    static constexpr int64_t kMaxParameters = int64_t{1} << 28;  // 268,435,456: 1 GiB per copy
    // At the training batch, all layers' outputs and what they keep for backward (LayerPlan saved
    // and backward: a block's attention probabilities, heads × T² per sample); at the evaluation
    // batch, the outputs and the largest layer's saved values: 2 GiB.
    static constexpr int64_t kMaxActivations = int64_t{1} << 29;
    static constexpr int64_t kMaxTensorElements = kInt32Max;  // one tensor: BLAS takes int sizes
    static constexpr size_t kMaxLayers = 4096;
};

struct LayerReport {
    size_t index = 0;
    std::string kind;
    Shape output;
    int64_t parameters = 0;
    std::string error;  // empty when the layer fits
};

class Network {
public:
    Network() = default;
    Network(Network&&) = default;
    Network& operator=(Network&&) = default;

    // Layers from {"layers": [{"type": "Linear", "out": 10}, ...], "loss": "mse"}; "loss" names an
    // entry of the loss registry (core/nn/loss_registry.h), default_loss() when absent.
    static Network from_json(const nlohmann::json& description);
    // A network of layers already made (from_json makes them from the registry; a test may bring
    // a kind of its own).
    static Network from_layers(std::vector<std::unique_ptr<Layer>> layers,
                               std::string loss = "cross_entropy");
    static Network load_file(const std::string& path);
    nlohmann::json to_json() const;
    void save_file(const std::string& path) const;
    // Checks every layer, sizes against NetworkLimits at the batch included, going on after an
    // error so an editor can mark each one. Allocates nothing. dataset_classes as for build.
    static std::vector<LayerReport> inspect(const nlohmann::json& description, const Shape& input,
                                            int64_t batch = 1, int64_t dataset_classes = 0);

    // Shape inference from the per-sample input shape; NetworkError on the first layer that does
    // not fit, or that takes the network over NetworkLimits at this batch (checked before
    // anything is allocated; the message has the numbers and the limit). dataset_classes: the
    // class count of the dataset (Dataset::num_classes, the vocabulary of a text dataset) that
    // settings whose 0 means "the dataset's classes" take (Embedding "vocab", Linear "out"); 0
    // when no dataset is known, and such a setting is then an error naming it. Once built,
    // to_json writes the resolved numbers, so a stored run's network stands on its own.
    // eval_batch: the batch evaluations run at, checked as Network::infer holds it (0: batch).
    void build(const Shape& input, int64_t batch = 1, int64_t dataset_classes = 0, int64_t eval_batch = 0);
    void init(uint64_t seed);
    // Applies the policy to the freshly initialised weights: rounds masters under fp16-pure and
    // writes the reduced copies the forward pass reads.
    void prepare_weights(const PrecisionPolicy& policy);

    size_t size() const { return layers_.size(); }
    Layer& layer(size_t i) { return *layers_.at(i); }
    const std::string& name() const { return name_; }
    // The loss setting: a name in the loss registry. Which loss a run trains with is run_loss's
    // choice (this setting and the dataset's targets).
    const std::string& loss() const { return loss_; }
    // PaLM's z-loss coefficient ("z_loss" in the description; 0: none): the loss adds
    // z_loss * mean(log² Z) over its softmax rows. Only a loss whose entry takes it may have one.
    float z_loss() const { return z_loss_; }
    const Shape& input_shape() const { return input_shape_; }
    const Shape& output_shape() const { return output_shape_; }
    int64_t parameter_count() const;
    std::vector<Parameter*> parameters() const;
    std::vector<Tensor*> buffers() const;
    // "3 Linear" for the layer that owns parameters()[i].
    std::string parameter_owner(size_t parameter_index) const;
    std::string layer_label(size_t layer) const;
    // Empty when a device engine has an op for every layer (Layer::device_op); else the one line
    // naming the first layer without: "the CUDA engine has no op for layer 3 (Foo)". The CUDA plan
    // refuses such a network with it, and the Trainer runs it on the host engine instead.
    std::string missing_device_op() const;

    // Scaled recipes, precision rules and what-if recipes: the quantizers of every GEMM of every
    // layer (Layer::gemms(): one unnamed GEMM for Linear and Conv2d, the named GEMMs of a
    // transformer block), one per recipe its passes use as the plan says (each pass's settings are
    // `settings` with the pass's recipe), plus a quantizer per what-if recipe, seeded by the run's
    // seed, the layer's index and the GEMM's (gemm_quantizer_key). Call after build. A plan that
    // quantizes nothing with no what-if recipe leaves the network without quantizers.
    void prepare_precision(const GemmPrecisionPlan& plan, const ScaledRecipeConfig& settings,
                           const std::vector<ScaledRecipe>& what_if, uint64_t seed);
    // The run's recipe for every GEMM (recipe_for_gemm), no rules, no what-if recipes.
    void prepare_recipe(const ScaledRecipeConfig& config, uint64_t seed);
    // A live change of the recipe's settings, from the next step; every pass keeps its recipe.
    // Turning fp8_attention on or off adds or removes the attention products' quantizers.
    void set_recipe_config(const ScaledRecipeConfig& config);
    bool quantizes() const { return !quantizers_.empty(); }
    // The plan prepare_precision was given (empty before).
    const GemmPrecisionPlan& precision_plan() const { return plan_; }
    // Every layer's GEMMs (Layer::gemms() of the built layers), what resolve_gemm_precisions reads.
    std::vector<std::vector<NamedGemm>> all_gemms() const;
    // Brackets one training attempt (see GemmQuantizer). Both do nothing without quantizers.
    void begin_quantized_step(int64_t step, bool take_stats);
    void end_quantized_step();
    // The statistics the last attempt took, layer by layer and GEMM by GEMM.
    std::vector<LayerScalingStats> scaling_stats() const;
    // The quantizers of a layer's GEMM (gemm: index into gemms(layer)); null when it has none.
    GemmQuantizers* quantizers(size_t layer, size_t gemm = 0);
    // The layer's GEMMs (Layer::gemms() of the built layer).
    const std::vector<NamedGemm>& gemms(size_t layer) const { return gemms_.at(layer); }
    // "3 Linear" for a layer's unnamed GEMM, "3.attn.qkv" for a named one: how statistics, the
    // store and reports label a GEMM.
    std::string gemm_label(size_t layer, const std::string& gemm) const;

    // Forward pass; the input is rounded to the activation format first. Returns the output.
    const Tensor& forward(LayerContext& ctx, const Tensor& input, const PrecisionPolicy& policy);
    // The same forward pass, bit for bit, for a pass no backward follows (evaluation): each
    // layer's input and saved values (Layer::release_saved) are freed once the next layer has
    // run, so a large evaluation batch holds one layer's at a time. backward may not follow it.
    const Tensor& infer(LayerContext& ctx, const Tensor& input, const PrecisionPolicy& policy);
    // Backward from the loss gradient (scaled FP32). Leaves every parameter's grad in its
    // storage format. probe may be null.
    void backward(LayerContext& ctx, const Tensor& output_grad, const PrecisionPolicy& policy,
                  GradientProbe* probe);

private:
    std::string name_;
    std::string loss_ = default_loss().name;
    float z_loss_ = 0.0f;
    std::vector<std::unique_ptr<Layer>> layers_;
    std::vector<size_t> parameter_layer_;  // layer index of each parameter, in parameters() order
    size_t lowest_trained_ = 0;            // no input gradient is needed below this layer
    Shape input_shape_, output_shape_;
    bool built_ = false;
    std::vector<Tensor> activations_;            // activations_[i] is layer i's input; the last is the output
    std::vector<Tensor> gradients_;              // gradients_[i] is the gradient of activations_[i]
    std::vector<std::vector<NamedGemm>> gemms_;  // gemms_[i]: layer i's GEMMs, set by build
    // quantizers_[i][g] for GEMM g of layer i (null for a GEMM nothing quantizes or watches);
    // empty without any. quantizer_views_ holds the same pointers for LayerContext::layer_quantizers.
    std::vector<std::vector<std::unique_ptr<GemmQuantizers>>> quantizers_;
    std::vector<std::vector<GemmQuantizers*>> quantizer_views_;
    GemmPrecisionPlan plan_;
    std::vector<ScaledRecipe> what_if_;
    uint64_t recipe_seed_ = 0;
    // The settings of each pass of a GEMM, and of each what-if recipe at it.
    PassRecipes pass_recipes(const GemmPrecision& gemm, const ScaledRecipeConfig& settings) const;
    std::vector<WhatIfRecipe> what_if_recipes(size_t layer, size_t gemm,
                                              const ScaledRecipeConfig& settings) const;
    // Points ctx at a layer's quantizers (its first GEMM's, and all of them by index); a layer
    // index past the end clears them.
    void use_layer_quantizers(LayerContext& ctx, size_t layer);
    const Tensor& run_forward(LayerContext& ctx, const Tensor& input, const PrecisionPolicy& policy,
                              bool keep_for_backward);
};

// The key that seeds a GEMM's quantizer (stochastic rounding, Hadamard signs): the layer's
// index for its first GEMM, so a layer with one GEMM draws as before GEMMs had names.
uint64_t gemm_quantizer_key(size_t layer, size_t gemm);

}  // namespace mpwb
