// TrainConfig validation and JSON.
#include "core/train/train_config.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>

#include "core/common/checked_arith.h"
#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/common/text_format.h"
#include "core/data/image_folder.h"
#include "core/data/synthetic.h"
#include "core/data/text_corpus.h"

namespace mpwb {

bool DatasetSpec::is_synthetic() const {
    return kind == "spiral" || kind == "circles" || kind == "xor" || kind == "gauss" || kind == "moons";
}

namespace {

constexpr const char* kFileDatasets[] = {"fashion-mnist", "mnist", "csv", "image-folder", "text", "fortunes"};

// "<field> must be from <lo> to <hi>, gets <value>" unless lo <= value <= hi.
void check_count(const char* field, int64_t value, int64_t lo, int64_t hi) {
    if (value < lo || value > hi)
        throw ConfigError(std::string(field) + " must be from " + std::to_string(lo) + " to " +
                          std::to_string(hi) + ", gets " + std::to_string(value));
}

// A rate or norm: finite, in [0, kMaxRate] as its own type rounds the limit (--lr 1e30 is a float
// just above 1e30), and above 0 when `positive`. The value is spelled in its own type ("1e+35",
// not float's 1.0000000409184788e+35 as a double).
template <class Number>
void check_rate(const char* field, Number value, bool positive) {
    const bool low = positive ? !(value > 0.0) : !(value >= 0.0);
    if (low || !std::isfinite(value) || value > static_cast<Number>(TrainLimits::kMaxRate))
        throw ConfigError(std::string(field) + " must be " + (positive ? "above 0" : "from 0") +
                          " and at most " + shortest_text(TrainLimits::kMaxRate) + ", gets " +
                          shortest_text(value));
}

}  // namespace

void DatasetSpec::validate() const {
    if (is_synthetic()) {
        try {
            validate_synthetic_config({.kind = parse_synthetic_kind(kind),
                                       .samples = samples,
                                       .noise = noise,
                                       .test_ratio = test_ratio,
                                       .seed = seed,
                                       .classes = classes});
        } catch (const ConfigError& e) {
            throw ConfigError(std::string("dataset: ") + e.what());
        }
        return;
    }
    if (std::find(std::begin(kFileDatasets), std::end(kFileDatasets), kind) == std::end(kFileDatasets))
        throw ConfigError(
            "dataset.kind '" + kind +
            "' is unknown; choose spiral, circles, xor, gauss, moons, fashion-mnist, mnist, csv, "
            "image-folder, text or fortunes");
    if (is_text()) {
        check_text_corpus_options({.tokenizer = parse_tokenizer(tokenizer, "dataset.tokenizer"),
                                   .context = context,
                                   .test_ratio = test_ratio},
                                  "dataset.");
        return;
    }
    if (kind != "image-folder") return;
    check_image_sample_options({.height = image_height, .width = image_width, .channels = channels},
                               "dataset.");
    (void)parse_size_mismatch(size_mismatch, "dataset.size_mismatch");
    if (!(test_ratio > 0.0 && test_ratio < 1.0))
        throw ConfigError("dataset.test_ratio must be between 0 and 1 (exclusive), gets " +
                          std::to_string(test_ratio));
}

PrecisionPolicy TrainConfig::policy() const {
    PrecisionPolicy p = weight_grad_format ? PrecisionPolicy::make(precision, *weight_grad_format)
                                           : PrecisionPolicy::make(precision);
    p.fp32_residual = fp32_residual;
    return p;
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

namespace {

// Every recipe some GEMM of the run may quantize with: the policy's, the rules', the what-if ones.
std::vector<ScaledRecipe> recipes_in_use(const TrainConfig& c) {
    std::vector<ScaledRecipe> used = c.what_if;
    used.push_back(PrecisionPolicy::make(c.precision).recipe);
    for (const PrecisionRule& rule : c.precision_rules.rules)
        for (const auto& pass : rule.passes)
            if (pass) used.push_back(*pass);
    std::erase(used, ScaledRecipe::None);
    return used;
}

}  // namespace

bool TrainConfig::uses_recipe_settings() const { return !recipes_in_use(*this).empty(); }

void check_learning_rate(float lr) { check_rate("lr", lr, true); }

namespace {

constexpr size_t kMaxSamplePromptBytes = 4096;

void check_samples(const TextSampleConfig& samples) {
    if (samples.prompt.empty())
        throw ConfigError("samples.prompt is empty: a sample continues at least one character");
    if (samples.prompt.size() > kMaxSamplePromptBytes)
        throw ConfigError("samples.prompt has " + std::to_string(samples.prompt.size()) +
                          " bytes, more than " + std::to_string(kMaxSamplePromptBytes));
    try {
        samples.sampling.validate();
    } catch (const ConfigError& e) {
        throw ConfigError(std::string("samples: ") + e.what());
    }
}

nlohmann::json samples_to_json(const TextSampleConfig& s) {
    return {{"enabled", s.enabled},
            {"prompt", s.prompt},
            {"tokens", s.sampling.tokens},
            {"temperature", s.sampling.temperature},
            {"top_k", s.sampling.top_k}};
}

void read_samples(const nlohmann::json& j, TextSampleConfig& s) {
    check_setting_keys(j, "samples", {"enabled", "prompt", "tokens", "temperature", "top_k"});
    read_setting(j, "samples", "enabled", s.enabled);
    read_setting(j, "samples", "prompt", s.prompt);
    read_setting(j, "samples", "tokens", s.sampling.tokens);
    read_setting(j, "samples", "temperature", s.sampling.temperature);
    read_setting(j, "samples", "top_k", s.sampling.top_k);
    check_samples(s);
}

}  // namespace

void TrainConfig::validate() const {
    using L = TrainLimits;
    // epochs may be 0 when max_steps bounds the run instead.
    check_count("epochs", epochs, max_steps > 0 ? 0 : 1, L::kMaxEpochs);
    check_count("max_steps", max_steps, 0, L::kMaxSteps);
    check_count("batch_size", batch_size, 1, L::kMaxBatch);
    check_learning_rate(lr);
    check_rate("clip_norm", clip_norm, false);
    check_count("threads", threads, 0, L::kMaxThreads);
    check_count("stats_every", stats_every, 0, L::kMaxSteps);
    check_count("eval_every", eval_every, 0, L::kMaxSteps);
    check_count("eval_batch", eval_batch, 1, L::kMaxBatch);
    check_samples(samples);
    dataset.validate();
    optimizer.validate();
    schedule.validate();
    effective_scaler().validate();
    effective_recipe().validate();
    (void)policy();
    // What the optimizer's and the schedule's own checks leave unbounded, to the CLI's ranges:
    // step counts feed step arithmetic, rates multiply the weights.
    check_count("schedule.warmup_steps", schedule.warmup_steps, 0, L::kMaxSteps);
    check_count("schedule.step_size", schedule.step_size, 0, L::kMaxSteps);
    check_count("schedule.total_steps", schedule.total_steps, 0, L::kMaxSteps);
    check_rate("schedule.gamma", schedule.gamma, false);
    check_rate("schedule.min_lr", schedule.min_lr, false);
    check_rate("optimizer.weight_decay", optimizer.weight_decay, false);
}

int64_t training_steps(const TrainConfig& config, int64_t train_size) {
    if (config.max_steps > 0) return config.max_steps;
    const int64_t batch = std::max<int64_t>(config.batch_size, 1);
    const int64_t per_epoch = train_size / batch + (train_size % batch ? 1 : 0);
    const int64_t steps = saturating_mul(config.epochs, per_epoch);
    if (steps > TrainLimits::kMaxSteps)
        throw ConfigError("epochs " + std::to_string(config.epochs) + " x " + std::to_string(per_epoch) +
                          " steps per epoch is " + size_text(steps) + " steps, more than the limit of " +
                          size_text(TrainLimits::kMaxSteps) + "; give max_steps or fewer epochs");
    return steps;
}

nlohmann::json to_json(const DatasetSpec& s) {
    nlohmann::json j{{"kind", s.kind}};
    if (!s.is_text()) j["normalize"] = s.normalize;
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
    if (s.is_text()) {
        j["test_ratio"] = s.test_ratio;
        j["tokenizer"] = s.tokenizer;
        j["context"] = s.context;
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
    if (c.uses_recipe_settings()) {
        // The settings of every recipe in use, so a rule's or a what-if recipe's settings are stored too.
        nlohmann::json recipe = nlohmann::json::object();
        for (ScaledRecipe r : recipes_in_use(c)) {
            ScaledRecipeConfig settings = c.recipe;
            settings.recipe = r;
            recipe.update(scaled_recipe_config_to_json(settings));
        }
        j["recipe"] = recipe;
    }
    write_precision_rules(c.precision_rules, j);
    if (!c.what_if.empty()) j["what_if"] = what_if_to_json(c.what_if);
    if (c.dataset.is_text()) j["samples"] = samples_to_json(c.samples);
    if (c.fp32_residual) j["fp32_residual"] = true;
    return j;
}

namespace {

void read_dataset(const nlohmann::json& d, DatasetSpec& spec) {
    check_setting_keys(
        d, "dataset",
        {"kind", "path", "samples", "noise", "test_ratio", "classes", "seed", "normalize", "label_column",
         "image_height", "image_width", "channels", "size_mismatch", "tokenizer", "context"});
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
    read_setting(d, "dataset", "tokenizer", spec.tokenizer);
    read_setting(d, "dataset", "context", spec.context);
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
    read_setting(j, "", "fp32_residual", c.fp32_residual);
    if (j.contains("precision"))
        c.precision = parse_precision(setting_value<std::string>(j["precision"], "precision"));
    if (j.contains("weight_grad_format"))
        c.weight_grad_format =
            parse_format(setting_value<std::string>(j["weight_grad_format"], "weight_grad_format"));
}

}  // namespace

TrainConfig train_config_from_json(const nlohmann::json& j, TrainConfig c) {
    check_setting_keys(j, "training settings",
                       {"dataset",
                        "epochs",
                        "max_steps",
                        "batch_size",
                        "lr",
                        "optimizer",
                        "schedule",
                        "clip_norm",
                        "seed",
                        "threads",
                        "precision",
                        "weight_grad_format",
                        "scaler",
                        "recipe",
                        "stats_every",
                        "eval_every",
                        "eval_batch",
                        "device_graphs",
                        "samples",
                        "fp32_residual",
                        "precision_rules",
                        "keep_ends_bf16",
                        "backward_bf16",
                        "what_if"});
    if (j.contains("dataset")) read_dataset(j["dataset"], c.dataset);
    read_scalars(j, c);
    read_precision_rules(j, c.precision_rules);
    if (j.contains("what_if")) c.what_if = what_if_from_json(j["what_if"], "what_if");
    if (j.contains("samples")) {
        TextSampleConfig s = c.samples;
        read_samples(j["samples"], s);
        c.samples = s;
    }
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
