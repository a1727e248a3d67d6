// Everything that defines a training run besides the network: data, precision, scaler,
// optimizer, schedule, batching and seed. It is stored with every run as JSON, so two runs can
// be compared setting by setting.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"
#include "core/precision/loss_scaler_config.h"
#include "core/precision/precision_policy.h"
#include "core/precision/precision_rules.h"
#include "core/precision/scaled_recipe_config.h"
#include "core/train/sampling_settings.h"
#include "core/train/train_limits.h"

namespace mpwb {

struct DatasetSpec {
    // "spiral", "circles", "xor", "gauss", "moons", "fashion-mnist", "mnist", "csv", "image-folder",
    // "text" (any text file), "fortunes" (the built-in text corpus, core/data/text_corpus.h)
    std::string kind = "spiral";
    // Folder for IDX sets (default: Debian's), image folders and fortunes (default: Debian's);
    // file for CSV and text.
    std::string path;
    int64_t samples = 1000;
    float noise = 0.0f;
    double test_ratio = 0.2;
    int classes = 2;
    uint64_t seed = 1;
    bool normalize = true;     // per-channel mean/std from the train split
    std::string label_column;  // CSV: name or index; empty = last column
    // Image folders: every image becomes channels x image_height x image_width; one of another
    // size is resized or refused (size_mismatch "resize" or "error").
    int image_height = 28, image_width = 28;
    int channels = 1;  // 1 grayscale, 3 RGB
    std::string size_mismatch = "resize";
    // Text and fortunes: "byte" or "char" tokens, and the window length T. `normalize` does not
    // apply (the inputs are token ids).
    std::string tokenizer = "char";
    int64_t context = 64;

    bool is_synthetic() const;
    bool is_text() const { return kind == "text" || kind == "fortunes"; }
    // ConfigError naming the field ("dataset.channels ...") for an unknown kind, or settings of
    // a synthetic set or an image folder out of range.
    void validate() const;
};

struct TrainConfig {
    DatasetSpec dataset;
    int64_t epochs = 5;
    int64_t max_steps = 0;  // stop after this many steps; 0 = run all epochs
    int64_t batch_size = 128;
    float lr = 1e-3f;
    OptimizerConfig optimizer{.kind = "adam"};
    ScheduleConfig schedule;
    float clip_norm = 0.0f;  // global gradient-norm clip after unscaling; 0 = off
    uint64_t seed = 42;
    int threads = 0;  // 0 = all cores
    PrecisionKind precision = PrecisionKind::FP32;
    std::optional<Format> weight_grad_format;  // default: the policy's
    // A transformer's residual stream in FP32 whatever the policy (PrecisionPolicy::fp32_residual).
    // In JSON as "fp32_residual", written only when on.
    bool fp32_residual = false;
    // Empty: dynamic scaling for FP16 policies, none otherwise.
    std::optional<LossScalerConfig> scaler;
    // The scaled recipe's settings (fp8-delayed, fp8-current, fp8-block, mxfp8, nvfp4). Its
    // `recipe` member is not read: effective_recipe() takes it from `precision`. In JSON as
    // "recipe", written only for a scaled policy.
    ScaledRecipeConfig recipe;
    // A precision per GEMM and pass (core/precision/precision_rules.h). In JSON as
    // "precision_rules", "keep_ends_bf16" and "backward_bf16", written when set.
    PrecisionRules precision_rules;
    // Recipes whose statistics every statistics step also takes of every GEMM operand, without
    // the GEMM using them (DESIGN.md, "what-if"). In JSON as "what_if", written when set.
    std::vector<ScaledRecipe> what_if;
    int64_t stats_every = 0;  // gradient statistics every K steps; 0 = off
    int64_t eval_every = 0;   // evaluate every N steps; 0 = at the end of every epoch
    int64_t eval_batch = 1000;
    // On a backend that keeps steps on its device: capture each step shape once as a CUDA graph
    // and replay it (false launches every kernel every step, for comparison).
    bool device_graphs = true;
    // Text runs: a sample of the model's writing after each evaluation. In JSON as "samples",
    // written for text datasets only.
    TextSampleConfig samples;

    PrecisionPolicy policy() const;
    LossScalerConfig effective_scaler() const;
    ScaledRecipeConfig effective_recipe() const;
    // True when some GEMM may quantize with a recipe's settings (a scaled policy, a rule naming a
    // recipe, a what-if recipe): the recipe settings are then part of the run.
    bool uses_recipe_settings() const;
    // The one validation of training settings, whatever their source (CLI flags, presets,
    // network and spec files, stored runs, bundles): ConfigError naming the setting by its JSON
    // path, with the value and the range (TrainLimits).
    void validate() const;
};

// ConfigError unless lr is a learning rate TrainConfig::validate accepts (the live change's check).
void check_learning_rate(float lr);

// Steps a run of `config` takes over `train_size` samples: max_steps, else epochs x steps per
// epoch, computed with checked arithmetic; ConfigError when that is beyond TrainLimits::kMaxSteps.
int64_t training_steps(const TrainConfig& config, int64_t train_size);

nlohmann::json to_json(const TrainConfig& config);
// Reads a partial object over `base`: missing keys keep base's values; unknown keys and bad
// values are a ConfigError naming the key.
TrainConfig train_config_from_json(const nlohmann::json& j, TrainConfig base = {});
nlohmann::json to_json(const DatasetSpec& spec);

}  // namespace mpwb
