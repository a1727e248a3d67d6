// Sweep specifications: reading, expansion (grid or seeded random sampling) and validation of
// every planned run. Each axis value is checked alone against the base first, so a bad value is
// reported at its own field (axes[1].values[2]) rather than as the first run that contains it.
#include "sessions/sweep_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/common/checked_arith.h"
#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/common/rng.h"
#include "core/common/text_format.h"
#include "core/data/synthetic.h"
#include "core/nn/network.h"

namespace mpwb {

namespace {

namespace fs = std::filesystem;

constexpr double kMaxExactInteger = 0x1p53;
constexpr std::ptrdiff_t kMaxSettingDepth = 4;

const std::vector<std::string_view> kSpecKeys = {"name",    "description", "uuid",    "preset",
                                                 "network", "training",    "axes",    "method",
                                                 "samples", "seed",        "max_runs"};

[[noreturn]] void spec_error(const std::string& origin, const std::string& field,
                             const std::string& problem) {
    throw ConfigError(origin + ": " + field + ": " + problem);
}

std::string axis_field(std::size_t axis) { return "axes[" + std::to_string(axis) + "]"; }
std::string value_field(std::size_t axis, std::size_t value) {
    return axis_field(axis) + ".values[" + std::to_string(value) + "]";
}

// The text of an error a reader threw, without knowing which of the project's types it was.
template <class F>
void rethrow_at(const std::string& origin, const std::string& field, F&& f) {
    try {
        f();
    } catch (const Error& e) {
        spec_error(origin, field, e.what());
    } catch (const nlohmann::json::exception& e) {
        spec_error(origin, field, json_exception_text(e));
    }
}

std::string string_field(const nlohmann::json& spec, const std::string& origin, const char* key) {
    const auto it = spec.find(key);
    if (it == spec.end()) return {};
    if (!it->is_string() || it->get<std::string>().empty())
        spec_error(origin, key, "must be a non-empty string");
    return it->get<std::string>();
}

std::int64_t integer_field(const nlohmann::json& spec, const std::string& origin, const char* key,
                           std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
    const auto it = spec.find(key);
    if (it == spec.end()) return fallback;
    if (!it->is_number_integer()) spec_error(origin, key, "must be an integer, got " + it->dump());
    const bool fits = it->is_number_unsigned()
                          ? it->get<std::uint64_t>() <= std::uint64_t(hi)
                          : it->get<std::int64_t>() >= lo && it->get<std::int64_t>() <= hi;
    if (!fits)
        spec_error(
            origin, key,
            "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + it->dump());
    return it->get<std::int64_t>();
}

// {"optimizer": {"kind": value}} for "optimizer.kind".
nlohmann::json setting_patch(const std::string& setting, const nlohmann::json& value) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t dot; (dot = setting.find('.', start)) != std::string::npos; start = dot + 1)
        parts.push_back(setting.substr(start, dot - start));
    parts.push_back(setting.substr(start));
    nlohmann::json patch = value;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) patch = nlohmann::json{{*it, patch}};
    return patch;
}

// Training overrides over base. The readers of optimizer, schedule and scaler replace the whole
// object, so base's values go under a partial override ({"optimizer": {"beta1": 0.95}} keeps the
// preset's optimizer kind).
TrainConfig apply_overrides(const TrainConfig& base, nlohmann::json overrides) {
    auto merge_under = [&](const char* key, nlohmann::json base_json) {
        const auto it = overrides.find(key);
        if (it == overrides.end() || !it->is_object()) return;
        base_json.merge_patch(*it);
        *it = std::move(base_json);
    };
    merge_under("optimizer", nlohmann::json(base.optimizer));
    merge_under("schedule", nlohmann::json(base.schedule));
    if (base.scaler) merge_under("scaler", loss_scaler_config_to_json(*base.scaler));
    TrainConfig config = train_config_from_json(overrides, base);
    config.validate();
    return config;
}

// What a run's network must fit, known without loading its dataset: a synthetic set by its
// declared sizes (generating 1e8 points per planned run would cost seconds and gigabytes).
struct DeclaredData {
    std::string name;
    TargetKind targets = TargetKind::ClassPerSample;  // every synthetic set
    int classes = 0;
    int64_t batch = 1;  // the largest batch the trainer builds the network for
};

// Nothing for a dataset read from a file: it is not opened at plan time.
std::optional<DeclaredData> declared_data(const TrainConfig& config) {
    const DatasetSpec& d = config.dataset;
    if (!d.is_synthetic()) return std::nullopt;
    const SyntheticKind kind = parse_synthetic_kind(d.kind);
    const SyntheticSplit split = synthetic_split({.kind = kind,
                                                  .samples = d.samples,
                                                  .noise = d.noise,
                                                  .test_ratio = d.test_ratio,
                                                  .classes = d.classes});
    // As Trainer's constructor sizes it: the training batch or the evaluation batch.
    const int64_t eval_batch = std::min(config.eval_batch, std::max<int64_t>(split.test, 1));
    return DeclaredData{.name = synthetic_kind_name(kind),
                        .classes = d.classes,
                        .batch = std::max(std::min(config.batch_size, split.train), eval_batch)};
}

// The reason a network description does not fit the declared data; empty when it does. Measured
// with Network::inspect, which allocates nothing (the trainer's build would allocate every weight).
std::string network_problem(const nlohmann::json& description, const std::optional<DeclaredData>& data) {
    try {
        const Network network = Network::from_json(description);
        if (!data) return {};
        const std::vector<LayerReport> layers = Network::inspect(description, Shape{2}, data->batch);
        for (const LayerReport& layer : layers)
            if (!layer.error.empty())
                return "layer " + std::to_string(layer.index) + " (" + layer.kind + "): " + layer.error;
        (void)run_loss(network.loss(), data->targets, data->name);  // as the trainer will refuse it
        const Shape& output = layers.back().output;
        if (output != Shape{int64_t{data->classes}})
            return "the network's output " + shape_to_string(output) + " does not match the " +
                   std::to_string(data->classes) + " classes of '" + data->name + "'";
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

// Each distinct (network, dataset, batch) of a plan is checked once: a network variant shared by
// thousands of runs costs one check, not one per run.
class NetworkChecks {
public:
    void check(const nlohmann::json& network, const TrainConfig& config) {
        const std::optional<DeclaredData> data = declared_data(config);
        const Key key{&network, data ? data->name : "", data ? data->classes : 0, data ? data->batch : 0};
        auto it = done_.find(key);
        if (it == done_.end()) it = done_.emplace(key, network_problem(network, data)).first;
        if (!it->second.empty()) throw NetworkError(it->second);
    }

private:
    // The network by its address in the spec (the base's, or a network axis's variant).
    using Key = std::tuple<const nlohmann::json*, std::string, int, int64_t>;
    std::map<Key, std::string> done_;
};

// A preset by name, a preset file (a path ending in .json or holding a '/', relative to
// base_dir), or a preset object (how self_contained_sweep_spec stores a file's content).
Preset read_preset(const nlohmann::json& value, const std::string& origin, const std::string& base_dir,
                   nlohmann::json& file_content) {
    Preset base;
    if (value.is_object()) {
        rethrow_at(origin, "preset", [&] { base = parse_preset(value, "preset object"); });
        return base;
    }
    if (!value.is_string() || value.get<std::string>().empty())
        spec_error(origin, "preset", "must be a preset name, a preset file or a preset object");
    const std::string preset = value.get<std::string>();
    const bool is_file = preset.find('/') != std::string::npos || fs::path(preset).extension() == ".json";
    if (!is_file) {
        rethrow_at(origin, "preset", [&] { base = load_preset(preset); });
        return base;
    }
    const std::string path = fs::path(preset).is_absolute() ? preset : (fs::path(base_dir) / preset).string();
    rethrow_at(origin, "preset", [&] {
        file_content = read_json_file(path, "preset file");
        base = parse_preset(file_content, path);
    });
    return base;
}

Preset read_base(const nlohmann::json& spec, const std::string& origin, const std::string& base_dir,
                 nlohmann::json& preset_file) {
    const bool has_preset = spec.contains("preset"), has_network = spec.contains("network");
    if (has_preset == has_network)
        spec_error(origin, "preset",
                   "give either \"preset\" (a preset name or file) or \"network\" with \"training\"");
    Preset base;
    if (has_preset) {
        base = read_preset(spec["preset"], origin, base_dir, preset_file);
    } else {
        if (!spec["network"].is_object())
            spec_error(origin, "network", "must be a network object ({\"layers\": ...})");
        const auto name = spec["network"].find("name");
        base.name = name != spec["network"].end() && name->is_string() ? name->get<std::string>() : "network";
        base.network = spec["network"];
        rethrow_at(origin, "network", [&] { (void)Network::from_json(base.network); });
    }
    if (const auto it = spec.find("training"); it != spec.end()) {
        if (!it->is_object()) spec_error(origin, "training", "must be an object of training settings");
        rethrow_at(origin, "training", [&] { base.training = apply_overrides(base.training, *it); });
    }
    return base;
}

std::optional<SweepRange> read_range(const nlohmann::json& range, const std::string& origin,
                                     const std::string& field) {
    rethrow_at(origin, field, [&] { check_setting_keys(range, "a range", {"min", "max", "log"}); });
    for (const char* key : {"min", "max"})
        if (!range.contains(key) || !range[key].is_number() || !std::isfinite(range[key].get<double>()))
            spec_error(origin, field + "." + key, "a range needs a finite number here");
    SweepRange r;
    r.min = range["min"].get<double>();
    r.max = range["max"].get<double>();
    r.integer = range["min"].is_number_integer() && range["max"].is_number_integer();
    // Integers are drawn through doubles: beyond 2^53 they would not be exact (nor fit, near 2^63).
    if (r.integer && (std::fabs(r.min) > kMaxExactInteger || std::fabs(r.max) > kMaxExactInteger))
        spec_error(origin, field, "integer bounds must lie within +-2^53");
    if (range.contains("log")) {
        if (!range["log"].is_boolean()) spec_error(origin, field + ".log", "must be true or false");
        r.log = range["log"].get<bool>();
    }
    if (r.min > r.max)
        spec_error(origin, field, "min " + range["min"].dump() + " is above max " + range["max"].dump());
    if (r.log && r.min <= 0)
        spec_error(origin, field + ".min", "a log range needs min > 0, got " + range["min"].dump());
    return r;
}

// A network axis: each value is a preset name (its network) or a network object with a "name".
void read_network_values(SweepAxis& axis, const std::string& origin, std::size_t index) {
    std::set<std::string> names;
    for (std::size_t j = 0; j < axis.values.size(); ++j) {
        nlohmann::json& value = axis.values[j];
        const std::string field = value_field(index, j);
        if (value.is_string()) {
            rethrow_at(origin, field,
                       [&] { axis.networks.push_back(load_preset(value.get<std::string>()).network); });
        } else if (value.is_object()) {
            if (!value.contains("name") || !value["name"].is_string())
                spec_error(origin, field, "a network variant needs a \"name\" (a string) to tell it apart");
            rethrow_at(origin, field, [&] { (void)Network::from_json(value); });
            axis.networks.push_back(value);
            value = value["name"];
        } else {
            spec_error(origin, field,
                       "a network variant is a preset name or a network object, got " + value.dump());
        }
        if (!names.insert(value.get<std::string>()).second)
            spec_error(origin, field, "network variant '" + value.get<std::string>() + "' appears twice");
    }
}

SweepAxis read_axis(const nlohmann::json& j, const std::string& origin, std::size_t index,
                    SweepMethod method) {
    const std::string field = axis_field(index);
    rethrow_at(origin, field, [&] { check_setting_keys(j, "an axis", {"setting", "values"}); });
    if (!j.contains("setting") || !j["setting"].is_string() || j["setting"].get<std::string>().empty())
        spec_error(origin, field + ".setting", "each axis needs \"setting\": a setting path such as \"lr\"");
    SweepAxis axis;
    axis.setting = j["setting"].get<std::string>();
    // No setting lies deeper than "scaler.growth_interval"; a path of thousands of parts would
    // nest the overrides as deep (and every recursive walk of them with it).
    if (std::count(axis.setting.begin(), axis.setting.end(), '.') >= kMaxSettingDepth)
        spec_error(origin, field + ".setting",
                   "'" + axis.setting.substr(0, 80) + "': unknown setting (too deep)");
    if (!j.contains("values")) spec_error(origin, field + ".values", "each axis needs \"values\"");
    const nlohmann::json& values = j["values"];
    if (values.is_object()) {
        if (method != SweepMethod::Random || axis.setting == "network")
            spec_error(
                origin, field + ".values",
                "a range {\"min\", \"max\"} needs \"method\": \"random\" and a numeric setting; a grid "
                "takes a list of values");
        axis.range = read_range(values, origin, field + ".values");
        return axis;
    }
    if (!values.is_array()) spec_error(origin, field + ".values", "must be a list of values or a range");
    if (values.empty())
        spec_error(origin, field + ".values", "the axis '" + axis.setting + "' has no values");
    for (std::size_t v = 0; v < values.size(); ++v)
        if (values[v].is_null()) spec_error(origin, value_field(index, v), "a value cannot be null");
    axis.values = values.get<std::vector<nlohmann::json>>();
    if (axis.setting == "network") read_network_values(axis, origin, index);
    return axis;
}

// Two axes over one setting (or one inside the other, "optimizer" and "optimizer.kind").
void refuse_overlap(const std::vector<SweepAxis>& axes, const std::string& origin) {
    for (std::size_t i = 0; i < axes.size(); ++i)
        for (std::size_t k = 0; k < i; ++k) {
            const std::string& a = axes[k].setting;
            const std::string& b = axes[i].setting;
            const bool inside = a == b || b.rfind(a + ".", 0) == 0 || a.rfind(b + ".", 0) == 0;
            if (inside)
                spec_error(
                    origin, axis_field(i) + ".setting",
                    "'" + b + "' is already swept by " + axis_field(k) + " ('" + a + "'): duplicate axis");
        }
}

// The training overrides of one axis value.
nlohmann::json value_patch(const SweepAxis& axis, const nlohmann::json& value) {
    return axis.setting == "network" ? nlohmann::json::object() : setting_patch(axis.setting, value);
}

// Each value alone over the base: a bad value is reported at its own field. An unknown setting
// shows up with the first value and is reported at the axis's setting.
void check_axis_values(const SweepSpec& spec, std::size_t index) {
    const SweepAxis& axis = spec.axes[index];
    if (axis.setting == "network") return;
    std::vector<nlohmann::json> probes = axis.values;
    if (axis.range && axis.range->integer)
        probes = {static_cast<std::int64_t>(axis.range->min), static_cast<std::int64_t>(axis.range->max)};
    else if (axis.range)
        probes = {axis.range->min, axis.range->max};
    for (std::size_t j = 0; j < probes.size(); ++j) {
        std::string text;
        try {
            (void)apply_overrides(spec.base.training, value_patch(axis, probes[j]));
        } catch (const Error& e) {
            text = e.what();
        } catch (const nlohmann::json::exception& e) {
            text = json_exception_text(e);
        }
        if (!text.empty()) {
            if (text.rfind("unknown setting", 0) == 0)
                spec_error(spec.origin, axis_field(index) + ".setting", "'" + axis.setting + "': " + text);
            spec_error(
                spec.origin,
                axis.range ? axis_field(index) + ".values." + (j ? "max" : "min") : value_field(index, j),
                text);
        }
    }
}

void check_run_count(const SweepSpec& spec) {
    if (spec.method == SweepMethod::Random) {
        if (spec.samples > spec.max_runs)
            spec_error(spec.origin, "samples",
                       std::to_string(spec.samples) + " runs are more than max_runs " +
                           std::to_string(spec.max_runs));
        return;
    }
    std::int64_t runs = 1;
    std::string sizes;
    for (const auto& axis : spec.axes) {
        runs = saturating_mul(runs, static_cast<std::int64_t>(axis.values.size()));
        sizes += (sizes.empty() ? "" : " x ") + std::to_string(axis.values.size());
    }
    if (runs > spec.max_runs)
        spec_error(spec.origin, "axes",
                   "the grid has " + (runs == kInt64Max ? std::string("too many") : std::to_string(runs)) +
                       " runs (" + sizes + "), more than max_runs " + std::to_string(spec.max_runs) +
                       "; drop values or raise max_runs (at most " + std::to_string(kSweepHardMaxRuns) + ")");
}

// Bytes of JSON text of a value as a planned run keeps it.
int64_t json_bytes(const nlohmann::json& value) { return static_cast<int64_t>(value.dump().size()); }

// runs x (the largest network + the largest value of each axis) against kSweepMaxPlanBytes, before
// anything is built or planned.
void check_plan_size(const SweepSpec& spec) {
    int64_t network = json_bytes(spec.base.network), values = 0;
    for (const SweepAxis& axis : spec.axes) {
        int64_t largest = axis.range ? 32 : 0;  // a drawn number
        for (const auto& value : axis.values) largest = std::max(largest, json_bytes(value));
        for (const auto& variant : axis.networks) network = std::max(network, json_bytes(variant));
        values = saturating_add(values, largest);
    }
    const int64_t runs = sweep_run_count(spec);
    const int64_t per_run = saturating_add(network, values);
    const int64_t total = saturating_mul(runs, per_run);
    if (total > kSweepMaxPlanBytes)
        spec_error(spec.origin, spec.method == SweepMethod::Random ? "samples" : "axes",
                   "the plan holds " + size_text(runs) + " runs of up to " + size_text(per_run) +
                       " bytes of network and settings each, " + size_text(total) +
                       " bytes in all, more than the limit of " + size_text(kSweepMaxPlanBytes) +
                       "; plan fewer runs or smaller networks");
}

// A value in [0, 1) with 53 random bits.
double unit_draw(Rng& rng) { return static_cast<double>(rng.next_u64() >> 11) * 0x1p-53; }

nlohmann::json draw_from_range(const SweepRange& r, Rng& rng) {
    const double u = unit_draw(rng);
    if (r.integer) {
        const auto lo = static_cast<std::int64_t>(r.min), hi = static_cast<std::int64_t>(r.max);
        if (!r.log) return lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - lo) + 1));
        const double x =
            std::exp(std::log(double(lo)) + u * (std::log(double(hi) + 1) - std::log(double(lo))));
        return std::clamp(static_cast<std::int64_t>(std::floor(x)), lo, hi);
    }
    const double x = r.log ? std::exp(std::log(r.min) + u * (std::log(r.max) - std::log(r.min)))
                           : r.min + u * (r.max - r.min);
    // Settings are floats mostly: the float's shortest spelling keeps labels short.
    const double drawn = std::clamp(x, r.min, r.max);
    if (std::fabs(drawn) > double(std::numeric_limits<float>::max())) return drawn;
    return float_as_json_double(static_cast<float>(drawn));
}

// The value index (or drawn value) of every axis for run `index`.
struct Choice {
    nlohmann::json value;
    std::size_t position = 0;  // into values and networks; 0 for a drawn value
};

std::vector<Choice> grid_choices(const SweepSpec& spec, std::int64_t index) {
    std::vector<Choice> out(spec.axes.size());
    for (std::size_t a = spec.axes.size(); a-- > 0;) {  // the last axis varies fastest
        const auto n = static_cast<std::int64_t>(spec.axes[a].values.size());
        out[a].position = static_cast<std::size_t>(index % n);
        out[a].value = spec.axes[a].values[out[a].position];
        index /= n;
    }
    return out;
}

// One random run: each axis draws in axis order from one generator shared across the runs.
std::vector<Choice> draw_choices(const SweepSpec& spec, Rng& rng) {
    std::vector<Choice> out(spec.axes.size());
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
        const SweepAxis& axis = spec.axes[a];
        if (axis.range) {
            out[a] = {draw_from_range(*axis.range, rng), 0};
        } else {
            const auto position = static_cast<std::size_t>(rng.below(axis.values.size()));
            out[a] = {axis.values[position], position};
        }
    }
    return out;
}

// Runs are drawn in order, so run `index` replays the draws of the runs before it.
std::vector<Choice> random_choices(const SweepSpec& spec, std::int64_t index) {
    Rng rng(spec.sampling_seed);
    std::vector<Choice> out;
    for (std::int64_t run = 0; run <= index; ++run) out = draw_choices(spec, rng);
    return out;
}

// The "context" of a network description's Embedding layer; nullopt without one (or with one
// that Network::from_json will refuse by itself).
std::optional<int64_t> embedding_context(const nlohmann::json& network) {
    const auto layers = network.find("layers");
    if (layers == network.end() || !layers->is_array()) return std::nullopt;
    for (const nlohmann::json& layer : *layers) {
        if (!layer.is_object()) continue;
        const auto type = layer.find("type");
        if (type == layer.end() || !type->is_string() || *type != "Embedding") continue;
        const auto context = layer.find("context");
        if (context == layer.end() || !context->is_number_integer()) return std::nullopt;
        return context->get<int64_t>();
    }
    return std::nullopt;
}

// A text run's windows and its network's position table must agree (docs/SWEEPS.md, "Text
// runs"). A network variant carries its context: the run's dataset.context becomes its
// Embedding's, so a variant is the one place the number is written. A dataset.context axis beside
// it must give the same value; any other run's dataset context may not exceed its Embedding's.
void fit_text_context(TrainConfig& training, const nlohmann::json& network, const SweepSetting* variant,
                      bool context_axis) {
    if (!training.dataset.is_text()) return;
    const std::optional<int64_t> context = embedding_context(network);
    if (!context) return;
    const std::string dataset_context = std::to_string(training.dataset.context);
    if (variant && context_axis && *context != training.dataset.context)
        throw ConfigError("network variant '" + sweep_value_text(variant->value) + "' has context " +
                          std::to_string(*context) + " (its Embedding) but this run's dataset.context is " +
                          dataset_context +
                          "; a variant sets its run's context, so drop the dataset.context axis or make the "
                          "two agree");
    if (variant) {
        training.dataset.context = *context;
        training.validate();
        return;
    }
    if (training.dataset.context > *context)
        throw ConfigError("dataset.context " + dataset_context +
                          " is longer than the network's Embedding context " + std::to_string(*context) +
                          " (the positions it has embeddings for)");
}

PlannedRun make_run(const SweepSpec& spec, std::int64_t index, const std::vector<Choice>& choices,
                    NetworkChecks& checks) {
    PlannedRun run;
    run.index = index;
    run.preset = spec.base;
    nlohmann::json overrides = nlohmann::json::object();
    const nlohmann::json* network = &spec.base.network;
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
        const SweepAxis& axis = spec.axes[a];
        run.settings.push_back({axis.setting, choices[a].value});
        if (axis.setting == "network")
            network = &axis.networks[choices[a].position];
        else
            overrides.merge_patch(setting_patch(axis.setting, choices[a].value));
    }
    run.preset.network = *network;
    const SweepSetting* variant = nullptr;
    bool context_axis = false;
    for (const SweepSetting& s : run.settings) {
        if (s.setting == "network") variant = &s;
        context_axis = context_axis || s.setting == "dataset.context" || s.setting == "dataset";
    }
    const std::string field = "run " + std::to_string(index) + " (" + sweep_settings_text(run) + ")";
    rethrow_at(spec.origin, field, [&] {
        run.preset.training = apply_overrides(spec.base.training, overrides);
        fit_text_context(run.preset.training, *network, variant, context_axis);
        checks.check(*network, run.preset.training);
    });
    return run;
}

}  // namespace

SweepSpec parse_sweep_spec(const nlohmann::json& j, const std::string& origin, const std::string& base_dir) {
    if (!j.is_object()) spec_error(origin, "(top level)", "a sweep spec must be a JSON object");
    rethrow_at(origin, "(top level)", [&] { check_setting_keys(j, "a sweep spec", kSpecKeys); });
    SweepSpec spec;
    spec.origin = origin;
    spec.source = j;
    spec.name = string_field(j, origin, "name");
    if (spec.name.empty()) spec_error(origin, "name", "a sweep needs a \"name\"");
    spec.uuid = string_field(j, origin, "uuid");
    const std::string method = j.contains("method") ? string_field(j, origin, "method") : "grid";
    if (method != "grid" && method != "random")
        spec_error(origin, "method", "must be \"grid\" or \"random\", got \"" + method + "\"");
    spec.method = method == "random" ? SweepMethod::Random : SweepMethod::Grid;
    spec.max_runs = integer_field(j, origin, "max_runs", kSweepDefaultMaxRuns, 1, kSweepHardMaxRuns);
    if (spec.method == SweepMethod::Random) {
        if (!j.contains("samples"))
            spec_error(origin, "samples", "\"method\": \"random\" needs \"samples\": the number of runs");
        spec.samples = integer_field(j, origin, "samples", 0, 1, kSweepHardMaxRuns);
        spec.sampling_seed = static_cast<std::uint64_t>(integer_field(j, origin, "seed", 0, 0, kInt64Max));
    } else {
        for (const char* key : {"samples", "seed"})
            if (j.contains(key))
                spec_error(origin, key,
                           "only \"method\": \"random\" takes this; a grid runs every combination");
    }
    spec.base = read_base(j, origin, base_dir, spec.preset_file);
    if (!j.contains("axes") || !j["axes"].is_array() || j["axes"].empty())
        spec_error(origin, "axes", "a sweep needs \"axes\": a list of {\"setting\", \"values\"}");
    if (j["axes"].size() > std::size_t(kSweepMaxAxes))
        spec_error(origin, "axes",
                   std::to_string(j["axes"].size()) + " axes, more than the limit of " +
                       std::to_string(kSweepMaxAxes) + " (each axis sweeps a setting of its own)");
    for (std::size_t i = 0; i < j["axes"].size(); ++i)
        spec.axes.push_back(read_axis(j["axes"][i], origin, i, spec.method));
    refuse_overlap(spec.axes, origin);
    check_run_count(spec);
    check_plan_size(spec);
    for (std::size_t i = 0; i < spec.axes.size(); ++i) check_axis_values(spec, i);
    return spec;
}

SweepSpec read_sweep_spec_file(const std::string& path) {
    nlohmann::json j;
    try {
        j = read_json_file(path, "sweep spec");
    } catch (const JsonInputError& e) {
        throw ConfigError(e.what());
    }
    const fs::path folder = fs::path(path).parent_path();
    return parse_sweep_spec(j, "sweep spec " + path, folder.empty() ? "." : folder.string());
}

nlohmann::json self_contained_sweep_spec(const SweepSpec& spec) {
    nlohmann::json stored = spec.source;
    if (spec.preset_file.is_null()) return stored;
    // A bare network file is a preset of that network and default settings.
    const bool bare_network = spec.preset_file.contains("layers");
    nlohmann::json& preset = stored["preset"] =
        bare_network ? nlohmann::json{{"network", spec.preset_file}} : spec.preset_file;
    // A file without a name is named by its path; the stored preset keeps that name.
    if (!preset.contains("name")) preset["name"] = spec.base.name;
    return stored;
}

std::int64_t sweep_run_count(const SweepSpec& spec) {
    if (spec.method == SweepMethod::Random) return spec.samples;
    std::int64_t runs = 1;
    for (const auto& axis : spec.axes)
        runs = saturating_mul(runs, static_cast<std::int64_t>(axis.values.size()));
    return runs;
}

PlannedRun plan_sweep_run(const SweepSpec& spec, std::int64_t index) {
    const std::int64_t runs = sweep_run_count(spec);
    if (index < 0 || index >= runs)
        spec_error(
            spec.origin, "index",
            "the sweep plans runs 0 to " + std::to_string(runs - 1) + ", not " + std::to_string(index));
    NetworkChecks checks;
    return make_run(
        spec, index,
        spec.method == SweepMethod::Grid ? grid_choices(spec, index) : random_choices(spec, index), checks);
}

std::vector<PlannedRun> plan_sweep(const SweepSpec& spec) {
    std::vector<PlannedRun> plan;
    NetworkChecks checks;
    const std::int64_t runs = sweep_run_count(spec);
    if (spec.method == SweepMethod::Grid) {
        for (std::int64_t i = 0; i < runs; ++i)
            plan.push_back(make_run(spec, i, grid_choices(spec, i), checks));
        return plan;
    }
    Rng rng(spec.sampling_seed);
    for (std::int64_t i = 0; i < runs; ++i)
        plan.push_back(make_run(spec, i, draw_choices(spec, rng), checks));
    return plan;
}

std::string sweep_value_text(const nlohmann::json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number_float()) return shortest_text(value.get<double>());
    return value.dump();
}

std::string sweep_settings_text(const PlannedRun& run) {
    std::string text;
    for (const auto& s : run.settings)
        text += (text.empty() ? "" : " ") + s.setting + "=" + sweep_value_text(s.value);
    return text;
}

nlohmann::json sweep_plan_to_json(const SweepSpec& spec, const std::vector<PlannedRun>& plan) {
    nlohmann::json axes = nlohmann::json::array();
    for (const auto& axis : spec.axes) axes.push_back(axis.setting);
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& run : plan) {
        nlohmann::json settings = nlohmann::json::object();
        for (const auto& s : run.settings) settings[s.setting] = s.value;
        runs.push_back(
            {{"index", run.index}, {"settings", settings}, {"training", to_json(run.preset.training)}});
    }
    return {{"name", spec.name},
            {"method", spec.method == SweepMethod::Grid ? "grid" : "random"},
            {"runs", plan.size()},
            {"axes", axes},
            {"plan", runs}};
}

}  // namespace mpwb
