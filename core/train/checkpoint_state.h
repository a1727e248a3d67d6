// CheckpointState: what TrainingCheckpoint::state holds, decoded, and its binary codec
// (checkpoint.cpp). The Trainer fills one from a run at a step boundary and applies one before a
// resumed run; nothing else reads the layout.
//
// The blob: "MPWBCKPT", a version (uint32), the number of sections (uint32), then each section as
// a four-letter tag, its size (uint64) and its bytes, in a fixed order, then an FNV-1a 64 checksum
// of everything before it. Little-endian, as every supported host is (core/common/byte_blob.h).
// Version 2 adds the section DATA (the dataset digest); a version-1 state still decodes, without
// one.
// Decoding checks the magic, the version and the checksum before anything else, bounds every
// count and length by the bytes that remain (so a damaged blob never allocates more than its own
// size), and throws DataError naming the section and the problem. Whether the sizes and values fit
// a network is checked by the restore (checkpoint_restore.h), which knows the network.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <vector>

#include "core/engine/step_engine.h"
#include "core/precision/gemm_quantizer.h"

namespace mpwb {

// The running sums of a run that its summary and its running means are made from, so a resumed
// run's final summary equals the uninterrupted run's (its timings aside).
struct RunSums {
    int64_t steps = 0, epochs_completed = 0;
    double train_seconds = 0, train_loss = 0, test_loss = 0, test_accuracy = 0, best_test_accuracy = 0;
    float min_scale = 0, max_scale = 0;
    double since_eval_loss = 0, since_eval_correct = 0;
    int64_t since_eval_steps = 0, since_eval_samples = 0;
    double epoch_loss = 0;
    int64_t epoch_steps = 0, trained_samples = 0;
    double underflow_sum = 0;
    int64_t underflow_count = 0;
};

struct QuantizerCheckpoint {
    uint64_t layer = 0;  // the layer the quantizer belongs to
    // Which of the layer's GEMMs (Network::gemms), and which of that GEMM's quantizers
    // (GemmQuantizers::slot: one per recipe its passes use). In the file they share the layer's
    // 64-bit word (layer + (gemm + slot · 2¹⁶) · 2³²), so a checkpoint from before named GEMMs
    // reads as GEMM 0 and one from before precision rules as slot 0.
    uint64_t gemm = 0;
    uint64_t slot = 0;
    GemmQuantizer::SavedState state;
};

struct CheckpointState {
    nlohmann::json config;   // to_json(TrainConfig) with the live changes the run had reached
    nlohmann::json network;  // Network::to_json()
    int64_t train_samples = 0;
    float lr_scale = 1.0f;  // the user's live learning-rate factor
    // Per parameter, in Network::parameters() order: the master and the reduced copy the policy
    // keeps (empty when the layer reads the master).
    std::vector<std::vector<float>> values, copies;
    std::vector<std::vector<float>> buffers;  // Network::buffers() order
    StepEngineState engine;                   // optimizer state, dropout generator
    nlohmann::json scaler;                    // LossScaler::save_state()
    std::vector<QuantizerCheckpoint> quantizers;
    RunSums sums;
    std::optional<uint64_t> data_digest;  // dataset_digest of the run's data; none in a version-1 state
};

std::vector<uint8_t> encode_checkpoint_state(const CheckpointState& state);
// Throws DataError (or JsonInputError for a damaged JSON section) naming what is wrong.
CheckpointState decode_checkpoint_state(std::span<const uint8_t> blob);

}  // namespace mpwb
