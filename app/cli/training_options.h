// Command-line options that define a training run, shared by train, compare and bench:
// they start from a preset (or a network file) and override its settings one by one.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>

#include "app/cli/setting_flags.h"
#include "core/precision/loss_scaler_config.h"
#include "core/precision/scaled_recipe_config.h"
#include "resources/presets.h"

namespace mpwb::cli {

// The scaler flags spelled otherwise than their field: --scaler for the mode, and the spellings
// kept from before the flags came from the table.
std::map<std::string, FlagSpelling> scaler_flag_spellings();

struct TrainingOptions {
    std::string preset;
    std::string network_file;
    std::optional<std::string> dataset, data_path;
    std::optional<int64_t> samples;
    std::optional<float> noise;
    std::optional<double> test_ratio;
    // Image folders: "HxW" (or "N" for N x N), 1 or 3 channels, resize or error; the split's seed.
    std::optional<std::string> image_size, size_mismatch;
    std::optional<int> channels;
    std::optional<uint64_t> data_seed;
    // Text datasets: "byte" or "char" tokens, and the window length.
    std::optional<std::string> tokenizer;
    std::optional<int64_t> context;
    std::optional<int64_t> epochs, max_steps, batch, eval_every, stats_every;
    std::optional<std::string> optimizer, schedule, loss;
    std::optional<float> lr, momentum, weight_decay, beta1, beta2, eps, min_lr, clip_norm;
    std::optional<int64_t> warmup, step_size;
    std::optional<float> gamma;
    bool nesterov = false;
    std::optional<uint64_t> seed;
    std::optional<int> threads;
    std::optional<std::string> precision, weight_grad_format;
    bool fp32_residual = false;  // --fp32-residual: TrainConfig::fp32_residual
    // Precision per GEMM and pass: --precision-rule (repeatable, in order), --keep-ends-bf16,
    // --backward-bf16 (TrainConfig::precision_rules); --what-if recipes (TrainConfig::what_if).
    std::vector<std::string> precision_rules;
    bool keep_ends_bf16 = false, backward_bf16 = false;
    std::optional<std::string> what_if;
    // Loss scaler: a known system's rules to start from, then one flag per field of
    // loss_scaler_fields() over them.
    std::optional<std::string> scaler_like;
    SettingFlags<LossScalerConfig> scaler_flags{loss_scaler_fields(), scaler_flag_spellings()};
    bool no_normalize = false;
    // The scaled recipes' settings: one flag per field of scaled_recipe_fields().
    SettingFlags<ScaledRecipeConfig> recipe_flags{scaled_recipe_fields()};
    // True when the run has one precision (train, bench): a recipe flag that precision does not
    // use is then an error. compare runs several and keeps each flag for the runs it applies to.
    bool one_precision = true;

    void add_to(CLI::App& app, bool with_precision = true);
    // The preset's network and settings with every given option applied; ConfigError on bad values.
    Preset resolve() const;

private:
    void apply_scaler_flags(TrainConfig& c) const;
    void add_precision_rule_flags(CLI::App& app);
    void apply_precision_rule_flags(TrainConfig& c) const;
    void add_optimizer_flags(CLI::App& app);
    void apply_optimizer_flags(Preset& p) const;
    void apply_recipe_flags(TrainConfig& c) const;
};

// The default experiment: Fashion-MNIST MLP when Debian's dataset is installed, else the spiral.
std::string default_preset_name();

}  // namespace mpwb::cli
