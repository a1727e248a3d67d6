// TrainConfig validation and JSON.
#include "core/train/train_config.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/data/image_folder.h"

namespace mpwb {

bool DatasetSpec::is_synthetic() const {
    return kind == "spiral" || kind == "circles" || kind == "xor" || kind == "gauss" || kind == "moons";
}

void DatasetSpec::validate() const {
    if (kind != "image-folder") return;
    check_image_sample_options({.height = image_height, .width = image_width, .channels = channels},
                               "dataset.");
    (void)parse_size_mismatch(size_mismatch, "dataset.size_mismatch");
    if (!(test_ratio > 0.0 && test_ratio < 1.0))
        throw ConfigError("dataset.test_ratio must be between 0 and 1 (exclusive), gets " +
                          std::to_string(test_ratio));
}

PrecisionPolicy TrainConfig::policy() const {
    return weight_grad_format ? PrecisionPolicy::make(precision, *weight_grad_format)
                              : PrecisionPolicy::make(precision);
}

LossScalerConfig TrainConfig::effective_scaler() const {
    if (scaler) return *scaler;
    LossScalerConfig c;
    c.mode = policy().loss_scaling_by_default ? ScalerMode::Dynamic : ScalerMode::None;
    return c;
}

ScaledRecipeConfig TrainConfig::effective_recipe() const {
    ScaledRecipeConfig c = recipe;
    c.recipe = PrecisionPolicy::make(precision).recipe;
    return c;
}

void TrainConfig::validate() const {
    if (epochs < 1 && max_steps < 1)
        throw ConfigError("epochs must be at least 1, gets " + std::to_string(epochs));
    if (max_steps < 0) throw ConfigError("max_steps must be >= 0, gets " + std::to_string(max_steps));
    if (batch_size < 1)
        throw ConfigError("batch size must be at least 1, gets " + std::to_string(batch_size));
    if (!(lr > 0.0f) || !std::isfinite(lr))
        throw ConfigError("learning rate must be positive and finite, gets " + std::to_string(lr));
    if (!(clip_norm >= 0.0f) || !std::isfinite(clip_norm))
        throw ConfigError("clip_norm must be >= 0 and finite, gets " + std::to_string(clip_norm));
    if (threads < 0) throw ConfigError("threads must be >= 0, gets " + std::to_string(threads));
    if (stats_every < 0) throw ConfigError("stats_every must be >= 0, gets " + std::to_string(stats_every));
    if (eval_every < 0) throw ConfigError("eval_every must be >= 0, gets " + std::to_string(eval_every));
    if (eval_batch < 1)
        throw ConfigError("eval_batch must be at least 1, gets " + std::to_string(eval_batch));
    dataset.validate();
    optimizer.validate();
    schedule.validate();
    effective_scaler().validate();
    effective_recipe().validate();
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
    if (s.kind == "image-folder") {
        j["test_ratio"] = s.test_ratio;
        j["seed"] = s.seed;
        j["image_height"] = s.image_height;
        j["image_width"] = s.image_width;
        j["channels"] = s.channels;
        j["size_mismatch"] = s.size_mismatch;
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
    if (c.policy().scaled()) j["recipe"] = scaled_recipe_config_to_json(c.effective_recipe());
    return j;
}

namespace {

void read_dataset(const nlohmann::json& d, DatasetSpec& spec) {
    check_setting_keys(d, "dataset",
                       {"kind", "path", "samples", "noise", "test_ratio", "classes", "seed", "normalize",
                        "label_column", "image_height", "image_width", "channels", "size_mismatch"});
    read_setting(d, "dataset", "kind", spec.kind);
    read_setting(d, "dataset", "path", spec.path);
    read_setting(d, "dataset", "samples", spec.samples);
    read_setting(d, "dataset", "noise", spec.noise);
    read_setting(d, "dataset", "test_ratio", spec.test_ratio);
    read_setting(d, "dataset", "classes", spec.classes);
    read_setting(d, "dataset", "seed", spec.seed);
    read_setting(d, "dataset", "normalize", spec.normalize);
    read_setting(d, "dataset", "label_column", spec.label_column);
    read_setting(d, "dataset", "image_height", spec.image_height);
    read_setting(d, "dataset", "image_width", spec.image_width);
    read_setting(d, "dataset", "channels", spec.channels);
    read_setting(d, "dataset", "size_mismatch", spec.size_mismatch);
    spec.validate();
}

// The settings that are one value each; the nested objects are read by their own readers.
void read_scalars(const nlohmann::json& j, TrainConfig& c) {
    read_setting(j, "", "epochs", c.epochs);
    read_setting(j, "", "max_steps", c.max_steps);
    read_setting(j, "", "batch_size", c.batch_size);
    read_setting(j, "", "lr", c.lr);
    read_setting(j, "", "clip_norm", c.clip_norm);
    read_setting(j, "", "seed", c.seed);
    read_setting(j, "", "threads", c.threads);
    read_setting(j, "", "device_graphs", c.device_graphs);
    read_setting(j, "", "stats_every", c.stats_every);
    read_setting(j, "", "eval_every", c.eval_every);
    read_setting(j, "", "eval_batch", c.eval_batch);
    if (j.contains("precision"))
        c.precision = parse_precision(setting_value<std::string>(j["precision"], "precision"));
    if (j.contains("weight_grad_format"))
        c.weight_grad_format =
            parse_format(setting_value<std::string>(j["weight_grad_format"], "weight_grad_format"));
}

}  // namespace

TrainConfig train_config_from_json(const nlohmann::json& j, TrainConfig c) {
    check_setting_keys(j, "training settings",
                       {"dataset", "epochs", "max_steps", "batch_size", "lr", "optimizer", "schedule",
                        "clip_norm", "seed", "threads", "precision", "weight_grad_format", "scaler", "recipe",
                        "stats_every", "eval_every", "eval_batch", "device_graphs"});
    if (j.contains("dataset")) read_dataset(j["dataset"], c.dataset);
    read_scalars(j, c);
    // Each nested reader reads into a copy: a refused object leaves nothing half-applied.
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
    if (j.contains("scaler")) c.scaler = loss_scaler_config_from_json(j["scaler"], "scaler");
    if (j.contains("recipe")) c.recipe = scaled_recipe_config_from_json(j["recipe"], c.recipe, "recipe");
    return c;
}

}  // namespace mpwb
