// LiveChanges: the one queue of the settings a person changes while a run goes on (the learning
// rate, the loss scaler's settings, a loss scale, the scaled recipe's settings). Each change is
// checked once, when it is requested, on the requesting thread: a ConfigError naming the setting
// goes back to the caller and nothing is queued. The trainer takes the queue at the next step
// boundary and applies the changes in the order they were requested (Trainer::apply_live_change),
// each recorded as an event. A new kind of live change is a struct in LiveChange, its check in
// checked_live_change, its start value in apply_before_start and its application in the trainer.
#pragma once
#include <mutex>
#include <utility>
#include <variant>
#include <vector>

#include "core/precision/loss_scaler_config.h"
#include "core/precision/precision_policy.h"
#include "core/precision/scaled_recipe_config.h"
#include "core/train/train_config.h"

namespace mpwb {

// The learning rate from the next step on: the schedule goes on from there, scaled by the factor
// between this rate and the schedule's rate at that step (an "lr_changed" event).
struct LearningRateChange {
    float lr = 0.0f;
};

// The loss scale from the next step on, clamped into [min_scale, max_scale] of the scaler's
// settings in force then; the trackers are kept (a "user_set_scale" event).
struct LossScaleChange {
    double scale = 0.0;
};

// A scaler configuration (a "config_changed" event) or a recipe configuration (a "recipe_changed"
// event) is requested whole, as the settings forms hold it.
using LiveChange = std::variant<LearningRateChange, LossScalerConfig, LossScaleChange, ScaledRecipeConfig>;

// The change as a run under policy applies it (a recipe configuration takes the policy's recipe),
// or a ConfigError (ScalerConfigError, RecipeConfigError) naming the setting and the value: the
// one check of a live change.
LiveChange checked_live_change(LiveChange change, const PrecisionPolicy& policy);

// A change requested before the run's first step, once checked, becomes the run's starting
// setting instead (no event). A loss scale has no scale to replace yet and changes nothing.
void apply_before_start(TrainConfig& config, const LiveChange& change);

class LiveChanges {
public:
    explicit LiveChanges(PrecisionPolicy policy) : policy_(std::move(policy)) {}

    // Any thread: checked now (ConfigError to the caller, nothing queued), applied at the next
    // step boundary after every change requested before it.
    void request(LiveChange change);
    // The training thread, at a step boundary: every change requested so far, oldest first; the
    // queue is empty after it.
    std::vector<LiveChange> take();

private:
    const PrecisionPolicy policy_;
    std::mutex mutex_;
    std::vector<LiveChange> pending_;
};

}  // namespace mpwb
