// Trainer: the step loop. One loop over one StepEngine (core/engine/step_engine.h): the host
// engine runs each step op by op (forward in the policy's formats, FP32 loss with the loss scale
// folded into its gradient, backward, unscale + non-finite check, the scaler's verdict, clipping
// after unscaling, the optimizer's FP32 master update); a device engine does the same on its
// accelerator. The loop launches steps, collects their records, replays each verdict through the
// run's LossScaler and narrates it to the observers, evaluates, and takes gradient statistics on
// the host for an engine that does not take them itself. Pause, resume and stop act between
// steps; live setting changes (learning rate, scaler, loss scale, recipe) go through one queue
// (live_changes.h) and apply at the next step boundary in the order they were requested, once the
// host has caught up with every step in flight, each recorded as an event.
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/backend/backend.h"
#include "core/engine/step_engine.h"
#include "core/data/dataset.h"
#include "core/nn/network.h"
#include "core/optim/lr_schedule.h"
#include "core/precision/loss_scaler.h"
#include "core/train/checkpoint.h"
#include "core/train/live_changes.h"
#include "core/train/observer.h"
#include "core/train/train_config.h"

namespace mpwb {

// How Trainer::resume_from treats a checkpoint.
struct ResumeOptions {
    bool allow_changed_data = false;  // continue on data other than the data the run trained on
};

class Trainer {
public:
    // The network is built for the dataset's sample shape and initialised from config.seed, so
    // runs with the same seed start from the same weights whatever the precision.
    Trainer(Network& network, const Dataset& data, TrainConfig config, Backend& backend);
    ~Trainer();

    void add_observer(TrainingObserver* observer);
    // Runs to the end, a stop, or an error (reported in the summary with status Failed; the
    // observers still get on_run_end). Call from the thread that trains.
    RunSummary run();

    // Any thread.
    void pause();
    void resume();
    void stop();
    bool paused() const { return paused_; }
    // Any thread. Once `step` steps are done the trainer pauses itself, as if pause() had been
    // called right after that step; resume() or stop() releases it. The hold fires once; a later
    // call moves it (0 = none). Gives tests a point where a run is certainly still going, at
    // any machine speed, instead of racing its end.
    void hold_after_step(int64_t step);
    // Any thread. Live changes (live_changes.h): checked now (ConfigError to the caller, nothing
    // queued), applied at the next step boundary in the order requested, each recorded as an
    // event ("config_changed", "user_set_scale", "lr_changed", "recipe_changed" with the fields
    // that changed). A recipe change needs a policy with a scaled recipe.
    void request_change(LiveChange change) { live_changes_.request(std::move(change)); }
    void request_scaler_config(const LossScalerConfig& config) { request_change(config); }
    void request_loss_scale(double scale) { request_change(LossScaleChange{scale}); }
    void request_learning_rate(float lr) { request_change(LearningRateChange{lr}); }
    void request_recipe_config(const ScaledRecipeConfig& config) { request_change(config); }

    // Checkpoints (core/train/checkpoint.h), handed to the observers' on_checkpoint at a step
    // boundary. every_steps: after every N steps; every_seconds: when that much run time has
    // passed since the last one (0 = off). With either set, a run that ends FINISHED or
    // STOPPED also hands over a last checkpoint of its final state, so its final weights can be
    // compared (weights_digest) and exported. Before run(); ConfigError for a negative value.
    // An engine that cannot save its state (the CUDA engine, for now) takes none and says so
    // once with a "checkpoints_unavailable" event.
    struct CheckpointPolicy {
        int64_t every_steps = 0;
        double every_seconds = 0;
    };
    void set_checkpoint_policy(const CheckpointPolicy& policy);
    // Any thread, and async-signal-safe (it only stores to a lock-free atomic), for SIGTERM: at
    // the next step boundary the run takes a checkpoint and ends with status Interrupted (an
    // "interrupted" event, source "signal"). It also releases a paused or held run. A live
    // change waiting for the next step is applied first, so the checkpoint holds it. Where the
    // engine cannot save its state, the run stops (STOPPED) without a checkpoint.
    void checkpoint_and_stop();
    // Before run(): the run continues from the checkpoint instead of starting at step 1. Every
    // section of the checkpoint is checked against this network, data and settings first
    // (core/train/checkpoint_restore.h), and a refused one changes nothing. Throws ConfigError
    // when the checkpoint does not belong to this network and settings (a different parameter
    // count or shape, policy, optimizer kind or dataset size), naming what differs; only the
    // thread count, CUDA graphs and the live settings the checkpoint carries (scaler, recipe,
    // learning-rate factor) may differ, and the checkpoint's win. ConfigError too when the data
    // differs from the data the run trained on (its digest, dataset_digest.h) unless
    // allow_changed_data, and where the run would go to a device engine. Throws DataError,
    // naming the checkpoint, the section, the parameter and the numbers, for a state that
    // cannot be this run's. The run() that follows announces resumed_from_step, emits a
    // "resumed_from_checkpoint" event (and "data_changed" with both digests when the data
    // changed) and continues the checkpoint's wall time.
    void resume_from(const TrainingCheckpoint& checkpoint, const ResumeOptions& options = {});

    const TrainConfig& config() const { return config_; }
    const PrecisionPolicy& policy() const { return policy_; }
    LossScaler& scaler() { return scaler_; }
    int64_t steps_per_epoch() const;

private:
    struct Run;          // the state of one run() (trainer.cpp)
    struct InFlight;     // a launched step whose record the host has not narrated yet
    struct ResumePoint;  // what resume_from checked and run() starts from (trainer.cpp)

    bool uses_device_engine() const;
    // Why the run trains on the host engine whatever the backend (precision rules, what-if
    // statistics); empty when a device engine may run it.
    std::string host_only_precision() const;
    std::unique_ptr<StepEngine> make_engine(int64_t total_steps);
    void start_engine(Run& run);
    // The first batch of the epoch; a resumed run's first epoch starts where the checkpoint was.
    int64_t begin_epoch(Run& run, int64_t epoch);
    int64_t total_steps() const;
    void announce_start();
    // Between steps: the hold, then pause until resumed. False when stopped meanwhile.
    bool pause_point(Run& run);
    void train_step(Run& run, int64_t epoch, int64_t batch);
    // The queued live changes at the boundary before `step`, in request order.
    void apply_live_changes(Run& run, int64_t step);
    void apply_live_change(const LiveChange& change, int64_t step, double wall);
    void launch(Run& run, InFlight& step);
    // Narrates every record that has arrived (all launched ones when wait). False when the last
    // one asked for a retry of its batch, which the caller relaunches.
    bool collect(Run& run, bool wait);
    bool narrate(Run& run, const StepResult& record);
    StepOutcome replay(const StepResult& record);
    void finish_step(Run& run, StepMetrics& m, const StepOutcome& outcome, const StepResult& record,
                     int64_t n);
    void evaluate_now(Run& run, int64_t epoch);
    // Text runs: the "sample" event after an evaluation (trainer_samples.cpp).
    void write_text_sample(int64_t step, double wall_time);
    void end_epoch(Run& run, int64_t epoch, int64_t batches_done, bool evaluated);
    void close_summary(Run& run);

    // Checkpoints at a step boundary (checkpoint.cpp holds the state's layout). True when the
    // run ends here, interrupted by checkpoint_and_stop.
    bool checkpoint_point(Run& run, int64_t epoch, int64_t batch);
    bool checkpoint_due(const Run& run) const;
    // The "checkpoints_unavailable" event: the engine cannot save its state.
    void announce_no_checkpoints(Run& run);
    void hand_checkpoint(Run& run, int64_t epoch, int64_t batch);
    void final_checkpoint(Run& run);
    TrainingCheckpoint take_checkpoint(Run& run, int64_t epoch, int64_t batch);
    void restore_run(Run& run);
    void announce_resume(Run& run);
    // dataset_digest of the run's data, taken once, when a checkpoint first needs it.
    uint64_t data_digest();

    void wait_while_paused();
    // Pauses now if the hold is set at `steps_done` (and uses it up); true when it did.
    bool take_hold(int64_t steps_done);
    void emit_event(const TrainingEvent& event);
    void drain_scaler_events(double wall);

    Network& network_;
    const Dataset& data_;
    TrainConfig config_;
    Backend& backend_;
    PrecisionPolicy policy_;
    LossScaler scaler_;
    LiveChanges live_changes_;
    std::unique_ptr<LrSchedule> schedule_;
    std::vector<TrainingObserver*> observers_;

    std::atomic<bool> stop_{false};
    std::atomic<bool> paused_{false};
    std::atomic<int64_t> hold_step_{0};
    std::mutex pause_mutex_;
    std::condition_variable pause_cv_;
    float lr_scale_ = 1.0f;  // user's live learning-rate change, relative to the schedule's base

    CheckpointPolicy checkpoint_policy_;
    static_assert(std::atomic<bool>::is_always_lock_free, "checkpoint_and_stop runs in a signal handler");
    std::atomic<bool> checkpoint_requested_{false};
    std::unique_ptr<ResumePoint> resume_;
    std::optional<uint64_t> data_digest_;
};

}  // namespace mpwb
