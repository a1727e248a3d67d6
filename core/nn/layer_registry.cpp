// The layer registry's table (one entry per kind) and the one reader of a layer's JSON: types,
// defaults and ranges are checked here from the table, so no kind repeats them.
#include "core/nn/layer_registry.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <stdexcept>

#include "core/common/text_format.h"
#include "core/nn/batchnorm.h"
#include "core/nn/conv2d.h"
#include "core/nn/embedding.h"
#include "core/nn/linear.h"
#include "core/nn/norm_layer.h"
#include "core/nn/pool2d.h"
#include "core/nn/simple_layers.h"
#include "core/nn/transformer_block.h"

namespace mpwb {
namespace {

// Fields shared by kinds.
LayerField bias_field() {
    return {.key = "bias",
            .label = "Bias",
            .type = FieldType::Boolean,
            .default_value = 1,
            .help = "Adds a learned bias to each output"};
}

std::vector<LayerField> pooling_fields() {
    return {{.key = "kernel",
             .label = "Kernel",
             .default_value = 2,
             .min = 1,
             .editor_ceiling = 63,
             .new_layer_value = 2,
             .help = "Side of the square window"},
            {.key = "stride",
             .label = "Stride",
             .when_absent = WhenAbsent::Derived,
             .min = 1,
             .editor_ceiling = 63,
             .zero_means = "kernel",
             .help = "Step of the window; not set, the kernel size"},
            {.key = "padding",
             .label = "Padding",
             .min = 0,
             .editor_ceiling = 32,
             .help = "Zeros around the image, at most half the kernel"}};
}

std::unique_ptr<Layer> make_pooling(Pool2d::Mode mode, const LayerSettings& s) {
    const int64_t kernel = s.integer("kernel");
    return std::make_unique<Pool2d>(mode, kernel, s.given("stride") ? s.integer("stride") : kernel,
                                    s.integer("padding"));
}

LayerField slope_field() {
    return {.key = "slope",
            .label = "Negative slope",
            .type = FieldType::Float,
            .default_value = 0.01,
            .editor_floor = 0,
            .editor_ceiling = 1,
            .decimals = 4,
            .new_layer_value = 0.01,
            .help = "Factor applied to negative inputs"};
}

// One kind per entry of the activation table (core/backend/activations.h), in its order.
void add_activation_kinds(std::vector<LayerKind>& kinds) {
    for (const ActivationInfo& a : activation_infos()) {
        std::vector<LayerField> fields;
        if (a.has_slope) fields.push_back(slope_field());
        kinds.push_back({a.name, a.help, "keeps the shape", fields, [a](const LayerSettings& s) {
                             return a.has_slope ? std::make_unique<ActivationLayer>(a.kind, s.real("slope"))
                                                : std::make_unique<ActivationLayer>(a.kind);
                         }});
    }
}

LayerKind linear_kind() {
    return {"Linear",
            "Fully connected: y = x Wᵀ + b",
            "[F] → [out], or [T, d] → [T, out] on the last dimension",
            {{.key = "out",
              .label = "Outputs",
              .min = 0,
              .editor_ceiling = 1 << 20,
              .new_layer_value = 64,
              .zero_means = "the dataset's classes",
              .help = "Number of output features; 0 takes the dataset's classes (a language model's "
                      "vocabulary)"},
             bias_field(),
             {.key = "in",
              .label = "Inputs",
              .min = 0,
              .editor_ceiling = 1 << 20,
              .zero_means = "infer",
              .help = "Fixes the expected input width; 0 takes it from the previous layer"}},
            [](const LayerSettings& s) {
                return std::make_unique<Linear>(s.integer("out"), s.integer("in"), s.flag("bias"));
            }};
}

LayerKind conv2d_kind() {
    return {"Conv2d",
            "2-D convolution with a square kernel",
            "[C × H × W] → [out_channels × H' × W']",
            {{.key = "out_channels",
              .label = "Output channels",
              .when_absent = WhenAbsent::Required,
              .min = 1,
              .editor_ceiling = 4096,
              .new_layer_value = 16,
              .help = "Number of filters"},
             {.key = "kernel",
              .label = "Kernel",
              .when_absent = WhenAbsent::Required,
              .min = 1,
              .editor_ceiling = 63,
              .new_layer_value = 3,
              .help = "Side of the square kernel"},
             {.key = "stride",
              .label = "Stride",
              .default_value = 1,
              .min = 1,
              .editor_ceiling = 32,
              .help = "Step of the kernel"},
             {.key = "padding",
              .label = "Padding",
              .min = 0,
              .editor_ceiling = 32,
              .new_layer_value = 1,
              .help = "Zeros around the image"},
             bias_field(),
             {.key = "in_channels",
              .label = "Input channels",
              .min = 0,
              .editor_ceiling = 4096,
              .zero_means = "infer",
              .help = "Fixes the expected input channels; 0 takes them from the previous layer"}},
            [](const LayerSettings& s) {
                return std::make_unique<Conv2d>(s.integer("out_channels"), s.integer("kernel"),
                                                s.integer("stride"), s.integer("padding"),
                                                s.integer("in_channels"), s.flag("bias"));
            }};
}

LayerKind dropout_kind() {
    return {"Dropout",
            "Zeroes inputs at random while training",
            "keeps the shape",
            {{.key = "p",
              .label = "Drop probability",
              .type = FieldType::Float,
              .default_value = 0.5,
              .min = 0,
              .max = 1,
              .max_open = true,
              .editor_ceiling = 0.99,
              .decimals = 3,
              .new_layer_value = 0.5,
              .help = "Probability that an input is zeroed while training"}},
            [](const LayerSettings& s) { return std::make_unique<Dropout>(s.real("p")); }};
}

LayerKind batchnorm_kind() {
    return {"BatchNorm",
            "Normalises each feature or channel over the batch",
            "keeps the shape ([F] or [C × H × W])",
            {{.key = "momentum",
              .label = "Momentum",
              .type = FieldType::Float,
              .default_value = 0.1,
              .min = 0,
              .max = 1,
              .min_open = true,
              .decimals = 4,
              .help = "Weight of the new batch in the running statistics"},
             {.key = "eps",
              .label = "Epsilon",
              .type = FieldType::Float,
              .default_value = 1e-5,
              .min = 0,
              .min_open = true,
              .editor_ceiling = 1,
              .decimals = 8,
              .help = "Added to the variance before its square root"}},
            [](const LayerSettings& s) {
                return std::make_unique<BatchNorm>(s.real("momentum"), s.real("eps"));
            }};
}

LayerKind embedding_kind() {
    return {"Embedding",
            "Token ids to vectors: a token table plus a learned position table (GPT-2)",
            "[T] token ids → [T × d_model], T at most context",
            {{.key = "vocab",
              .label = "Vocabulary",
              .min = 0,
              .editor_ceiling = 1 << 20,
              .zero_means = "the dataset's classes",
              .help = "Number of distinct tokens; 0 takes the dataset's vocabulary"},
             {.key = "d_model",
              .label = "Width",
              .when_absent = WhenAbsent::Required,
              .min = 1,
              .editor_ceiling = 1 << 16,
              .new_layer_value = 128,
              .help = "Length of each token's vector (d_model)"},
             {.key = "context",
              .label = "Context",
              .when_absent = WhenAbsent::Required,
              .min = 1,
              .editor_ceiling = 1 << 16,
              .new_layer_value = 64,
              .help = "Most positions a sample may have: rows of the position table"}},
            [](const LayerSettings& s) {
                return std::make_unique<Embedding>(s.integer("vocab"), s.integer("d_model"),
                                                   s.integer("context"));
            }};
}

// LayerNorm and RMSNorm: the same settings, LayerNorm's bias besides.
LayerKind norm_kind(NormKind kind) {
    const bool layer_norm = kind == NormKind::LayerNorm;
    std::vector<LayerField> fields{{.key = "eps",
                                    .label = "Epsilon",
                                    .type = FieldType::Float,
                                    .default_value = 1e-5,
                                    .min = 0,
                                    .min_open = true,
                                    .editor_ceiling = 1,
                                    .decimals = 8,
                                    .help = layer_norm ? "Added to the variance before its square root"
                                                       : "Added to the mean square before its square root"},
                                   {.key = "affine",
                                    .label = "Affine",
                                    .type = FieldType::Boolean,
                                    .default_value = 1,
                                    .help = "Multiplies each channel by a learned gain" +
                                            std::string(layer_norm ? " (and adds the bias)" : "")}};
    if (layer_norm) {
        LayerField bias = bias_field();
        bias.help = "Adds a learned bias to each channel (with affine)";
        fields.push_back(bias);
    }
    return {layer_norm ? "LayerNorm" : "RMSNorm",
            layer_norm ? "Normalises each position's vector to mean 0 and variance 1"
                       : "Scales each position's vector to root mean square 1 (no centring)",
            "keeps the shape ([d] or [T × d]); normalises the last dimension", fields,
            [kind, layer_norm](const LayerSettings& s) {
                return std::make_unique<NormLayer>(kind, s.real("eps"), s.flag("affine"),
                                                   layer_norm && s.flag("bias"));
            }};
}

LayerField dropout_probability(std::string key, std::string label, std::string help) {
    return {.key = std::move(key),
            .label = std::move(label),
            .type = FieldType::Float,
            .default_value = 0,
            .min = 0,
            .max = 1,
            .max_open = true,
            .editor_ceiling = 0.99,
            .decimals = 3,
            .help = std::move(help)};
}

std::vector<LayerField> transformer_block_fields() {
    return {
        {.key = "heads",
         .label = "Heads",
         .default_value = 4,
         .min = 1,
         .editor_ceiling = 256,
         .help = "Attention heads; each sees d / heads features, so heads must divide d"},
        {.key = "rmsnorm",
         .label = "RMSNorm",
         .type = FieldType::Boolean,
         .help = "Normalise by the root mean square only (RMSNorm) instead of LayerNorm"},
        {.key = "eps",
         .label = "Epsilon",
         .type = FieldType::Float,
         .default_value = 1e-5,
         .min = 0,
         .min_open = true,
         .editor_ceiling = 1,
         .decimals = 8,
         .help = "Added to the variance (or mean square) before its square root"},
        {.key = "qk_norm",
         .label = "QK-norm",
         .type = FieldType::Boolean,
         .help = "Normalises queries and keys per head before their product (tames attention logits)"},
        {.key = "swiglu",
         .label = "SwiGLU",
         .type = FieldType::Boolean,
         .help = "MLP as silu(x Wgᵀ) ⊙ (x Wuᵀ), hidden 2/3 · ratio · d; off: GELU (tanh), hidden ratio · d"},
        {.key = "mlp_ratio",
         .label = "MLP ratio",
         .default_value = 4,
         .min = 1,
         .editor_ceiling = 16,
         .help = "The MLP's hidden width as a multiple of d"},
        dropout_probability("attn_dropout", "Attention dropout",
                            "Probability that an attention weight is zeroed while training"),
        dropout_probability("resid_dropout", "Residual dropout",
                            "Probability that an attention or MLP output is zeroed before its residual add"),
        {.key = "bias",
         .label = "Bias",
         .type = FieldType::Boolean,
         .default_value = 1,
         .help = "Biases in the projections and the LayerNorms"}};
}

LayerKind transformer_block_kind() {
    return {"TransformerBlock",
            "Pre-norm GPT block: x + Attn(Norm(x)), then x + MLP(Norm(x)), causal self-attention",
            "[T × d] → [T × d]", transformer_block_fields(), [](const LayerSettings& s) {
                TransformerBlockSettings b;
                b.heads = s.integer("heads");
                b.norm = s.flag("rmsnorm") ? NormKind::RMSNorm : NormKind::LayerNorm;
                b.eps = s.real("eps");
                b.qk_norm = s.flag("qk_norm");
                b.swiglu = s.flag("swiglu");
                b.mlp_ratio = s.integer("mlp_ratio");
                b.attention_dropout = s.real("attn_dropout");
                b.residual_dropout = s.real("resid_dropout");
                b.bias = s.flag("bias");
                return std::make_unique<TransformerBlock>(b);
            }};
}

// The palette's order.
std::vector<LayerKind> make_registry() {
    std::vector<LayerKind> kinds{linear_kind(), conv2d_kind()};
    kinds.push_back({"MaxPool2d", "Largest value of each window", "[C × H × W] → [C × H' × W']",
                     pooling_fields(),
                     [](const LayerSettings& s) { return make_pooling(Pool2d::Mode::Max, s); }});
    kinds.push_back({"AvgPool2d", "Mean of each window", "[C × H × W] → [C × H' × W']", pooling_fields(),
                     [](const LayerSettings& s) { return make_pooling(Pool2d::Mode::Average, s); }});
    add_activation_kinds(kinds);
    kinds.push_back({"Flatten",
                     "Makes an image a flat vector of features",
                     "[C × H × W] → [C·H·W]",
                     {},
                     [](const LayerSettings&) { return std::make_unique<Flatten>(); }});
    kinds.push_back(dropout_kind());
    kinds.push_back(batchnorm_kind());
    kinds.push_back(embedding_kind());
    kinds.push_back(norm_kind(NormKind::LayerNorm));
    kinds.push_back(norm_kind(NormKind::RMSNorm));
    kinds.push_back(transformer_block_kind());
    kinds.push_back(
        {"Identity", "Passes its input through unchanged", "keeps the shape", {}, [](const LayerSettings&) {
             return std::make_unique<Identity>();
         }});
    return kinds;
}

std::string quoted(const std::string& key) { return "\"" + key + "\""; }

// The JSON value as the field's type, with the messages the network reader has always given.
LayerSettings::Value read_value(const LayerField& f, const nlohmann::json& v) {
    switch (f.type) {
        case FieldType::Integer:
            if (!v.is_number_integer())
                throw ShapeError(quoted(f.key) + " must be an integer, gets " + v.dump());
            if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kInt64Max))
                throw ShapeError(quoted(f.key) + " is too large, gets " + v.dump());
            return v.get<int64_t>();
        case FieldType::Float: {
            if (!v.is_number()) throw ShapeError(quoted(f.key) + " must be a number, gets " + v.dump());
            const double d = v.get<double>();
            if (std::fabs(d) > FLT_MAX)
                throw ShapeError(quoted(f.key) + " is out of the float range, gets " + v.dump());
            return static_cast<double>(static_cast<float>(d));  // the layer computes with the float
        }
        case FieldType::Boolean:
            if (!v.is_boolean()) throw ShapeError(quoted(f.key) + " must be true or false");
            return v.get<bool>();
    }
    throw std::logic_error("unknown field type");
}

double as_double(const LayerSettings::Value& v) {
    return std::visit([](auto x) { return static_cast<double>(x); }, v);
}

std::string value_text(const LayerSettings::Value& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&v)) return shortest_text(*d);
    return std::get<bool>(v) ? "true" : "false";
}

// "\"p\" (drop probability)": the key, and the label where it says more.
std::string field_name(const LayerField& f) {
    std::string label = f.label;
    for (char& c : label) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return label == f.key ? quoted(f.key) : quoted(f.key) + " (" + label + ")";
}

void check_range(const LayerField& f, const LayerSettings::Value& v) {
    if (f.type == FieldType::Boolean) return;
    const double x = as_double(v);
    const bool low = f.min_open ? x <= f.min : x < f.min;
    const bool high = f.max_open ? x >= f.max : x > f.max;
    if (low || high)
        throw ShapeError(field_name(f) + " must be " + f.range_text() + ", gets " + value_text(v));
}

void check_known_keys(const LayerKind& kind, const nlohmann::json& spec) {
    for (const auto& [key, value] : spec.items()) {
        if (key == "type") continue;
        bool known = false;
        std::string list;
        for (const auto& f : kind.fields) {
            known |= f.key == key;
            list += (list.empty() ? "" : ", ") + f.key;
        }
        if (!known)
            throw ShapeError("unknown setting \"" + key + "\"" +
                             (list.empty() ? "" : " (known: " + list + ")"));
    }
}

}  // namespace

double LayerField::editor_min() const {
    if (!zero_means.empty()) return 0;
    const double step = type == FieldType::Integer ? 1 : std::pow(10.0, -decimals);
    return std::max(min_open ? min + step : min, editor_floor);
}

double LayerField::editor_max() const {
    const double step = type == FieldType::Integer ? 1 : std::pow(10.0, -decimals);
    return std::min(max_open ? max - step : max, editor_ceiling);
}

std::string LayerField::range_text() const {
    const bool has_min = std::isfinite(min), has_max = std::isfinite(max);
    if (has_min && !has_max) {
        if ((min == 0 && min_open) || (type == FieldType::Integer && min == 1 && !min_open))
            return "positive";
        return (min_open ? "more than " : "at least ") + shortest_text(min);
    }
    if (!has_min && has_max) return (max_open ? "less than " : "at most ") + shortest_text(max);
    if (!has_min && !has_max) return "a number";
    return std::string("in ") + (min_open ? "(" : "[") + shortest_text(min) + ", " + shortest_text(max) +
           (max_open ? ")" : "]");
}

void LayerSettings::set(const std::string& key, Value value, bool given) {
    entries_.push_back({key, value, given});
}

const LayerSettings::Entry& LayerSettings::entry(std::string_view key) const {
    for (const auto& e : entries_)
        if (e.key == key) return e;
    throw std::logic_error("layer setting \"" + std::string(key) + "\" is not in the registry entry");
}

bool LayerSettings::given(std::string_view key) const { return entry(key).given; }
int64_t LayerSettings::integer(std::string_view key) const { return std::get<int64_t>(entry(key).value); }
float LayerSettings::real(std::string_view key) const {
    return static_cast<float>(std::get<double>(entry(key).value));
}
bool LayerSettings::flag(std::string_view key) const { return std::get<bool>(entry(key).value); }

const std::vector<LayerKind>& layer_registry() {
    static const std::vector<LayerKind> registry = make_registry();
    return registry;
}

const LayerKind* find_layer_kind(std::string_view name) {
    for (const auto& k : layer_registry())
        if (k.name == name) return &k;
    return nullptr;
}

std::vector<std::string> layer_kinds() {
    std::vector<std::string> names;
    for (const auto& k : layer_registry()) names.push_back(k.name);
    return names;
}

LayerSettings read_layer_settings(const LayerKind& kind, const nlohmann::json& spec) {
    check_known_keys(kind, spec);
    LayerSettings settings;
    for (const LayerField& f : kind.fields) {
        if (spec.contains(f.key)) {
            const LayerSettings::Value v = read_value(f, spec[f.key]);
            check_range(f, v);
            settings.set(f.key, v, true);
            continue;
        }
        if (f.when_absent == WhenAbsent::Required) throw ShapeError("needs " + quoted(f.key));
        const double d = f.default_value;
        settings.set(f.key,
                     f.type == FieldType::Integer ? LayerSettings::Value(static_cast<int64_t>(d))
                     : f.type == FieldType::Boolean
                         ? LayerSettings::Value(d != 0)
                         : LayerSettings::Value(static_cast<double>(static_cast<float>(d))),
                     false);
    }
    return settings;
}

std::unique_ptr<Layer> make_layer(const nlohmann::json& spec) {
    if (!spec.is_object()) throw ShapeError("must be a JSON object, gets " + spec.dump());
    if (!spec.contains("type") || !spec["type"].is_string()) throw ShapeError("needs a \"type\" string");
    const std::string type = spec["type"];
    const LayerKind* kind = find_layer_kind(type);
    if (!kind) {
        std::string known;
        for (const auto& k : layer_kinds()) known += (known.empty() ? "" : ", ") + k;
        throw ShapeError("unknown layer type \"" + type + "\" (known: " + known + ")");
    }
    return kind->make(read_layer_settings(*kind, spec));
}

nlohmann::json new_layer_json(const LayerKind& kind) {
    nlohmann::json j{{"type", kind.name}};
    for (const LayerField& f : kind.fields) {
        if (std::isnan(f.new_layer_value)) continue;
        if (f.type == FieldType::Integer)
            j[f.key] = static_cast<int64_t>(f.new_layer_value);
        else if (f.type == FieldType::Boolean)
            j[f.key] = f.new_layer_value != 0;
        else
            j[f.key] = f.new_layer_value;
    }
    return j;
}

}  // namespace mpwb
