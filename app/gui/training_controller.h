// TrainingController: drives the engine for the workbench. Each run trains in its own worker
// QThread (a worker QObject moved to the thread, started with a queued call). Observers on the
// training thread push metrics into one mutex-protected buffer; a ~30 Hz timer on the GUI thread
// drains it and emits one `updates` signal per tick, so the GUI never sees one signal per step.
// Every run is recorded into the run store by a RunRecorder (which writes from its own thread).
//
// Comparison (FP32 vs a mixed policy): two runs of the same network, dataset and seed (so the same
// initial weights and batch order) train in alternating chunks: a ChunkGate lets exactly one of
// them compute at a time and hands the turn over after ~chunk_seconds of steps. Each run therefore
// has the whole machine while it computes, so its measured throughput is not halved by the other,
// yet both curves grow live.
#pragma once
#include <QObject>
#include <QTimer>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data/dataset.h"
#include "core/precision/loss_scaler.h"
#include "core/train/checkpoint.h"
#include "core/train/decision_boundary.h"
#include "core/train/live_changes.h"
#include "core/train/observer.h"
#include "core/train/train_config.h"

class QThread;

namespace mpwb {

class Trainer;

// What one run produced since the previous drain.
struct RunUpdate {
    int slot = 0;  // 0 = the single run or the FP32 side of a comparison, 1 = the mixed side
    std::optional<RunStartInfo> start;
    std::shared_ptr<const Dataset> dataset;  // with `start`: the data the run trains on
    int64_t run_id = 0;                      // the run store's id once created (0 before)
    std::vector<StepMetrics> steps;
    std::vector<EvalMetrics> evals;
    std::vector<GradientStatsRecord> stats;
    std::vector<ScalingStatsRecord> scaling;  // a scaled recipe's quantization statistics
    std::vector<StabilityRecord> stability;   // a transformer's instability indicators
    std::vector<TrainingEvent> events;
    std::optional<BoundaryGrid> boundary;  // the newest only
    std::optional<RunSummary> end;
    std::vector<std::string> errors;  // setup failures, recorder failures
    std::string kept;                 // with a run's final errors: what of it is kept, in one sentence
    bool finished = false;            // the worker is done (after `end`, or after a setup error)
};

// Lets one of several runs compute at a time (the comparison's alternating chunks).
class ChunkGate {
public:
    ChunkGate(int runs, double chunk_seconds);
    // Blocks until it is `slot`'s turn (or the gate was opened).
    void acquire(int slot);
    // After a step: once `slot` held the turn for chunk_seconds, hands it to the next active run
    // and waits for it to come back.
    void step_done(int slot);
    // `slot` ends: it leaves the rotation and passes the turn on.
    void finish(int slot);
    // `slot` pauses: it leaves the rotation, so the other run can go on (or pause in its turn),
    // until it comes back with acquire().
    void yield(int slot);
    // Nobody waits any more (stop): every run proceeds.
    void open();
    int64_t handovers() const;

private:
    void pass_turn_locked(int slot);
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<bool> active_;
    int turn_ = 0;
    bool open_ = false;
    double chunk_seconds_;
    std::chrono::steady_clock::time_point turn_start_;
    int64_t handovers_ = 0;
};

class TrainingWorker;

// A stored run to continue (the run browser's Resume): its id and the checkpoint it goes on from.
struct ResumeSource {
    int64_t run_id = 0;
    std::shared_ptr<const TrainingCheckpoint> checkpoint;
};

class TrainingController : public QObject {
    Q_OBJECT
public:
    enum class State { Idle, Starting, Running, Paused, Stopping };
    Q_ENUM(State)

    struct Options {
        std::string db_path;              // the run store
        double chunk_seconds = 0.1;       // comparison: how long one run computes before the other
        double boundary_interval = 0.25;  // seconds between decision-boundary grids (2-D sets only)
        int drain_hz = 30;
        bool record = true;  // record runs into the store
    };

    // What the GUI thread and the workers share (defined in the .cpp).
    struct Shared;

    explicit TrainingController(Options options, QObject* parent = nullptr);
    ~TrainingController() override;

    // One run. Returns false (and emits message) when a run is already going.
    bool start(const nlohmann::json& network, const TrainConfig& config, const std::string& name = {});
    // FP32 and `mixed` side by side: same network, dataset, seed, initial weights and batch order.
    bool start_comparison(const nlohmann::json& network, const TrainConfig& config, PrecisionKind mixed,
                          const std::string& name = {});
    // Continues stored run `resume.run_id` from its checkpoint with the network and settings it
    // recorded: the Trainer resumes from the checkpoint and the recorder records into the same
    // run (RunRecorder::Options::resume_run_id). ConfigError when the checkpoint does not fit.
    bool continue_run(const nlohmann::json& network, const TrainConfig& config, ResumeSource resume,
                      const std::string& name);
    void pause();
    void resume();
    void stop();
    // Blocks until every worker thread ended (used on close and by tests).
    void wait();

    // Live tuning (core/train/live_changes.h): checked at once by each run's queue (ConfigError
    // to the caller; the first run refuses before any has taken it), applied at the next step. In a
    // comparison the scaler settings go to the runs that use a reduced format (FP32 has no loss
    // scale to tune); the learning rate goes to every run so the comparison stays fair.
    void request_scaler_config(const LossScalerConfig& config);
    void request_loss_scale(double scale);
    void request_learning_rate(float lr);
    // A scaled recipe's settings, to the runs with a scaled recipe (a comparison's FP32 side has
    // none); ConfigError when no run has one or the settings are invalid.
    void request_recipe_config(const ScaledRecipeConfig& config);
    // Tests: every run, of this launch and of later ones, pauses itself once it has done `step`
    // steps (Trainer::hold_after_step); 0 = none. The state stays Running; pause() then resume()
    // releases the runs. Lets a test act on runs that are certainly still going.
    void hold_after_step(int64_t step);

    State state() const { return state_; }
    bool busy() const { return state_ != State::Idle; }
    bool comparing() const { return workers_.size() > 1; }
    int run_count() const { return static_cast<int>(workers_.size()); }
    // Run ids of the current (or last) runs, by slot; 0 where not created.
    std::vector<int64_t> run_ids() const { return run_ids_; }
    const std::string& db_path() const { return options_.db_path; }
    const Options& options() const { return options_; }
    int64_t gate_handovers() const;
    // Drains the buffer now (tests; the timer does this ~30 times a second).
    void drain();

signals:
    // One per drain tick, holding every run's news since the last one.
    void updates(const std::vector<mpwb::RunUpdate>& updates);
    void stateChanged(mpwb::TrainingController::State state);
    // Progress over all runs: fraction in [0, 1] and seconds left (negative when unknown).
    void progress(double fraction, double eta_seconds);
    void message(const QString& text);

private:
    bool launch(const nlohmann::json& network, const std::vector<TrainConfig>& configs,
                const std::vector<std::string>& names, bool comparison,
                const std::optional<ResumeSource>& resume = std::nullopt);
    void set_state(State state);
    void release_threads();

    Options options_;
    std::shared_ptr<Shared> shared_;
    std::vector<QThread*> threads_;
    std::vector<TrainingWorker*> workers_;
    std::vector<int64_t> run_ids_;
    std::vector<int64_t> total_steps_, done_steps_;
    std::vector<bool> slot_done_;
    std::chrono::steady_clock::time_point started_;
    int64_t hold_step_ = 0;
    QTimer drain_timer_;
    State state_ = State::Idle;
};

// Runs one Trainer on its QThread. Public for the queued call; use TrainingController.
class TrainingWorker : public QObject {
    Q_OBJECT
public:
    TrainingWorker(int slot, nlohmann::json network, TrainConfig config, std::string name,
                   std::shared_ptr<TrainingController::Shared> shared);
    ~TrainingWorker() override;
    void pause();
    void resume();
    void stop();
    // Checked now (ConfigError to the caller): before the trainer exists it becomes the run's
    // starting setting (apply_before_start), after it joins the trainer's queue.
    void request_change(const LiveChange& change);
    void hold_after_step(int64_t step);
    // Before run(): continue a stored run instead of starting a new one.
    void set_resume(ResumeSource resume) { resume_ = std::move(resume); }
    bool reduced() const;
    bool scaled() const;

public slots:
    void run();

private:
    int slot_;
    nlohmann::json network_;
    TrainConfig config_;
    std::string name_;
    std::shared_ptr<TrainingController::Shared> shared_;
    std::mutex mu_;
    Trainer* trainer_ = nullptr;  // valid while run() trains; guarded by mu_
    bool stop_requested_ = false;
    bool pause_requested_ = false;
    int64_t hold_step_ = 0;
    std::optional<ResumeSource> resume_;
};

}  // namespace mpwb

Q_DECLARE_METATYPE(mpwb::RunUpdate)
