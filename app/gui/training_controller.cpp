// TrainingController, TrainingWorker, the live observer that feeds the GUI buffer, and the
// ChunkGate that makes a comparison's two runs take turns.
#include "app/gui/training_controller.h"

#include <QThread>

#include <algorithm>
#include <thread>

#include "core/backend/default_backend.h"
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/nn/layer.h"
#include "core/nn/network.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "sessions/recorded_run.h"
#include "sessions/run_store.h"

namespace mpwb {

using Clock = std::chrono::steady_clock;

// ---- ChunkGate ---------------------------------------------------------------------------------

ChunkGate::ChunkGate(int runs, double chunk_seconds)
    : active_(static_cast<size_t>(runs), true), chunk_seconds_(chunk_seconds), turn_start_(Clock::now()) {}

void ChunkGate::acquire(int slot) {
    std::unique_lock lock(mu_);
    active_[static_cast<size_t>(slot)] = true;
    if (!active_[static_cast<size_t>(turn_)]) turn_ = slot;  // left by a run that paused or ended
    cv_.wait(lock, [&] { return open_ || turn_ == slot; });
    if (turn_ == slot) turn_start_ = Clock::now();
}

void ChunkGate::step_done(int slot) {
    std::unique_lock lock(mu_);
    if (open_ || turn_ != slot) return;
    const double held = std::chrono::duration<double>(Clock::now() - turn_start_).count();
    if (held < chunk_seconds_) return;
    pass_turn_locked(slot);
    cv_.wait(lock, [&] { return open_ || turn_ == slot; });
    turn_start_ = Clock::now();
}

void ChunkGate::finish(int slot) {
    std::lock_guard lock(mu_);
    active_[static_cast<size_t>(slot)] = false;
    if (turn_ == slot) pass_turn_locked(slot);
    cv_.notify_all();
}

void ChunkGate::yield(int slot) {
    std::lock_guard lock(mu_);
    if (open_) return;
    active_[static_cast<size_t>(slot)] = false;
    if (turn_ == slot) pass_turn_locked(slot);
    cv_.notify_all();
}

void ChunkGate::open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
}

int64_t ChunkGate::handovers() const {
    std::lock_guard lock(mu_);
    return handovers_;
}

void ChunkGate::pass_turn_locked(int slot) {
    const int n = static_cast<int>(active_.size());
    for (int i = 1; i <= n; ++i) {
        const int next = (slot + i) % n;
        if (active_[static_cast<size_t>(next)]) {
            if (next != slot) ++handovers_;
            turn_ = next;
            turn_start_ = Clock::now();
            cv_.notify_all();
            return;
        }
    }
    // Nobody else is active: the turn stays (a finished run leaves it to no one).
}

// ---- shared state between the GUI thread and the workers ----------------------------------------

struct TrainingController::Shared {
    Options options;
    std::mutex mu;                    // guards pending
    std::vector<RunUpdate> pending;   // one per slot
    std::unique_ptr<ChunkGate> gate;  // comparisons only
    std::optional<int64_t> group_id;

    // One dataset for every run of a launch (a comparison must not load Fashion-MNIST twice),
    // kept for the next launch with the same spec.
    std::mutex data_mu;
    std::string data_key;
    std::shared_ptr<const Dataset> data;

    RunUpdate& slot(int s) { return pending.at(static_cast<size_t>(s)); }

    std::shared_ptr<const Dataset> dataset(const DatasetSpec& spec) {
        std::lock_guard lock(data_mu);  // the second run waits here for the first's load
        const std::string key = to_json(spec).dump();
        if (data && data_key == key) return data;
        data.reset();
        auto loaded = std::make_shared<Dataset>(load_dataset(spec));
        data = loaded;
        data_key = key;
        return data;
    }
};

// ---- the observer on the training thread ---------------------------------------------------------

// Buffers everything for the GUI; computes the decision boundary on 2-D classification sets.
class LiveObserver final : public TrainingObserver {
public:
    LiveObserver(int slot, std::shared_ptr<TrainingController::Shared> shared,
                 std::shared_ptr<const Dataset> data, RecordedRun& run)
        : slot_(slot),
          shared_(std::move(shared)),
          data_(std::move(data)),
          run_(run),
          boundary_(run.has_boundary()) {}

    void on_run_start(const RunStartInfo& info) override {
        const int64_t id = run_.run_id();
        std::lock_guard lock(shared_->mu);
        auto& u = shared_->slot(slot_);
        u.start = info;
        u.dataset = data_;
        u.run_id = id;
        last_boundary_ = Clock::now() - std::chrono::hours(1);
    }
    void on_step(const StepMetrics& m) override {
        {
            std::lock_guard lock(shared_->mu);
            shared_->slot(slot_).steps.push_back(m);
        }
        if (boundary_ && std::chrono::duration<double>(Clock::now() - last_boundary_).count() >=
                             shared_->options.boundary_interval) {
            compute_boundary(m.step);
            last_boundary_ = Clock::now();
        }
    }
    void on_eval(const EvalMetrics& m) override {
        std::lock_guard lock(shared_->mu);
        shared_->slot(slot_).evals.push_back(m);
    }
    void on_gradient_stats(const GradientStatsRecord& r) override {
        std::lock_guard lock(shared_->mu);
        shared_->slot(slot_).stats.push_back(r);
    }
    void on_scaling_stats(const ScalingStatsRecord& r) override {
        std::lock_guard lock(shared_->mu);
        shared_->slot(slot_).scaling.push_back(r);
    }
    void on_stability(const StabilityRecord& r) override {
        std::lock_guard lock(shared_->mu);
        shared_->slot(slot_).stability.push_back(r);
    }
    void on_event(const TrainingEvent& e) override {
        std::lock_guard lock(shared_->mu);
        shared_->slot(slot_).events.push_back(e);
    }
    void on_run_end(const RunSummary& s) override {
        if (boundary_) compute_boundary(s.steps);  // the final weights' boundary
        std::lock_guard lock(shared_->mu);
        shared_->slot(slot_).end = s;
    }

private:
    void compute_boundary(int64_t step) {
        try {
            BoundaryGrid g = run_.sample_boundary(step);
            last_grid_ = g;
            std::lock_guard lock(shared_->mu);
            shared_->slot(slot_).boundary = std::move(g);
        } catch (const std::exception&) {
            boundary_ = false;  // a network the grid cannot go through: no boundary, training goes on
        }
    }

public:
    // The newest grid (the final weights' once the run has ended), for the run store.
    const std::optional<BoundaryGrid>& last_grid() const { return last_grid_; }

private:
    std::optional<BoundaryGrid> last_grid_;
    int slot_;
    std::shared_ptr<TrainingController::Shared> shared_;
    std::shared_ptr<const Dataset> data_;
    RecordedRun& run_;
    bool boundary_;  // false once a grid could not be sampled
    Clock::time_point last_boundary_;
};

// Keeps the run in the comparison's rotation (the worker takes the first turn before run(), so
// the FP32 run, slot 0, also creates its run row first). Added last, so the other observers
// have each step before it blocks. A paused run leaves the rotation until it resumes, so a
// run paused alone (a test's hold) never keeps the other waiting for its turn.
class GateTurns final : public TrainingObserver {
public:
    GateTurns(ChunkGate& gate, int slot) : gate_(gate), slot_(slot) {}
    void on_step(const StepMetrics&) override { gate_.step_done(slot_); }
    void on_event(const TrainingEvent& e) override {
        if (e.kind == "paused") gate_.yield(slot_);
        if (e.kind == "resumed") gate_.acquire(slot_);
    }
    void on_run_end(const RunSummary&) override { gate_.finish(slot_); }

private:
    ChunkGate& gate_;
    int slot_;
};

// ---- TrainingWorker ----------------------------------------------------------------------------

TrainingWorker::TrainingWorker(int slot, nlohmann::json network, TrainConfig config, std::string name,
                               std::shared_ptr<TrainingController::Shared> shared)
    : slot_(slot),
      network_(std::move(network)),
      config_(std::move(config)),
      name_(std::move(name)),
      shared_(std::move(shared)) {}

TrainingWorker::~TrainingWorker() = default;

bool TrainingWorker::reduced() const { return config_.policy().reduced(); }
bool TrainingWorker::scaled() const { return config_.policy().scaled(); }

namespace {
// What a failed run leaves behind, said as it is: nothing, an empty row, or its steps (all of
// them, or, once recording stopped, only those written before it stopped).
std::string kept_text(int64_t steps, int64_t run_id, bool recording_stopped) {
    const std::string run = "run #" + std::to_string(run_id);
    if (recording_stopped && run_id > 0)
        return "The run's " + std::to_string(steps) + " steps stay in the plots; " + run +
               " in the database holds them only up to the step where recording stopped, and can be "
               "resumed from its checkpoint once the database can be written again.";
    if (steps == 0)
        return run_id > 0
                   ? "The run failed before its first step; " + run + " stays in the database without data."
                   : "The run failed before its first step: nothing was recorded.";
    const std::string what = std::to_string(steps) + (steps == 1 ? " step" : " steps");
    return run_id > 0
               ? "What the run recorded so far (" + what + ") stays in the plots and in the database as " +
                     run + "."
               : "What the run showed so far (" + what + ") stays in the plots; it is not in the database.";
}

// The workbench's recorder for one run (none when recording is off): tagged as the workbench's,
// in the comparison's group. A failure while the run trains is shown at once, in `slot`'s update.
std::unique_ptr<RunRecorder> open_recorder(const std::shared_ptr<TrainingController::Shared>& shared,
                                           int slot, const std::string& name, int64_t resume_run_id) {
    if (!shared->options.record) return nullptr;
    RunRecorder::Options ro;
    ro.db_path = shared->options.db_path;
    ro.name = name;
    ro.tags = {{"source", "mpwb"}};
    if (shared->gate) ro.tags["comparison"] = "fp32-vs-mixed";
    ro.group_id = shared->group_id;
    ro.resume_run_id = resume_run_id;
    ro.on_failure = [shared, slot](const std::string& m) {
        std::lock_guard lock(shared->mu);
        shared->slot(slot).errors.push_back("recording failed: " + m);
    };
    return std::make_unique<RunRecorder>(ro);
}
}  // namespace

void TrainingWorker::run() {
    // Errors of the run's end go out together with what is kept, in one update.
    std::vector<std::string> errors;
    int64_t steps_done = 0, run_id = 0;
    bool recording_stopped = false;
    auto fail = [&](const std::string& what) { errors.push_back(what); };
    try {
        auto data = shared_->dataset(config_.dataset);
        {
            std::lock_guard lock(mu_);
            if (stop_requested_) throw Error("stopped before training started");
        }
        std::string why_not_gpu;
        auto backend = make_default_backend(&why_not_gpu);
        RecordedRun run(network_, *data, config_, *backend,
                        open_recorder(shared_, slot_, name_, resume_ ? resume_->run_id : 0));
        Trainer& trainer = run.trainer();
        if (resume_) trainer.resume_from(*resume_->checkpoint);
        // A workbench that crashes or is killed leaves its runs INTERRUPTED with at most this
        // much training lost: Resume in the run browser continues them from the checkpoint.
        if (run.recorder()) trainer.set_checkpoint_policy({.every_steps = 0, .every_seconds = 300});
        std::optional<GateTurns> gate_turns;
        if (shared_->gate) gate_turns.emplace(*shared_->gate, slot_);
        LiveObserver live(slot_, shared_, data, run);
        run.add_observer(run.recorder());  // first: the live observer reads its run id
        run.add_observer(&live);
        if (gate_turns) run.add_observer(&*gate_turns);
        {
            std::lock_guard lock(mu_);
            trainer_ = &trainer;
            if (pause_requested_) trainer.pause();
            if (stop_requested_) trainer.stop();
            trainer.hold_after_step(hold_step_);
        }
        // A comparison's run starts on its turn: Trainer::run() first sets the thread count of
        // the process-wide pool, which must not change under the other run's step.
        if (gate_turns) shared_->gate->acquire(slot_);
        const RunSummary summary = trainer.run();
        {
            std::lock_guard lock(mu_);
            trainer_ = nullptr;
        }
        steps_done = summary.steps;
        run_id = run.run_id();
        recording_stopped = run.recorder() && !run.recorder()->error().empty();
        if (recording_stopped) fail("recording: " + run.recorder()->error());
        // The final boundary goes into the store with the run (after the recorder's last commit):
        // the one drawn last, from the final weights.
        if (live.last_grid()) {
            const std::string why = run.store_final_boundary(summary, live.last_grid());
            if (!why.empty()) fail("recording the decision boundary: " + why);
        }
        if (summary.status == RunStatus::Failed) fail("training failed: " + summary.error);
    } catch (const std::exception& e) {
        {
            std::lock_guard lock(mu_);
            trainer_ = nullptr;
        }
        if (shared_->gate) shared_->gate->finish(slot_);  // never leave the other run waiting
        fail(e.what());
    }
    {
        std::lock_guard lock(shared_->mu);
        auto& update = shared_->slot(slot_);
        update.errors.insert(update.errors.end(), errors.begin(), errors.end());
        if (!errors.empty()) update.kept = kept_text(steps_done, run_id, recording_stopped);
        update.finished = true;
    }
    // The thread ends itself here, without a round trip through the GUI thread (which may be
    // waiting for it). A "done" signal queued to the controller used to quit the thread by
    // slot; delivered late, after a new launch, it quit the *next* run's thread before that
    // thread ran, and the window waited for ever (seen in mpwb --benchmark).
    QThread::currentThread()->quit();
}

void TrainingWorker::pause() {
    std::lock_guard lock(mu_);
    pause_requested_ = true;
    if (trainer_) trainer_->pause();
}

void TrainingWorker::resume() {
    std::lock_guard lock(mu_);
    pause_requested_ = false;
    if (trainer_) trainer_->resume();
}

void TrainingWorker::stop() {
    std::lock_guard lock(mu_);
    stop_requested_ = true;
    if (trainer_) trainer_->stop();
}

void TrainingWorker::hold_after_step(int64_t step) {
    std::lock_guard lock(mu_);
    hold_step_ = step;
    if (trainer_) trainer_->hold_after_step(step);
}

void TrainingWorker::request_change(const LiveChange& change) {
    std::lock_guard lock(mu_);
    if (trainer_)
        trainer_->request_change(change);
    else
        apply_before_start(config_, change);  // not started yet: it starts with this setting
}

// ---- TrainingController -------------------------------------------------------------------------

TrainingController::TrainingController(Options options, QObject* parent)
    : QObject(parent), options_(std::move(options)) {
    if (options_.db_path.empty()) options_.db_path = default_database_path();
    qRegisterMetaType<mpwb::RunUpdate>();
    drain_timer_.setObjectName(QStringLiteral("drainTimer"));
    drain_timer_.setInterval(std::max(1, 1000 / std::max(1, options_.drain_hz)));
    connect(&drain_timer_, &QTimer::timeout, this, &TrainingController::drain);
}

TrainingController::~TrainingController() {
    stop();
    release_threads();
}

// The workers are deleted only here, once their threads ended, so pause/stop never reach a
// deleted worker however the GUI's calls and the threads' ends interleave.
void TrainingController::release_threads() {
    for (auto* t : threads_) t->wait();
    for (auto* w : workers_) delete w;
    for (auto* t : threads_) delete t;
    workers_.clear();
    threads_.clear();
}

bool TrainingController::start(const nlohmann::json& network, const TrainConfig& config,
                               const std::string& name) {
    const std::string n = name.empty() ? config.dataset.kind + " " + precision_name(config.precision) : name;
    return launch(network, {config}, {n}, false);
}

bool TrainingController::start_comparison(const nlohmann::json& network, const TrainConfig& config,
                                          PrecisionKind mixed, const std::string& name) {
    if (mixed == PrecisionKind::FP32) mixed = PrecisionKind::FP16Mixed;
    TrainConfig fp32 = config;
    fp32.precision = PrecisionKind::FP32;
    fp32.scaler.reset();  // FP32 has nothing to scale
    TrainConfig low = config;
    low.precision = mixed;
    const std::string base = name.empty() ? config.dataset.kind : name;
    return launch(network, {fp32, low}, {base + " fp32", base + " " + precision_name(mixed)}, true);
}

bool TrainingController::continue_run(const nlohmann::json& network, const TrainConfig& config,
                                      ResumeSource resume, const std::string& name) {
    return launch(network, {config}, {name}, false, std::move(resume));
}

bool TrainingController::launch(const nlohmann::json& network, const std::vector<TrainConfig>& configs,
                                const std::vector<std::string>& names, bool comparison,
                                const std::optional<ResumeSource>& resume) {
    if (busy()) {
        emit message(tr("A run is going: stop it first."));
        return false;
    }
    for (const auto& c : configs) c.validate();  // ConfigError to the caller before any thread starts
    auto previous = shared_;
    shared_ = std::make_shared<Shared>();
    shared_->options = options_;
    if (previous) {  // keep the loaded dataset for the next run
        std::lock_guard lock(previous->data_mu);
        shared_->data = previous->data;
        shared_->data_key = previous->data_key;
    }
    shared_->pending.resize(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) shared_->pending[i].slot = static_cast<int>(i);
    if (comparison) {
        shared_->gate = std::make_unique<ChunkGate>(static_cast<int>(configs.size()), options_.chunk_seconds);
        if (options_.record) {
            try {
                shared_->group_id = RunRecorder::create_group(
                    options_.db_path, names.front().substr(0, names.front().rfind(' ')) + " fp32 vs mixed");
            } catch (const std::exception& e) {
                emit message(
                    tr("Could not create the comparison group: %1").arg(QString::fromStdString(e.what())));
            }
        }
    }
    release_threads();
    run_ids_.assign(configs.size(), 0);
    total_steps_.assign(configs.size(), 0);
    done_steps_.assign(configs.size(), 0);
    slot_done_.assign(configs.size(), false);
    for (size_t i = 0; i < configs.size(); ++i) {
        auto* thread = new QThread();
        thread->setObjectName(QStringLiteral("training-%1").arg(i));
        auto* worker = new TrainingWorker(static_cast<int>(i), network, configs[i], names[i], shared_);
        worker->hold_after_step(hold_step_);
        if (resume) worker->set_resume(*resume);
        worker->moveToThread(thread);
        threads_.push_back(thread);
        workers_.push_back(worker);
    }
    started_ = Clock::now();
    set_state(State::Starting);
    for (size_t i = 0; i < threads_.size(); ++i) {
        threads_[i]->start();
        QMetaObject::invokeMethod(workers_[i], &TrainingWorker::run, Qt::QueuedConnection);
    }
    drain_timer_.start();
    return true;
}

void TrainingController::pause() {
    if (state_ != State::Running && state_ != State::Starting) return;
    for (auto* w : workers_) w->pause();
    set_state(State::Paused);
}

void TrainingController::resume() {
    if (state_ != State::Paused) return;
    for (auto* w : workers_) w->resume();
    set_state(State::Running);
}

void TrainingController::stop() {
    if (state_ == State::Idle) return;
    for (auto* w : workers_) w->stop();
    for (auto* w : workers_) w->resume();  // a paused trainer must wake up to see the stop
    if (shared_ && shared_->gate) shared_->gate->open();
    set_state(State::Stopping);
}

void TrainingController::wait() {
    for (auto* t : threads_) t->wait();
    drain();
}

// The change is the same for every run, so the first run's check refuses it before any has it.
void TrainingController::request_scaler_config(const LossScalerConfig& config) {
    const bool all = workers_.size() == 1;
    for (auto* w : workers_)
        if (all || w->reduced()) w->request_change(config);
}

void TrainingController::request_recipe_config(const ScaledRecipeConfig& config) {
    bool any = false;
    for (auto* w : workers_)
        if (w->scaled()) {
            w->request_change(config);
            any = true;
        }
    if (!any) throw ConfigError("recipe settings: no run uses a scaled recipe (fp8-delayed ... mxfp4)");
}

void TrainingController::request_loss_scale(double scale) {
    const bool all = workers_.size() == 1;
    for (auto* w : workers_)
        if (all || w->reduced()) w->request_change(LossScaleChange{scale});
}

void TrainingController::request_learning_rate(float lr) {
    for (auto* w : workers_) w->request_change(LearningRateChange{lr});
}

void TrainingController::hold_after_step(int64_t step) {
    hold_step_ = step;
    for (auto* w : workers_) w->hold_after_step(step);
}

int64_t TrainingController::gate_handovers() const {
    return shared_ && shared_->gate ? shared_->gate->handovers() : 0;
}

void TrainingController::set_state(State state) {
    if (state_ == state) return;
    state_ = state;
    emit stateChanged(state);
}

void TrainingController::drain() {
    if (!shared_) return;
    std::vector<RunUpdate> out;
    {
        std::lock_guard lock(shared_->mu);
        for (auto& u : shared_->pending) {
            RunUpdate taken;
            taken.slot = u.slot;
            taken.run_id = u.run_id;
            std::swap(taken, u);
            u.run_id = taken.run_id;
            out.push_back(std::move(taken));
        }
    }
    bool all_done = !out.empty();
    bool any_news = false;
    for (auto& u : out) {
        const auto s = static_cast<size_t>(u.slot);
        if (u.run_id) run_ids_[s] = u.run_id;
        if (u.start) total_steps_[s] = u.start->total_steps;
        if (!u.steps.empty()) done_steps_[s] = u.steps.back().step;
        if (u.finished) slot_done_[s] = true;
        all_done = all_done && slot_done_[s];
        any_news = any_news || u.start || !u.steps.empty() || !u.evals.empty() || !u.stats.empty() ||
                   !u.scaling.empty() || !u.events.empty() || u.boundary || u.end || !u.errors.empty() ||
                   u.finished;
    }
    if (state_ == State::Starting) {
        for (auto& u : out)
            if (u.start) {
                set_state(State::Running);
                break;
            }
    }
    if (any_news) emit updates(out);
    int64_t total = 0, done = 0;
    for (size_t i = 0; i < total_steps_.size(); ++i) {
        total += total_steps_[i];
        done += slot_done_[i] ? total_steps_[i] : done_steps_[i];
    }
    if (total > 0 && state_ != State::Idle) {
        const double f = std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0);
        const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
        emit progress(f, f > 0.01 ? elapsed * (1 - f) / f : -1);
    }
    if (all_done && state_ != State::Idle) {
        for (auto* t : threads_) t->wait();
        drain_timer_.stop();
        set_state(State::Idle);
        emit progress(1.0, 0);
    }
}

}  // namespace mpwb
