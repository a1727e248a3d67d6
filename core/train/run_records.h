// What a training run reports, as plain values: its start, each step's metrics, evaluations,
// gradient and scaling statistics, events, and the summary at its end. The trainer hands them to
// its observers (observer.h); the run store keeps them, the widgets draw them. No engine header
// here (no network, quantizer or checkpoint): the widgets include this one and TrainConfig only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/nn/gradient_kind.h"
#include "core/nn/stability_values.h"
#include "core/numeric/exponent_histogram.h"
#include "core/numeric/format.h"
#include "core/precision/scaling_stats.h"
#include "core/train/run_status.h"

namespace mpwb {

struct RunStartInfo {
    nlohmann::json config;   // to_json(TrainConfig)
    nlohmann::json network;  // Network::to_json()
    std::string dataset;
    std::string precision;
    std::string backend;
    std::string device;
    std::string blas_core;  // the kernel set OpenBLAS runs the host's GEMMs with ("Haswell")
    int64_t parameters = 0;
    int64_t steps_per_epoch = 0;
    int64_t total_steps = 0;
    int64_t train_samples = 0, test_samples = 0;
    std::vector<std::string> layer_labels;  // "0 Flatten", "1 Linear", ...
    // Text datasets: Vocabulary::to_json() of the run's vocabulary, stored with the run so sampling
    // and export read its ids as it trained on them; null for other datasets.
    nlohmann::json vocabulary;
    // Set when the run continues from a checkpoint (Trainer::resume_from): its step. The recorder
    // then goes on recording into the run it reopened instead of creating one.
    int64_t resumed_from_step = 0;
};

struct StepMetrics {
    int64_t step = 0;      // 1-based
    int64_t epoch = 0;     // 0-based
    double wall_time = 0;  // seconds since the run started
    double loss = 0;       // unscaled train loss of the batch
    double accuracy = 0;   // train accuracy of the batch
    double samples_per_second = 0;
    double step_seconds = 0;
    float lr = 0;
    float loss_scale = 1;  // the scale this step's applied (or last) attempt used
    bool skipped = false;
    int retries = 0;
    std::string skip_reason;
    std::string first_nonfinite_layer;
    int64_t overflow_count = 0;  // running totals
    int64_t skipped_count = 0;
    float grad_norm = 0;  // after unscaling; 0 when not computed
    // Per-position targets (a language model): this step's tokens (samples x positions) / its
    // seconds; 0 for other runs.
    double tokens_per_second = 0;
};

struct EvalMetrics {
    int64_t step = 0;
    int64_t epoch = 0;
    double wall_time = 0;
    double test_loss = 0, test_accuracy = 0;
    double train_loss = 0, train_accuracy = 0;  // means over the steps since the last evaluation
    // Per-position targets: the test loss in bits per token (nats / ln 2; per character or byte
    // for a text dataset); 0 for other runs.
    double test_bits_per_token = 0;
};

struct GradientStatsRecord {
    int64_t step = 0;
    size_t layer = 0;
    std::string layer_label;  // "3 Linear"
    GradientKind kind = GradientKind::Activation;
    std::string parameter;         // "weight", "bias", ... for Weight; empty for Activation
    ExponentHistogram histogram;   // of the scaled FP32 values before rounding
    Format format = Format::FP16;  // the format the fractions below refer to
    FormatRangeStats stats;
    float loss_scale = 1;
};

// What a scaled recipe's quantization of one GEMM operand of one layer did, on a statistics step.
struct ScalingStatsRecord {
    int64_t step = 0;
    size_t layer = 0;
    std::string layer_label;  // "3 Linear"
    ScalingStats stats;       // stats.operand: "x", "w", "dy", "x (wgrad)", ...
};

// The instability indicators of one statistics step of a network with transformer blocks
// (core/nn/stability_values.h), with the blocks' labels ("2 TransformerBlock", the layer label).
struct StabilityRecord {
    int64_t step = 0;
    StabilityIndicators indicators;
    std::vector<std::string> block_labels;  // one per indicators.blocks entry
};

struct TrainingEvent {
    int64_t step = 0;
    double wall_time = 0;
    std::string kind;    // scaler event kinds, "lr_changed", "paused", "resumed", "stopped", ...
    std::string source;  // "user", "scaler", "trainer"
    nlohmann::json detail = nlohmann::json::object();
};

struct RunSummary {
    RunStatus status = RunStatus::Running;
    std::string error;
    int64_t steps = 0;
    int64_t epochs_completed = 0;
    double wall_seconds = 0;
    double train_seconds = 0;       // time in training steps, without evaluation
    double samples_per_second = 0;  // train samples / train_seconds
    double train_loss = 0;          // mean over the last epoch's steps
    double test_loss = 0, test_accuracy = 0;
    double best_test_accuracy = 0;
    int64_t skipped_steps = 0, overflow_count = 0;
    float min_scale = 0, max_scale = 0;
    double mean_activation_underflow = 0;  // over all activation-gradient statistics taken
    nlohmann::json to_json() const;
};

}  // namespace mpwb
