// Restoring a checkpoint (checkpoint.h) into a run, for Trainer::resume_from. check_checkpoint
// decodes the state and checks every section against what it restores into before anything
// changes: the network (parameter count and sizes, reduced copies, buffers, recipe quantizers),
// the settings and the dataset (size and digest), the position (against the dataset's steps per
// epoch and the run's length), the optimizer's buffers and step counts, the loss scaler's and the
// recipe's state, the dropout generator and the summary's counts; values are checked where a run
// could never have written them (a non-finite master weight or moment, a scale that is not
// positive). restore_checkpoint then applies what passed and cannot fail, so a restore is all
// or nothing and no damaged value ever reaches a step.
//
// Errors name the checkpoint (TrainingCheckpoint::source, else its step), the section, the
// parameter or layer and the numbers: ConfigError for a checkpoint of another network, other
// settings or other data; DataError for one whose content cannot be the run's (damage).
#pragma once
#include <cstdint>
#include <optional>

#include "core/data/dataset.h"
#include "core/nn/network.h"
#include "core/precision/loss_scaler.h"
#include "core/train/checkpoint.h"
#include "core/train/checkpoint_state.h"
#include "core/train/train_config.h"

namespace mpwb {

// What a checkpoint restores into, as the Trainer has it before its run.
struct RestoreTarget {
    Network& network;
    const Dataset& data;
    const TrainConfig& config;  // the run's settings; the live ones the checkpoint carries win
    const PrecisionPolicy& policy;
    int64_t steps_per_epoch = 0;
    int64_t total_steps = 0;
    uint64_t data_digest = 0;  // dataset_digest(data)
    // Continue on data whose digest differs from the checkpoint's (the user's choice) instead of
    // refusing; CheckedCheckpoint::trained_data_digest then says so.
    bool allow_changed_data = false;
};

// A checkpoint that passed every check.
struct CheckedCheckpoint {
    int64_t step = 0, epoch = 0, batch = 0;
    double wall_seconds = 0;
    CheckpointState state;
    TrainConfig reached;  // the run's settings with the live changes the checkpoint had reached
    // Set when the data changed since the checkpoint and that was allowed: the digest of the
    // data the run trained on until then.
    std::optional<uint64_t> trained_data_digest;
};

CheckedCheckpoint check_checkpoint(const TrainingCheckpoint& checkpoint, const RestoreTarget& target);

// Writes the checked state into the network (weights, reduced copies, buffers, the recipe's
// settings and state) and the scaler. The optimizer's state and the dropout generator go to the
// step engine when it starts (StepEngine::load_state).
void restore_checkpoint(const CheckedCheckpoint& checked, Network& network, LossScaler& scaler);

}  // namespace mpwb
