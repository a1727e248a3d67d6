// TrainConfig validation and JSON.
#include "core/train/train_config.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "core/common/error.h"

namespace mpwb {
namespace {

[[noreturn]] void wrong_field(const std::string& key, const nlohmann::json& v, const char* wanted) {
    throw ConfigError("setting \"" + key + "\" must be " + wanted + ", got " + v.dump());
}

// Numbers are range-checked before conversion: nlohmann converts with static_cast, which is
// undefined for a double beyond the target's range and wraps integers beyond it.
template <typename T>
T get_field(const nlohmann::json& j, const std::string& key) {
    const nlohmann::json& v = j.at(key);
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) wrong_field(key, v, "true or false");
        return v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
        if (!v.is_number_integer()) wrong_field(key, v, "an integer");
        const bool fits = v.is_number_unsigned()
                              ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                              : std::in_range<T>(v.get<int64_t>());
        if (!fits) wrong_field(key, v, ("an integer from " + std::to_string(std::numeric_limits<T>::min()) +
                                        " to " + std::to_string(std::numeric_limits<T>::max())).c_str());
        return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number()) wrong_field(key, v, "a number");
        const double x = v.get<double>();
        if (std::fabs(x) > double(std::numeric_limits<T>::max())) wrong_field(key, v, "a number within float range");
        return static_cast<T>(x);
    } else {
        if (!v.is_string()) wrong_field(key, v, "a string");
        return v.get<T>();
    }
}

void check_known(const nlohmann::json& j, std::initializer_list<const char*> keys, const std::string& where) {
    for (const auto& [key, value] : j.items()) {
        bool known = false;
        for (const char* k : keys) known |= key == k;
        if (!known) throw ConfigError("unknown setting \"" + key + "\" in " + where);
    }
}

}  // namespace

bool DatasetSpec::is_synthetic() const {
    return kind == "spiral" || kind == "circles" || kind == "xor" || kind == "gauss" || kind == "moons";
}

PrecisionPolicy TrainConfig::policy() const {
    return weight_grad_format ? PrecisionPolicy::make(precision, *weight_grad_format) : PrecisionPolicy::make(precision);
}

LossScalerConfig TrainConfig::effective_scaler() const {
    if (scaler) return *scaler;
    LossScalerConfig c;
    c.mode = policy().loss_scaling_by_default ? ScalerMode::Dynamic : ScalerMode::None;
    return c;
}

void TrainConfig::validate() const {
    if (epochs < 1 && max_steps < 1) throw ConfigError("epochs must be at least 1, gets " + std::to_string(epochs));
    if (max_steps < 0) throw ConfigError("max_steps must be >= 0, gets " + std::to_string(max_steps));
    if (batch_size < 1) throw ConfigError("batch size must be at least 1, gets " + std::to_string(batch_size));
    if (!(lr > 0.0f) || !std::isfinite(lr)) throw ConfigError("learning rate must be positive and finite, gets " + std::to_string(lr));
    if (!(clip_norm >= 0.0f) || !std::isfinite(clip_norm))
        throw ConfigError("clip_norm must be >= 0 and finite, gets " + std::to_string(clip_norm));
    if (threads < 0) throw ConfigError("threads must be >= 0, gets " + std::to_string(threads));
    if (stats_every < 0) throw ConfigError("stats_every must be >= 0, gets " + std::to_string(stats_every));
    if (eval_every < 0) throw ConfigError("eval_every must be >= 0, gets " + std::to_string(eval_every));
    if (eval_batch < 1) throw ConfigError("eval_batch must be at least 1, gets " + std::to_string(eval_batch));
    optimizer.validate();
    schedule.validate();
    effective_scaler().validate();
    (void)policy();
}

nlohmann::json to_json(const DatasetSpec& s) {
    nlohmann::json j{{"kind", s.kind}, {"normalize", s.normalize}};
    if (s.is_synthetic()) {
        j["samples"] = s.samples;
        j["noise"] = s.noise;
        j["test_ratio"] = s.test_ratio;
        j["classes"] = s.classes;
        j["seed"] = s.seed;
    } else {
        j["path"] = s.path;
    }
    if (s.kind == "csv") {
        j["test_ratio"] = s.test_ratio;
        j["seed"] = s.seed;
        j["label_column"] = s.label_column;
    }
    return j;
}

nlohmann::json to_json(const TrainConfig& c) {
    nlohmann::json j{{"dataset", to_json(c.dataset)},
                     {"epochs", c.epochs},
                     {"max_steps", c.max_steps},
                     {"batch_size", c.batch_size},
                     {"lr", c.lr},
                     {"optimizer", c.optimizer},
                     {"schedule", c.schedule},
                     {"clip_norm", c.clip_norm},
                     {"seed", c.seed},
                     {"threads", c.threads},
                     {"device_graphs", c.device_graphs},
                     {"precision", precision_name(c.precision)},
                     {"weight_grad_format", format_name(c.policy().weight_grads)},
                     {"scaler", loss_scaler_config_to_json(c.effective_scaler())},
                     {"stats_every", c.stats_every},
                     {"eval_every", c.eval_every},
                     {"eval_batch", c.eval_batch}};
    return j;
}

TrainConfig train_config_from_json(const nlohmann::json& j, TrainConfig c) {
    if (!j.is_object()) throw ConfigError("training settings must be a JSON object");
    check_known(j, {"dataset", "epochs", "max_steps", "batch_size", "lr", "optimizer", "schedule", "clip_norm", "seed",
                    "threads", "precision", "weight_grad_format", "scaler", "stats_every", "eval_every", "eval_batch", "device_graphs"},
                "training settings");
    if (j.contains("dataset")) {
        const auto& d = j["dataset"];
        if (!d.is_object()) throw ConfigError("\"dataset\" must be an object");
        check_known(d, {"kind", "path", "samples", "noise", "test_ratio", "classes", "seed", "normalize", "label_column"},
                    "dataset");
        if (d.contains("kind")) c.dataset.kind = get_field<std::string>(d, "kind");
        if (d.contains("path")) c.dataset.path = get_field<std::string>(d, "path");
        if (d.contains("samples")) c.dataset.samples = get_field<int64_t>(d, "samples");
        if (d.contains("noise")) c.dataset.noise = get_field<float>(d, "noise");
        if (d.contains("test_ratio")) c.dataset.test_ratio = get_field<double>(d, "test_ratio");
        if (d.contains("classes")) c.dataset.classes = get_field<int>(d, "classes");
        if (d.contains("seed")) c.dataset.seed = get_field<uint64_t>(d, "seed");
        if (d.contains("normalize")) c.dataset.normalize = get_field<bool>(d, "normalize");
        if (d.contains("label_column")) c.dataset.label_column = get_field<std::string>(d, "label_column");
    }
    if (j.contains("epochs")) c.epochs = get_field<int64_t>(j, "epochs");
    if (j.contains("max_steps")) c.max_steps = get_field<int64_t>(j, "max_steps");
    if (j.contains("batch_size")) c.batch_size = get_field<int64_t>(j, "batch_size");
    if (j.contains("lr")) c.lr = get_field<float>(j, "lr");
    if (j.contains("optimizer")) {
        OptimizerConfig o = c.optimizer;
        from_json(j["optimizer"], o);
        c.optimizer = o;
    }
    if (j.contains("schedule")) {
        ScheduleConfig s = c.schedule;
        from_json(j["schedule"], s);
        c.schedule = s;
    }
    if (j.contains("clip_norm")) c.clip_norm = get_field<float>(j, "clip_norm");
    if (j.contains("seed")) c.seed = get_field<uint64_t>(j, "seed");
    if (j.contains("threads")) c.threads = get_field<int>(j, "threads");
    if (j.contains("device_graphs")) c.device_graphs = get_field<bool>(j, "device_graphs");
    if (j.contains("precision")) c.precision = parse_precision(get_field<std::string>(j, "precision"));
    if (j.contains("weight_grad_format")) c.weight_grad_format = parse_format(get_field<std::string>(j, "weight_grad_format"));
    if (j.contains("scaler")) c.scaler = loss_scaler_config_from_json(j["scaler"]);
    if (j.contains("stats_every")) c.stats_every = get_field<int64_t>(j, "stats_every");
    if (j.contains("eval_every")) c.eval_every = get_field<int64_t>(j, "eval_every");
    if (j.contains("eval_batch")) c.eval_batch = get_field<int64_t>(j, "eval_batch");
    return c;
}

}  // namespace mpwb
