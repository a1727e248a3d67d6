// The registry of layer kinds: for each kind its name, its settings (type, default, range, help
// text), the shape rule in words and the factory that makes the layer. It is the one place a
// kind is described: Network::from_json reads and checks a layer's JSON through it, the network
// editor builds its palette and its settings forms from it, and the CUDA plan and the PyTorch
// export ask the Layer objects it makes (Layer::device_op, Layer::pytorch_module). Adding a kind
// is the layer's own file plus one entry in layer_registry.cpp; adding an activation is one entry
// of the activation table (core/backend/activations.h), which makes its kind here.
#pragma once
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/nn/layer.h"

namespace mpwb {

enum class FieldType { Integer, Float, Boolean };

// What a layer's description says when the field's key is absent.
enum class WhenAbsent {
    Default,   // the field's default_value
    Required,  // an error ("needs \"out\"")
    Derived,   // the factory works it out from other fields (a pooling stride is its kernel)
};

// One setting of a layer kind, as its JSON key, its editor row and its checks.
struct LayerField {
    static constexpr double kUnbounded = std::numeric_limits<double>::infinity();

    std::string key;    // JSON key
    std::string label;  // the editor's label, also names the field in messages
    FieldType type = FieldType::Integer;
    WhenAbsent when_absent = WhenAbsent::Default;
    double default_value = 0;  // when absent and when_absent is Default; a Boolean is 0 or 1
    // The valid range, checked on every description read; an open end excludes the bound.
    double min = -kUnbounded, max = kUnbounded;
    bool min_open = false, max_open = false;
    // The editor's spin box stays within these although the range goes on: larger values are
    // valid (the network's size limits judge them), but nobody types them.
    double editor_floor = -kUnbounded, editor_ceiling = kUnbounded;
    int decimals = 0;  // Float: the editor's decimals
    // What a new layer gets written into its JSON in the editor; NaN: nothing (absent).
    double new_layer_value = std::nan("");
    // Non-empty: the editor offers 0 for "not set" (and removes the key); this says what not
    // set means ("infer", "kernel").
    std::string zero_means = {};
    std::string help = {};

    // The lowest value the editor offers: 0 for "not set", else the range's start (one step in
    // when the start is open) or the editor's floor; the highest: the range's end or the ceiling.
    double editor_min() const;
    double editor_max() const;
    // "positive", "in [0, 1)", "at least 0": what "must be ..." says about the range.
    std::string range_text() const;
};

// A layer's settings as read and checked from its JSON: every field of its kind has a value
// (its default when absent), except Derived fields that were absent.
class LayerSettings {
public:
    using Value = std::variant<int64_t, double, bool>;

    void set(const std::string& key, Value value, bool given);
    bool given(std::string_view key) const;  // present in the JSON
    int64_t integer(std::string_view key) const;
    float real(std::string_view key) const;
    bool flag(std::string_view key) const;

private:
    struct Entry {
        std::string key;
        Value value;
        bool given;
    };
    const Entry& entry(std::string_view key) const;
    std::vector<Entry> entries_;
};

struct LayerKind {
    std::string name;        // the JSON "type"
    std::string help = {};   // one line for the palette
    std::string shape_rule;  // in words; Layer::plan computes it
    std::vector<LayerField> fields;
    std::function<std::unique_ptr<Layer>(const LayerSettings&)> make;
};

// Every kind, in the palette's order.
const std::vector<LayerKind>& layer_registry();
// nullptr when there is no such kind.
const LayerKind* find_layer_kind(std::string_view name);
std::vector<std::string> layer_kinds();

// Reads and checks a layer's settings against its kind; ShapeError naming the field.
LayerSettings read_layer_settings(const LayerKind& kind, const nlohmann::json& spec);
// Makes one layer from its JSON object; ShapeError with the reason (the network adds the layer).
std::unique_ptr<Layer> make_layer(const nlohmann::json& spec);
// A new layer of this kind as the editor adds it: {"type": kind} and the fields' new_layer_value.
nlohmann::json new_layer_json(const LayerKind& kind);

}  // namespace mpwb
