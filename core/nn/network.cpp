// Network: JSON, shape inference and the precision-aware forward and backward passes.
#include "core/nn/network.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/common/error.h"
#include "core/common/json_input.h"

namespace mpwb {
namespace {

std::string layer_prefix(size_t index, const std::string& kind) {
    return "layer " + std::to_string(index) + " (" + kind + "): ";
}

std::string spec_kind(const nlohmann::json& spec) {
    if (spec.is_object() && spec.contains("type") && spec["type"].is_string())
        return spec["type"].get<std::string>();
    return "?";
}

// "712.0 MiB" for a count of 4-byte values: what a limit message says memory in.
std::string value_bytes_text(int64_t values) {
    const double bytes = static_cast<double>(values) * 4.0;
    const bool gib = bytes >= 1024.0 * 1024.0 * 1024.0;
    char text[32];
    std::snprintf(text, sizeof text, "%.1f %s", bytes / (gib ? 1024.0 * 1024.0 * 1024.0 : 1024.0 * 1024.0),
                  gib ? "GiB" : "MiB");
    return text;
}

std::string values_text(int64_t values) {
    return size_text(values) + " values (" + value_bytes_text(values) + ")";
}

// Running totals of a network measured layer by layer against NetworkLimits, at the training
// batch and at the evaluation batch. A training step holds every layer's output and what each
// keeps for backward; an evaluation (Network::infer) the outputs and one layer's saved values.
class SizeBudget {
public:
    SizeBudget(const Shape& input, int64_t batch, int64_t eval_batch)
        : batch_(batch), eval_batch_(eval_batch), outputs_(checked_product(input).value_or(kInt64Max)) {}

    // Empty when the layer keeps the network within the limits; else what is over, with the
    // numbers and the limit.
    std::string add(const LayerPlan& p) {
        using L = NetworkLimits;
        parameters_ = saturating_add(parameters_, p.parameters);
        if (parameters_ > L::kMaxParameters)
            return "the network reaches " + size_text(parameters_) +
                   " parameters here, more than the limit of " + size_text(L::kMaxParameters);
        const int64_t largest_batch = std::max(batch_, eval_batch_);
        const int64_t out = saturating_mul(checked_product(p.output).value_or(kInt64Max), largest_batch);
        if (out > L::kMaxTensorElements)
            return "its output " + shape_to_string(p.output) + " is " + size_text(out) +
                   " elements at batch " + std::to_string(largest_batch) + ", more than the " +
                   size_text(L::kMaxTensorElements) + " one tensor may hold";
        if (p.workspace > L::kMaxActivations)
            return "its im2col workspace is " + size_text(p.workspace) +
                   " elements per sample, more than the limit of " + size_text(L::kMaxActivations);
        const int64_t kept = saturating_add(p.saved, p.backward);
        outputs_ = saturating_add(outputs_, checked_product(p.output).value_or(kInt64Max));
        kept_ = saturating_add(kept_, kept);
        largest_saved_ = std::max(largest_saved_, p.saved);
        std::string detail = p.saved_detail;
        if (!p.backward_detail.empty()) detail += " for backward, and " + p.backward_detail + " in it";
        if (auto over =
                check(saturating_add(outputs_, kept_), batch_, "batch ", "batch_size", p, kept, detail);
            !over.empty())
            return over;
        return check(saturating_add(outputs_, largest_saved_), eval_batch_, "the evaluation batch ",
                     "eval_batch", p, p.saved, p.saved_detail);
    }

private:
    // per_sample: the network's values so far at one sample; layer_kept: this layer's part.
    std::string check(int64_t per_sample, int64_t batch, const char* which, const char* setting,
                      const LayerPlan& p, int64_t layer_kept, const std::string& detail) const {
        const int64_t total = saturating_mul(per_sample, batch);
        if (total <= NetworkLimits::kMaxActivations) return {};
        std::string message = "at " + std::string(which) + std::to_string(batch) + " the activations reach " +
                              values_text(total) + " here, over the limit of " +
                              values_text(NetworkLimits::kMaxActivations);
        if (layer_kept > 0 && !detail.empty())
            message += "; this layer holds " + detail + " = " + size_text(layer_kept) +
                       " values per sample, " + value_bytes_text(saturating_mul(layer_kept, batch)) +
                       " at this batch";
        const bool sequence = p.output.size() == 2;
        return message + "; lower " + setting + (sequence ? " or the context" : "");
    }

    int64_t batch_, eval_batch_;
    int64_t outputs_;  // per sample: the input and every layer's output so far
    int64_t kept_ = 0, largest_saved_ = 0;
    int64_t parameters_ = 0;
};

// "z_loss": a coefficient in [0, 1] for a loss whose entry takes one.
float read_z_loss(const nlohmann::json& value, const std::string& loss) {
    if (!value.is_number()) throw NetworkError("\"z_loss\" must be a number, gets " + value.dump());
    const double z = value.get<double>();
    if (!(z >= 0.0 && z <= 1.0))
        throw NetworkError("\"z_loss\" must be in [0, 1] (PaLM uses 1e-4), gets " + value.dump());
    if (z != 0.0 && !loss_named(loss).takes_z_loss)
        throw NetworkError("\"z_loss\" applies to a loss over softmax rows that takes it (" +
                           z_loss_losses() + "), not to " + loss);
    return static_cast<float>(z);
}

constexpr size_t kNoLayer = ~size_t{0};

// The format a layer's output (and the gradient of it) is stored in: the policy's activation
// format, or FP32 for a residual stream under fp32_residual.
Format stream_format(const Layer& layer, const PrecisionPolicy& policy) {
    return policy.fp32_residual && layer.writes_residual_stream() ? Format::FP32 : policy.activations;
}

}  // namespace

Network Network::from_json(const nlohmann::json& description) {
    if (!description.is_object()) throw NetworkError("network description must be a JSON object");
    if (!description.contains("layers") || !description["layers"].is_array())
        throw NetworkError("network description needs a \"layers\" array");
    Network net;
    if (description.contains("name") && !description["name"].is_string())
        throw NetworkError("\"name\" must be a string, gets " + description["name"].dump());
    net.name_ = description.value("name", std::string("network"));
    if (description.contains("loss")) {
        if (!description["loss"].is_string())
            throw NetworkError("\"loss\" must be the name of a loss: " + loss_name_list());
        net.loss_ = loss_named(description["loss"].get<std::string>()).name;
    }
    if (description.contains("z_loss")) net.z_loss_ = read_z_loss(description["z_loss"], net.loss_);
    const auto& layers = description["layers"];
    if (layers.empty()) throw NetworkError("network has no layers");
    if (layers.size() > NetworkLimits::kMaxLayers)
        throw NetworkError("network has " + std::to_string(layers.size()) +
                           " layers, more than the limit of " + std::to_string(NetworkLimits::kMaxLayers));
    for (size_t i = 0; i < layers.size(); ++i) {
        try {
            net.layers_.push_back(make_layer(layers[i]));
        } catch (const ShapeError& e) {
            throw NetworkError(layer_prefix(i, spec_kind(layers[i])) + e.what());
        }
    }
    return net;
}

Network Network::from_layers(std::vector<std::unique_ptr<Layer>> layers, std::string loss) {
    Network net;
    net.name_ = "network";
    net.loss_ = std::move(loss);
    net.layers_ = std::move(layers);
    return net;
}

Network Network::load_file(const std::string& path) {
    nlohmann::json j;
    try {
        j = read_json_file(path, "network file");
    } catch (const JsonInputError& e) {
        throw NetworkError(e.what());
    }
    try {
        return from_json(j);
    } catch (const NetworkError& e) {
        throw NetworkError(path + ": " + e.what());
    }
}

nlohmann::json Network::to_json() const {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : layers_) layers.push_back(l->to_json());
    nlohmann::json j{{"name", name_}, {"loss", loss_}, {"layers", layers}};
    if (z_loss_ != 0.0f) j["z_loss"] = float_as_json_double(z_loss_);
    return j;
}

void Network::save_file(const std::string& path) const {
    std::ofstream out(path);
    if (!out) throw NetworkError("cannot write network file " + path);
    out << to_json().dump(2) << "\n";
}

std::vector<LayerReport> Network::inspect(const nlohmann::json& description, const Shape& input,
                                          int64_t batch, int64_t dataset_classes) {
    std::vector<LayerReport> reports;
    if (!description.is_object() || !description.contains("layers") || !description["layers"].is_array())
        return reports;
    Shape shape = input;
    bool shape_known = true;
    SizeBudget budget(input, batch, batch);
    const auto& layers = description["layers"];
    for (size_t i = 0; i < layers.size(); ++i) {
        LayerReport r;
        r.index = i;
        r.kind = spec_kind(layers[i]);
        try {
            auto layer = make_layer(layers[i]);
            layer->set_dataset_classes(dataset_classes);
            if (shape_known) {
                LayerPlan p = layer->plan(shape);
                r.error = budget.add(p);
                r.output = p.output;
                r.parameters = p.parameters;
                shape = std::move(p.output);
                shape_known = r.error.empty();
            }
        } catch (const std::exception& e) {
            r.error = e.what();
            shape_known = false;
        }
        reports.push_back(std::move(r));
    }
    return reports;
}

void Network::build(const Shape& input, int64_t batch, int64_t dataset_classes, int64_t eval_batch) {
    if (batch < 1)
        throw NetworkError("network built for batch " + std::to_string(batch) + "; it must be at least 1");
    if (eval_batch < 0)
        throw NetworkError("network built for evaluation batch " + std::to_string(eval_batch) +
                           "; it must be at least 1 (0: the training batch)");
    // Every layer measured before any allocates: a refused network costs nothing.
    SizeBudget budget(input, batch, eval_batch > 0 ? eval_batch : batch);
    Shape planned = input;
    for (auto& layer : layers_) layer->set_dataset_classes(dataset_classes);
    for (size_t i = 0; i < layers_.size(); ++i) {
        try {
            LayerPlan p = layers_[i]->plan(planned);
            if (const std::string over = budget.add(p); !over.empty()) throw ShapeError(over);
            planned = std::move(p.output);
        } catch (const ShapeError& e) {
            throw NetworkError(layer_prefix(i, layers_[i]->kind()) + e.what());
        }
    }
    input_shape_ = input;
    Shape shape = input;
    parameter_layer_.clear();
    for (size_t i = 0; i < layers_.size(); ++i) {
        try {
            shape = layers_[i]->build(shape);
        } catch (const ShapeError& e) {
            throw NetworkError(layer_prefix(i, layers_[i]->kind()) + e.what());
        }
        for (size_t p = 0; p < layers_[i]->parameters().size(); ++p) parameter_layer_.push_back(i);
    }
    output_shape_ = shape;
    gemms_.clear();
    for (const auto& l : layers_) gemms_.push_back(l->gemms());
    // Input gradients are only needed down to the lowest layer with parameters (the Linear
    // after a Flatten skips its 784-wide input gradient, a third of an MLP's backward work).
    lowest_trained_ = parameter_layer_.empty() ? layers_.size() : parameter_layer_.front();
    activations_.assign(layers_.size() + 1, Tensor());
    gradients_.assign(layers_.size() + 1, Tensor());
    built_ = true;
}

void Network::init(uint64_t seed) {
    if (!built_) throw NetworkError("network must be built before it is initialised");
    Rng rng(seed);
    for (auto& l : layers_) l->init(rng);
}

void Network::prepare_weights(const PrecisionPolicy& policy) {
    for (size_t i = 0; i < layers_.size(); ++i) {
        for (Parameter* p : layers_[i]->parameters()) {
            if (policy.master != Format::FP32)
                round_to_format(policy.master, p->value.data(), p->value.data(), p->value.numel());
            if (policy.weight_copy != Format::FP32 && layers_[i]->runs_in_reduced_precision() &&
                !p->keeps_fp32) {
                p->compute.resize(p->value.shape());
                round_to_format(policy.weight_copy, p->value.data(), p->compute.data(), p->value.numel());
            } else {
                p->compute = Tensor();
            }
        }
    }
}

uint64_t gemm_quantizer_key(size_t layer, size_t gemm) {
    return static_cast<uint64_t>(layer) + (static_cast<uint64_t>(gemm) << 32);
}

std::vector<std::vector<NamedGemm>> Network::all_gemms() const {
    if (gemms_.size() == layers_.size()) return gemms_;
    std::vector<std::vector<NamedGemm>> all;  // not built yet: the GEMMs are the layers' settings
    for (const auto& l : layers_) all.push_back(l->gemms());
    return all;
}

PassRecipes Network::pass_recipes(const GemmPrecision& gemm, const ScaledRecipeConfig& settings) const {
    return pass_recipes_of(gemm, gemms_[gemm.layer][gemm.gemm], settings, plan_.policy.recipe);
}

std::vector<WhatIfRecipe> Network::what_if_recipes(size_t layer, size_t gemm,
                                                   const ScaledRecipeConfig& settings) const {
    std::vector<WhatIfRecipe> all;
    for (ScaledRecipe r : what_if_) {
        ScaledRecipeConfig c = settings;
        c.recipe = r;
        all.push_back({r, recipe_for_gemm(c, gemms_[layer][gemm])});
    }
    return all;
}

void Network::prepare_precision(const GemmPrecisionPlan& plan, const ScaledRecipeConfig& settings,
                                const std::vector<ScaledRecipe>& what_if, uint64_t seed) {
    quantizers_.clear();
    quantizer_views_.clear();
    gemms_ = all_gemms();
    plan_ = plan;
    what_if_ = what_if;
    recipe_seed_ = seed;
    const bool quantized = plan.quantizes();
    if (!quantized && what_if.empty()) return;
    quantizers_.resize(layers_.size());
    quantizer_views_.resize(layers_.size());
    for (size_t i = 0; i < layers_.size(); ++i) {
        quantizers_[i].resize(gemms_[i].size());
        quantizer_views_[i].assign(gemms_[i].size(), nullptr);
    }
    for (const GemmPrecision& g : plan.gemms) {
        auto q = std::make_unique<GemmQuantizers>(pass_recipes(g, settings), seed,
                                                  gemm_quantizer_key(g.layer, g.gemm),
                                                  quantized && !g.attention_product);
        q->set_what_if(what_if_recipes(g.layer, g.gemm, settings));
        quantizer_views_[g.layer][g.gemm] = q.get();
        quantizers_[g.layer][g.gemm] = std::move(q);
    }
}

void Network::prepare_recipe(const ScaledRecipeConfig& config, uint64_t seed) {
    gemms_ = all_gemms();
    GemmPrecisionPlan plan;
    plan.policy.recipe = config.recipe;
    for (size_t layer = 0; layer < gemms_.size(); ++layer)
        for (size_t g = 0; g < gemms_[layer].size(); ++g) {
            const NamedGemm& named = gemms_[layer][g];
            const auto settings = recipe_for_gemm(config, named);
            GemmPrecision entry{layer, g, gemm_rule_label(layer, named.name), named.attention_product, {}};
            entry.passes.fill(settings ? settings->recipe : ScaledRecipe::None);
            plan.gemms.push_back(entry);
        }
    prepare_precision(plan, config, {}, seed);
}

void Network::set_recipe_config(const ScaledRecipeConfig& config) {
    for (const GemmPrecision& g : plan_.gemms)
        if (GemmQuantizers* q = quantizers(g.layer, g.gemm)) {
            q->set_passes(pass_recipes(g, config));
            q->set_what_if(what_if_recipes(g.layer, g.gemm, config));
        }
}

void Network::begin_quantized_step(int64_t step, bool take_stats) {
    for (auto& layer : quantizers_)
        for (auto& q : layer)
            if (q) q->begin_step(step, take_stats);
}

void Network::end_quantized_step() {
    for (auto& layer : quantizers_)
        for (auto& q : layer)
            if (q) q->end_step();
}

std::vector<LayerScalingStats> Network::scaling_stats() const {
    std::vector<LayerScalingStats> all;
    for (size_t i = 0; i < quantizers_.size(); ++i)
        for (size_t g = 0; g < quantizers_[i].size(); ++g)
            if (quantizers_[i][g])
                for (auto& s : quantizers_[i][g]->stats())
                    all.push_back({i, std::move(s), gemms_[i][g].name});
    return all;
}

GemmQuantizers* Network::quantizers(size_t layer, size_t gemm) {
    if (layer >= quantizer_views_.size() || gemm >= quantizer_views_[layer].size()) return nullptr;
    return quantizer_views_[layer][gemm];
}

std::string Network::gemm_label(size_t layer, const std::string& gemm) const {
    return gemm.empty() ? layer_label(layer) : std::to_string(layer) + "." + gemm;
}

int64_t Network::parameter_count() const {
    int64_t n = 0;
    for (const auto& l : layers_) n += l->parameter_count();
    return n;
}

std::vector<Parameter*> Network::parameters() const {
    std::vector<Parameter*> all;
    for (const auto& l : layers_)
        for (Parameter* p : l->parameters()) all.push_back(p);
    return all;
}

std::vector<Tensor*> Network::buffers() const {
    std::vector<Tensor*> all;
    for (const auto& l : layers_)
        for (Tensor* b : l->buffers()) all.push_back(b);
    return all;
}

std::string Network::layer_label(size_t layer) const {
    return std::to_string(layer) + " " + layers_.at(layer)->kind();
}

std::string Network::missing_device_op() const {
    for (size_t i = 0; i < layers_.size(); ++i)
        if (std::holds_alternative<NoDeviceOp>(layers_[i]->device_op()))
            return "the CUDA engine has no op for layer " + std::to_string(i) + " (" + layers_[i]->kind() +
                   ")";
    return {};
}

std::string Network::parameter_owner(size_t parameter_index) const {
    return layer_label(parameter_layer_.at(parameter_index));
}

void Network::use_layer_quantizers(LayerContext& ctx, size_t layer) {
    const bool quantized = layer < quantizer_views_.size();
    ctx.quantizers = quantized ? quantizers(layer, 0) : nullptr;
    ctx.layer_quantizers = quantized ? std::span<GemmQuantizers* const>(quantizer_views_[layer])
                                     : std::span<GemmQuantizers* const>();
}

const Tensor& Network::forward(LayerContext& ctx, const Tensor& input, const PrecisionPolicy& policy) {
    return run_forward(ctx, input, policy, true);
}

const Tensor& Network::infer(LayerContext& ctx, const Tensor& input, const PrecisionPolicy& policy) {
    return run_forward(ctx, input, policy, false);
}

const Tensor& Network::run_forward(LayerContext& ctx, const Tensor& input, const PrecisionPolicy& policy,
                                   bool keep_for_backward) {
    if (!built_) throw NetworkError("network must be built before it runs");
    Tensor& x0 = activations_[0];
    x0.resize(input.shape());
    if (layers_.front()->reads_token_ids())
        std::copy(input.data(), input.data() + input.numel(), x0.data());  // ids, not values
    else
        ctx.backend.round(policy.activations, input.data(), x0.data(), input.numel());
    ctx.storage = policy.activations;
    ctx.fp32_residual = policy.fp32_residual;
    for (size_t i = 0; i < layers_.size(); ++i) {
        Tensor& y = activations_[i + 1];
        use_layer_quantizers(ctx, i);
        layers_[i]->forward(ctx, activations_[i], y);
        use_layer_quantizers(ctx, kNoLayer);
        ctx.backend.round(stream_format(*layers_[i], policy), y.data(), y.data(), y.numel());
        if (keep_for_backward) continue;
        // Nothing reads layer i's input or saved values again: an evaluation at a large batch
        // holds one layer's at a time instead of every layer's.
        layers_[i]->release_saved();
        activations_[i] = Tensor();
    }
    return activations_.back();
}

void Network::backward(LayerContext& ctx, const Tensor& output_grad, const PrecisionPolicy& policy,
                       GradientProbe* probe) {
    const size_t n = layers_.size();
    ctx.storage = policy.activations;
    ctx.fp32_residual = policy.fp32_residual;
    Tensor& top = gradients_[n];
    top = output_grad;
    if (probe) probe->observe(n - 1, GradientKind::Activation, {}, top.data(), top.numel());
    ctx.backend.round(stream_format(*layers_.back(), policy), top.data(), top.data(), top.numel());
    for (size_t i = n; i-- > 0;) {
        Tensor* dx = i > lowest_trained_ ? &gradients_[i] : nullptr;
        Layer& layer = *layers_[i];
        use_layer_quantizers(ctx, i);
        layer.backward(ctx, activations_[i], activations_[i + 1], gradients_[i + 1], dx);
        use_layer_quantizers(ctx, kNoLayer);
        const auto params = layer.parameters();
        for (size_t p = 0; p < params.size(); ++p) {
            const bool reduced = layer.runs_in_reduced_precision() && !params[p]->keeps_fp32;
            const Format grad_format = reduced                         ? policy.weight_grads
                                       : policy.master != Format::FP32 ? policy.master
                                                                       : Format::FP32;
            Tensor& g = params[p]->grad;
            if (probe) probe->observe(i, GradientKind::Weight, params[p]->name, g.data(), g.numel());
            ctx.backend.round(grad_format, g.data(), g.data(), g.numel());
        }
        if (dx) {
            if (probe) probe->observe(i - 1, GradientKind::Activation, {}, dx->data(), dx->numel());
            ctx.backend.round(stream_format(*layers_[i - 1], policy), dx->data(), dx->data(), dx->numel());
        }
    }
}

}  // namespace mpwb
