// The step loop: one loop over one StepEngine (trainer.h), with the state of a run in Trainer::Run.
#include "core/train/trainer.h"

#include "core/backend/cpu/blas_kernel.h"
#include "core/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/data/batcher.h"
#include "core/engine/device_steps.h"
#include "core/engine/device_fp8_support.h"
#include "core/train/checkpoint_restore.h"
#include "core/train/checkpoint_state.h"
#include "core/train/dataset_digest.h"
#include "core/engine/host_step_engine.h"

namespace mpwb {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Collects exponent histograms for a statistics step.
class StatsProbe final : public GradientProbe {
public:
    StatsProbe(const Network& net, int64_t step, Format format, float scale)
        : net_(net), step_(step), format_(format), scale_(scale) {}
    void observe(size_t layer, GradientKind kind, const std::string& parameter, const float* values,
                 int64_t count) override {
        observe_histogram(layer, kind, parameter,
                          ExponentHistogram::compute(values, static_cast<size_t>(count)));
    }
    void observe_histogram(size_t layer, GradientKind kind, const std::string& parameter,
                           const ExponentHistogram& histogram) override {
        GradientStatsRecord r;
        r.step = step_;
        r.layer = layer;
        r.layer_label = net_.layer_label(layer);
        r.kind = kind;
        r.parameter = parameter;
        r.histogram = histogram;
        r.format = format_;
        r.stats = range_stats(r.histogram, format_);
        r.loss_scale = scale_;
        records.push_back(std::move(r));
    }
    int64_t step() const { return step_; }
    std::vector<GradientStatsRecord> records;

private:
    const Network& net_;
    int64_t step_;
    Format format_;
    float scale_;
};

std::vector<float> values_of(const Tensor& t) { return {t.span().begin(), t.span().end()}; }

// The weights a run ended with, to its observers (TrainingObserver::on_final_weights), once a
// step ran. Every ending but a failure has downloaded them already; after a failure the engine
// is asked once more, and an engine that cannot answer any more leaves the run without them.
void hand_final_weights(const std::vector<TrainingObserver*>& observers, Network& network, StepEngine* engine,
                        int64_t steps, RunStatus status) {
    if (steps == 0 || !engine || observers.empty()) return;
    NetworkWeights weights;
    try {
        if (status == RunStatus::Failed) engine->download_weights();
        weights = network_weights(network, steps);
    } catch (const std::exception&) {
        return;
    }
    for (auto* o : observers) o->on_final_weights(weights);
}

}  // namespace

const char* run_status_name(RunStatus status) {
    switch (status) {
        case RunStatus::Running:
            return "RUNNING";
        case RunStatus::Finished:
            return "FINISHED";
        case RunStatus::Stopped:
            return "STOPPED";
        case RunStatus::Failed:
            return "FAILED";
        case RunStatus::Interrupted:
            return "INTERRUPTED";
    }
    return "?";
}

nlohmann::json RunSummary::to_json() const {
    return {{"status", run_status_name(status)},
            {"error", error},
            {"steps", steps},
            {"epochs_completed", epochs_completed},
            {"wall_seconds", wall_seconds},
            {"train_seconds", train_seconds},
            {"samples_per_second", samples_per_second},
            {"train_loss", train_loss},
            {"test_loss", test_loss},
            {"test_accuracy", test_accuracy},
            {"best_test_accuracy", best_test_accuracy},
            {"skipped_steps", skipped_steps},
            {"overflow_count", overflow_count},
            {"min_scale", min_scale},
            {"max_scale", max_scale},
            {"mean_activation_underflow", mean_activation_underflow}};
}

Trainer::Trainer(Network& network, const Dataset& data, TrainConfig config, Backend& backend)
    : network_(network),
      data_(data),
      config_(std::move(config)),
      backend_(backend),
      policy_(config_.policy()),
      scaler_(config_.effective_scaler()),
      live_changes_(policy_) {
    config_.validate();
    if (data_.train_size() == 0) throw DataError("dataset '" + data_.name + "' has no training samples");
    (void)training_steps(config_, data_.train_size());                 // ConfigError beyond the step limit
    (void)run_loss(network_.loss(), data_.target_kind(), data_.name);  // NetworkError: does not fit
    // Measured at the batch a step and the batch an evaluation will run, so a network too large
    // for either is refused here with the numbers, before anything is allocated.
    const int64_t eval_batch = std::min(config_.eval_batch, std::max<int64_t>(data_.test_size(), 1));
    network_.build(data_.sample_shape, std::min(config_.batch_size, data_.train_size()), data_.num_classes,
                   eval_batch);
    if (data_.target_kind() == TargetKind::ClassPerPosition) {
        const Shape expected{data_.train_y.dim(1), data_.num_classes};
        if (network_.output_shape() != expected)
            throw NetworkError("the network's output " + shape_to_string(network_.output_shape()) +
                               " does not match the next-token classes " + shape_to_string(expected) +
                               " of '" + data_.name +
                               "' (positions x vocabulary); the last Linear layer "
                               "needs \"out\": " +
                               std::to_string(data_.num_classes) + " (or 0, the dataset's)");
    } else if (data_.is_classification()) {
        if (network_.output_shape() != Shape{data_.num_classes})
            throw NetworkError(
                "the network's output " + shape_to_string(network_.output_shape()) + " does not match the " +
                std::to_string(data_.num_classes) + " classes of '" + data_.name +
                "'; the last Linear layer needs \"out\": " + std::to_string(data_.num_classes));
    } else if (network_.output_shape() != Shape{data_.target_width()}) {
        throw NetworkError("the network's output " + shape_to_string(network_.output_shape()) +
                           " does not match the " + std::to_string(data_.target_width()) +
                           " regression targets of '" + data_.name + "'");
    }
    network_.init(config_.seed);
    network_.prepare_weights(policy_);
    network_.prepare_precision(resolve_gemm_precisions(network_.all_gemms(), config_.precision_rules, policy_,
                                                       config_.effective_recipe().fp8_attention),
                               config_.effective_recipe(), config_.what_if, config_.seed);
    ScheduleConfig schedule = config_.schedule;
    if (schedule.kind == "cosine" && schedule.total_steps == 0) schedule.total_steps = total_steps();
    schedule_ = std::make_unique<LrSchedule>(schedule, config_.lr);
}

Trainer::~Trainer() = default;

int64_t Trainer::steps_per_epoch() const {
    return (data_.train_size() + config_.batch_size - 1) / config_.batch_size;
}

int64_t Trainer::total_steps() const { return training_steps(config_, data_.train_size()); }

void Trainer::add_observer(TrainingObserver* observer) { observers_.push_back(observer); }

void Trainer::pause() { paused_ = true; }

void Trainer::resume() {
    {
        std::lock_guard lock(pause_mutex_);
        paused_ = false;
    }
    pause_cv_.notify_all();
}

void Trainer::hold_after_step(int64_t step) { hold_step_ = step; }

bool Trainer::take_hold(int64_t steps_done) {
    int64_t expected = steps_done;
    if (steps_done <= 0 || !hold_step_.compare_exchange_strong(expected, 0)) return false;
    paused_ = true;
    return true;
}

void Trainer::stop() {
    stop_ = true;
    resume();
}

void Trainer::wait_while_paused() {
    std::unique_lock lock(pause_mutex_);
    // checkpoint_and_stop may come from a signal handler, which cannot notify a condition
    // variable, so the wait also looks at its flag every few milliseconds.
    const auto released = [this] { return !paused_ || stop_ || checkpoint_requested_; };
    while (!pause_cv_.wait_for(lock, std::chrono::milliseconds(20), released)) {}
}

void Trainer::emit_event(const TrainingEvent& event) {
    for (auto* o : observers_) o->on_event(event);
}

void Trainer::drain_scaler_events(double wall) {
    for (auto& e : scaler_.take_events()) emit_event({e.step, wall, e.kind, e.source, e.detail});
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: setting up (the run's part is below the loop)

// A checked checkpoint's position and the state the engine and the run start from.
struct Trainer::ResumePoint {
    int64_t step = 0, epoch = 0, batch = 0;
    double wall_seconds = 0;
    StepEngineState engine;
    RunSums sums;
    std::optional<uint64_t> trained_data_digest;  // when the data changed since (and that was allowed)
};

void Trainer::set_checkpoint_policy(const CheckpointPolicy& policy) {
    if (policy.every_steps < 0)
        throw ConfigError("checkpoint every_steps must be 0 (off) or positive, gets " +
                          std::to_string(policy.every_steps));
    if (!(policy.every_seconds >= 0) || !std::isfinite(policy.every_seconds))
        throw ConfigError("checkpoint every_seconds must be 0 (off) or a positive number of seconds, gets " +
                          std::to_string(policy.every_seconds));
    checkpoint_policy_ = policy;
}

void Trainer::checkpoint_and_stop() { checkpoint_requested_.store(true); }

void Trainer::resume_from(const TrainingCheckpoint& checkpoint, const ResumeOptions& options) {
    const RestoreTarget target{network_,          data_,         config_,       policy_,
                               steps_per_epoch(), total_steps(), data_digest(), options.allow_changed_data};
    CheckedCheckpoint checked = check_checkpoint(checkpoint, target);
    // Nothing has thrown: the trainer takes the state.
    restore_checkpoint(checked, network_, scaler_);
    config_.recipe = checked.reached.recipe;
    lr_scale_ = checked.state.lr_scale;
    resume_ = std::make_unique<ResumePoint>(ResumePoint{checked.step, checked.epoch, checked.batch,
                                                        checked.wall_seconds, std::move(checked.state.engine),
                                                        checked.state.sums, checked.trained_data_digest});
}

uint64_t Trainer::data_digest() {
    if (!data_digest_) data_digest_ = dataset_digest(data_);
    return *data_digest_;
}

// ---------------------------------------------------------------------------------------------
// The state of one run

struct Trainer::InFlight {
    int64_t step = 0, epoch = 0;
    int64_t offset = 0, n = 0;  // the batch: order[offset, offset + n)
    bool statistics = false;    // a gradient-statistics step
    int retries = 0;
    double seconds = 0;  // of its attempts so far
};

struct Trainer::Run {
    Run(const Dataset& data, const TrainConfig& config, const PrecisionPolicy& policy)
        : batches(data.train_x, data.train_y, config.batch_size, config.seed, true, false),
          stats_format(policy.reduced() ? policy.activations : Format::FP16) {}
    // The run's time: a resumed run goes on from its checkpoint's.
    double seconds() const { return wall_offset + seconds_since(t0); }
    RunSums sums() const;
    void restore(const RunSums& sums);

    const Clock::time_point t0 = Clock::now();
    double wall_offset = 0;
    RunSummary summary;
    BatchIterator batches;
    const Format stats_format;  // what the gradient statistics' fractions refer to
    std::unique_ptr<StepEngine> engine;
    std::deque<InFlight> in_flight;  // oldest first, as the records arrive
    std::vector<StepResult> arrived;
    std::optional<StatsProbe> probe;  // the histograms of the statistics step in flight
    int64_t step = 0;                 // steps launched
    int64_t window_phase = 0;         // of the epoch's text windows (window_phase)
    bool finished = false;
    bool interrupted = false;  // by checkpoint_and_stop
    // Where the next step would start: the position of the run's final checkpoint, and of a
    // resumed run's first step.
    int64_t next_epoch = 0, next_batch = 0;
    bool checkpoints = false;  // the engine can save its state
    int64_t last_checkpoint_step = 0;
    double last_checkpoint_wall = 0;
    // Running sums: since the last evaluation, over the epoch, over the run.
    double since_eval_loss = 0, since_eval_correct = 0;
    int64_t since_eval_steps = 0, since_eval_samples = 0;
    double epoch_loss = 0;
    int64_t epoch_steps = 0;
    int64_t trained_samples = 0;
    double underflow_sum = 0;
    int64_t underflow_count = 0;
};

// Each running sum of a run beside its place in RunSums: the one list both directions use.
template <class RunT, class SumsT, class F>
void for_each_sum(RunT& run, SumsT& s, F&& f) {
    auto& summary = run.summary;
    f(summary.steps, s.steps), f(summary.epochs_completed, s.epochs_completed);
    f(summary.train_seconds, s.train_seconds), f(summary.train_loss, s.train_loss);
    f(summary.test_loss, s.test_loss), f(summary.test_accuracy, s.test_accuracy);
    f(summary.best_test_accuracy, s.best_test_accuracy);
    f(summary.min_scale, s.min_scale), f(summary.max_scale, s.max_scale);
    f(run.since_eval_loss, s.since_eval_loss), f(run.since_eval_correct, s.since_eval_correct);
    f(run.since_eval_steps, s.since_eval_steps), f(run.since_eval_samples, s.since_eval_samples);
    f(run.epoch_loss, s.epoch_loss), f(run.epoch_steps, s.epoch_steps);
    f(run.trained_samples, s.trained_samples);
    f(run.underflow_sum, s.underflow_sum), f(run.underflow_count, s.underflow_count);
}

RunSums Trainer::Run::sums() const {
    RunSums s;
    for_each_sum(*this, s, [](const auto& from, auto& to) { to = from; });
    return s;
}

void Trainer::Run::restore(const RunSums& s) {
    for_each_sum(*this, s, [](auto& to, const auto& from) { to = from; });
}

// ---------------------------------------------------------------------------------------------
// The loop

RunSummary Trainer::run() {
    set_thread_count(config_.threads);
    Run run(data_, config_, policy_);
    run.summary.min_scale = run.summary.max_scale = scaler_.scale();
    if (resume_) restore_run(run);
    announce_start();
    try {
        start_engine(run);
        for (int64_t epoch = run.next_epoch;
             !run.finished && (epoch < config_.epochs || config_.max_steps > 0); ++epoch) {
            int64_t batch = begin_epoch(run, epoch);
            bool evaluated = false;
            for (; batch < run.batches.batches_per_epoch() && !stop_; ++batch) {
                if (config_.max_steps > 0 && run.step >= config_.max_steps) break;
                if (!pause_point(run) || checkpoint_point(run, epoch, batch)) break;
                train_step(run, epoch, batch);
                evaluated = config_.eval_every > 0 && run.step % config_.eval_every == 0;
                if (evaluated) evaluate_now(run, epoch);
            }
            end_epoch(run, epoch, batch, evaluated);
        }
        run.engine->download_weights();
        run.summary.status = run.interrupted ? RunStatus::Interrupted
                             : stop_         ? RunStatus::Stopped
                                             : RunStatus::Finished;
        if (stop_) emit_event({run.step, run.seconds(), "stopped", "user", {}});
        final_checkpoint(run);
    } catch (const std::exception& e) {
        run.summary.status = RunStatus::Failed;
        run.summary.error = e.what();
        emit_event({run.step, run.seconds(), "failed", "trainer", {{"error", e.what()}}});
    }
    hand_final_weights(observers_, network_, run.engine.get(), run.step, run.summary.status);
    close_summary(run);
    for (auto* o : observers_) o->on_run_end(run.summary);
    return run.summary;
}

bool Trainer::uses_device_engine() const {
    // A scaled recipe the device does not run (device_fp8_support) trains on the host, and so
    // does a network with a layer the device has no op for (Network::missing_device_op).
    return has_device_steps(backend_) && network_.missing_device_op().empty() &&
           host_only_precision().empty() &&
           (!policy_.scaled() || device_fp8_support(network_, config_.effective_recipe()).empty());
}

std::string Trainer::host_only_precision() const {
    if (network_.precision_plan().departs_from_run())
        return "precision rules give GEMMs their own recipes, which the host engine runs";
    if (!config_.what_if.empty()) return "what-if statistics are taken by the host engine";
    return {};
}

std::unique_ptr<StepEngine> Trainer::make_engine(int64_t total_steps) {
    StepEngineConfig c;
    c.policy = policy_;
    c.recipe = config_.effective_recipe();
    c.optimizer = config_.optimizer;
    c.clip_norm = config_.clip_norm;
    c.schedule = schedule_.get();
    c.total_steps = total_steps;
    c.batch_size = config_.batch_size;
    c.eval_batch = config_.eval_batch;
    c.seed = config_.seed;
    c.use_graphs = config_.device_graphs;
    c.gradient_statistics = config_.stats_every > 0;
    auto engine = uses_device_engine() ? make_device_step_engine(backend_, network_, data_, c)
                                       : make_host_step_engine(network_, data_, backend_, c);
    engine->set_scaler(scaler_.config(), scaler_);
    return engine;
}

// The engine, with a resumed run's optimizer state and dropout generator.
void Trainer::start_engine(Run& run) {
    run.engine = make_engine(total_steps());
    run.checkpoints = run.engine->capabilities().checkpoints;
    if (!run.checkpoints && (checkpoint_policy_.every_steps > 0 || checkpoint_policy_.every_seconds > 0))
        announce_no_checkpoints(run);
    if (!resume_) return;
    run.engine->load_state(resume_->engine);
    announce_resume(run);
    resume_.reset();
}

void Trainer::announce_resume(Run& run) {
    const ResumePoint& r = *resume_;
    emit_event({run.step,
                run.seconds(),
                "resumed_from_checkpoint",
                "trainer",
                {{"step", r.step}, {"epoch", r.epoch}, {"batch", r.batch}}});
    if (r.trained_data_digest)
        emit_event({run.step,
                    run.seconds(),
                    "data_changed",
                    "trainer",
                    {{"dataset", data_.name},
                     {"path", config_.dataset.path},
                     {"trained_digest", digest_text(*r.trained_data_digest)},
                     {"digest", digest_text(data_digest())}}});
}

int64_t Trainer::begin_epoch(Run& run, int64_t epoch) {
    const int64_t first = epoch == run.next_epoch ? run.next_batch : 0;
    run.batches.start_epoch(epoch);
    run.engine->set_epoch_order(run.batches.order());
    run.window_phase = window_phase(data_, config_.seed, epoch);
    run.engine->set_window_phase(run.window_phase);
    if (first == 0) {
        run.epoch_loss = 0;
        run.epoch_steps = 0;
    }
    return first;
}

void Trainer::announce_start() {
    RunStartInfo info;
    if (resume_) info.resumed_from_step = resume_->step;
    info.config = to_json(config_);
    info.network = network_.to_json();
    info.dataset = data_.name;
    info.precision = policy_.name();
    info.backend = backend_.name();
    info.device = backend_.device_name();
    info.blas_core = blas_core_name();
    // A device backend hands scaled recipes and layers it has no op for to the host engine
    // (make_engine): say where the run trains, and why.
    if (has_device_steps(backend_) && !uses_device_engine()) {
        info.backend = "cpu";
        if (const auto* cpu = dynamic_cast<const CpuBackend*>(&backend_))
            info.device = cpu->CpuBackend::device_name();
        std::string why = network_.missing_device_op();
        if (why.empty()) why = host_only_precision();
        if (why.empty()) why = device_fp8_support(network_, config_.effective_recipe());
        info.device += " (" + why + ": it trains on the host engine)";
    }
    info.parameters = network_.parameter_count();
    info.steps_per_epoch = steps_per_epoch();
    info.total_steps = total_steps();
    info.train_samples = data_.train_size();
    info.test_samples = data_.test_size();
    if (data_.vocabulary) info.vocabulary = data_.vocabulary->to_json();
    for (size_t i = 0; i < network_.size(); ++i) info.layer_labels.push_back(network_.layer_label(i));
    for (auto* o : observers_) o->on_run_start(info);
    if (network_.quantizes() && !resume_)  // a resumed run has it from its start
        emit_event({0, 0.0, "gemm_precisions", "trainer", to_json(network_.precision_plan())});
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: the run's part

void Trainer::restore_run(Run& run) {
    const ResumePoint& r = *resume_;
    run.restore(r.sums);
    run.step = r.step;
    run.next_epoch = r.epoch;
    run.next_batch = r.batch;
    run.wall_offset = r.wall_seconds;
    run.last_checkpoint_step = r.step;
    run.last_checkpoint_wall = r.wall_seconds;
}

// At the boundary before step run.step + 1, which is batch `batch` of `epoch`.
bool Trainer::checkpoint_point(Run& run, int64_t epoch, int64_t batch) {
    const bool interrupt = checkpoint_requested_;
    if (!interrupt && !checkpoint_due(run)) return false;
    collect(run, true);
    if (!run.checkpoints) {  // only a request gets here: it stops the run without one
        announce_no_checkpoints(run);
        stop_ = true;
        return true;
    }
    // A live change waiting for the next step lands now, as that step would apply it, so the
    // checkpoint holds it.
    apply_live_changes(run, run.step + 1);
    hand_checkpoint(run, epoch, batch);
    if (!interrupt) return false;
    run.interrupted = true;
    emit_event({run.step, run.seconds(), "interrupted", "signal", {{"checkpoint_step", run.step}}});
    return true;
}

void Trainer::announce_no_checkpoints(Run& run) {
    emit_event({run.step,
                run.seconds(),
                "checkpoints_unavailable",
                "trainer",
                {{"engine", run.engine->description()}}});
}

bool Trainer::checkpoint_due(const Run& run) const {
    if (!run.checkpoints || run.step == run.last_checkpoint_step) return false;
    const CheckpointPolicy& p = checkpoint_policy_;
    return (p.every_steps > 0 && run.step % p.every_steps == 0) ||
           (p.every_seconds > 0 && run.seconds() - run.last_checkpoint_wall >= p.every_seconds);
}

void Trainer::hand_checkpoint(Run& run, int64_t epoch, int64_t batch) {
    const TrainingCheckpoint checkpoint = take_checkpoint(run, epoch, batch);
    run.last_checkpoint_step = checkpoint.step;
    run.last_checkpoint_wall = checkpoint.wall_seconds;
    for (auto* o : observers_) o->on_checkpoint(checkpoint);
}

// A run that ends FINISHED or STOPPED with checkpoints on hands over its final state.
void Trainer::final_checkpoint(Run& run) {
    const bool wanted =
        checkpoint_policy_.every_steps > 0 || checkpoint_policy_.every_seconds > 0 || checkpoint_requested_;
    if (wanted && run.checkpoints && !run.interrupted) hand_checkpoint(run, run.next_epoch, run.next_batch);
}

// Every step launched has been narrated (the caller collected).
TrainingCheckpoint Trainer::take_checkpoint(Run& run, int64_t epoch, int64_t batch) {
    run.engine->download_weights();
    CheckpointState s;
    s.config = to_json(config_);
    s.network = network_.to_json();
    s.train_samples = data_.train_size();
    s.lr_scale = lr_scale_;
    for (const Parameter* p : network_.parameters()) {
        s.values.push_back(values_of(p->value));
        s.copies.push_back(values_of(p->compute));
    }
    for (const Tensor* b : network_.buffers()) s.buffers.push_back(values_of(*b));
    s.engine = run.engine->save_state();
    s.scaler = scaler_.save_state();
    for (size_t i = 0; i < network_.size(); ++i)
        for (size_t g = 0; g < network_.gemms(i).size(); ++g)
            if (const GemmQuantizers* q = network_.quantizers(i, g))
                for (size_t slot = 0; slot < q->slot_count(); ++slot)
                    s.quantizers.push_back({i, g, slot, q->slot(slot).save_state()});
    s.sums = run.sums();
    s.data_digest = data_digest();
    return {run.step, epoch, batch, run.seconds(), encode_checkpoint_state(s), {}};
}

bool Trainer::pause_point(Run& run) {
    const bool held = take_hold(run.step);
    if (!paused_) return true;
    collect(run, true);
    emit_event({run.step, run.seconds(), "paused", held ? "hold" : "user", {}});
    wait_while_paused();
    emit_event({run.step, run.seconds(), "resumed", "user", {}});
    return !stop_;
}

void Trainer::train_step(Run& run, int64_t epoch, int64_t batch) {
    InFlight step;
    step.step = ++run.step;
    step.epoch = epoch;
    step.offset = batch * config_.batch_size;
    step.n = std::min(config_.batch_size, run.batches.samples() - step.offset);
    step.statistics = config_.stats_every > 0 && (step.step % config_.stats_every == 0 || step.step == 1);
    apply_live_changes(run, step.step);
    // One statistics step's probe at a time: wait only while the last one's counts are still on
    // their way (a device engine runs ahead of the host; its stream orders the weights).
    if (step.statistics && run.probe) collect(run, true);
    run.in_flight.push_back(step);
    launch(run, run.in_flight.back());
    if (scaler_.config().on_overflow != OverflowAction::Retry) {
        collect(run, false);
        return;
    }
    // A retry needs the verdict before the next batch, and hands the engine the host's scaler.
    while (!collect(run, true)) {
        run.engine->set_scaler(scaler_.config(), scaler_);
        launch(run, run.in_flight.back());
    }
    run.engine->set_scaler(scaler_.config(), scaler_);
}

// A live change lands on a step boundary the host and the engine agree on: the host catches up
// with every step in flight, applies the changes in request order, says them, and hands the
// engine its scaler.
void Trainer::apply_live_changes(Run& run, int64_t step) {
    const std::vector<LiveChange> changes = live_changes_.take();
    if (changes.empty()) return;
    collect(run, true);
    for (const LiveChange& change : changes) apply_live_change(change, step, run.seconds());
    run.engine->set_scaler(scaler_.config(), scaler_);
    if (policy_.scaled()) run.engine->set_recipe(config_.effective_recipe());
}

// One checked change (LiveChanges::request checked it against this run's policy).
void Trainer::apply_live_change(const LiveChange& change, int64_t step, double wall) {
    std::visit(
        [&](const auto& c) {
            using C = std::remove_cvref_t<decltype(c)>;
            if constexpr (std::is_same_v<C, LossScalerConfig>) {
                scaler_.apply_config(step, c);
            } else if constexpr (std::is_same_v<C, LossScaleChange>) {
                scaler_.apply_user_scale(step, c.scale);
            } else if constexpr (std::is_same_v<C, LearningRateChange>) {
                const float base = schedule_->lr_at(scaler_.optimizer_iteration());
                const float old_lr = base * lr_scale_;
                lr_scale_ = c.lr / base;
                emit_event({step, wall, "lr_changed", "user", {{"from", old_lr}, {"to", c.lr}}});
            } else {
                static_assert(std::is_same_v<C, ScaledRecipeConfig>,
                              "a live change the trainer cannot apply");
                const ScaledRecipeConfig before = config_.effective_recipe();
                config_.recipe = c;
                const nlohmann::json changes = scaled_recipe_changes(before, config_.effective_recipe());
                if (changes.empty()) return;
                network_.set_recipe_config(config_.effective_recipe());
                emit_event({step, wall, "recipe_changed", "user", changes});
            }
        },
        change);
    drain_scaler_events(wall);  // the scaler's own events of the change, in request order
}

void Trainer::launch(Run& run, InFlight& step) {
    StepLaunch attempt{step.step, step.offset, step.n, lr_scale_, nullptr};
    // Every engine takes the statistics from its own backward pass, into a probe made for each
    // attempt's scale.
    if (step.statistics) {
        run.probe.emplace(network_, step.step, run.stats_format, scaler_.scale());
        attempt.probe = &*run.probe;
    }
    run.engine->launch(attempt);
}

bool Trainer::collect(Run& run, bool wait) {
    run.arrived.clear();
    run.engine->collect(run.arrived, wait);
    bool decided = true;
    for (const StepResult& record : run.arrived) decided = narrate(run, record);
    return decided;
}

bool Trainer::narrate(Run& run, const StepResult& record) {
    if (run.in_flight.empty() || run.in_flight.front().step != record.step)
        throw Error("step record for step " + std::to_string(record.step) + " arrived out of order");
    InFlight& step = run.in_flight.front();
    const StepOutcome outcome = replay(record);
    step.seconds += record.seconds;
    if (outcome.action == StepAction::Retry) {
        ++step.retries;
        return false;
    }
    StepMetrics m;
    m.step = record.step;
    m.epoch = step.epoch;
    m.retries = step.retries;
    m.lr = record.lr;  // the record's rate includes the live factor
    m.grad_norm = record.grad_norm;
    if (outcome.action != StepAction::Apply) {
        m.skipped = true;
        m.skip_reason = outcome.reason;
        m.first_nonfinite_layer = outcome.first_nonfinite_layer;
    }
    m.step_seconds = step.seconds;
    const int64_t n = step.n;
    run.in_flight.pop_front();
    finish_step(run, m, outcome, record, n);
    return true;
}

// The engine decided; the run's scaler takes the same verdict and says it to the observers.
StepOutcome Trainer::replay(const StepResult& record) {
    std::string first_bad;
    if (record.nonfinite) {
        const int p = record.first_nonfinite_parameter;
        first_bad = p >= 0 ? network_.parameter_owner(static_cast<size_t>(p)) + " " +
                                 network_.parameters().at(static_cast<size_t>(p))->name
                           : std::string("loss");
    }
    const StepOutcome outcome = scaler_.on_step_result(record.step, record.nonfinite, first_bad);
    const bool host_applies = outcome.action == StepAction::Apply;
    if (host_applies != record.applied || outcome.scale_used != record.scale_used)
        throw Error("the step engine's loss scaler disagreed with the host's at step " +
                    std::to_string(record.step) + ": engine " + (record.applied ? "applied" : "skipped") +
                    " at scale " + std::to_string(record.scale_used) + ", host " + to_string(outcome.action) +
                    " at scale " + std::to_string(outcome.scale_used));
    return outcome;
}

// What every step reports, whichever engine ran it: summary, running means, observers.
void Trainer::finish_step(Run& run, StepMetrics& m, const StepOutcome& outcome, const StepResult& record,
                          int64_t n) {
    RunSummary& summary = run.summary;
    summary.train_seconds += m.step_seconds;
    m.wall_time = run.seconds();
    m.loss = record.loss;
    // Per-position targets count a prediction per token: n samples of T positions.
    const int64_t predictions = n * target_rows_per_sample(data_.target_kind(), data_.train_y);
    m.accuracy = data_.is_classification()
                     ? static_cast<double>(record.correct) / static_cast<double>(predictions)
                     : 0;
    m.samples_per_second = static_cast<double>(n) / std::max(m.step_seconds, 1e-9);
    if (data_.target_kind() == TargetKind::ClassPerPosition)
        m.tokens_per_second = static_cast<double>(predictions) / std::max(m.step_seconds, 1e-9);
    m.loss_scale = outcome.scale_used;
    m.overflow_count = scaler_.overflow_count();
    m.skipped_count = scaler_.skipped_steps();
    summary.min_scale = std::min(summary.min_scale, outcome.next_scale);
    summary.max_scale = std::max(summary.max_scale, outcome.next_scale);
    summary.steps = m.step;
    if (std::isfinite(record.loss)) {
        run.since_eval_loss += record.loss;
        run.epoch_loss += record.loss;
    }
    run.since_eval_correct += static_cast<double>(record.correct);
    ++run.since_eval_steps;
    ++run.epoch_steps;
    run.since_eval_samples += n;
    run.trained_samples += n;
    for (auto* o : observers_) o->on_step(m);
    if (run.probe && run.probe->step() == m.step) {
        for (auto& r : run.probe->records) {
            if (r.kind == GradientKind::Activation) {
                run.underflow_sum += r.stats.underflow_fraction;
                ++run.underflow_count;
            }
            for (auto* o : observers_) o->on_gradient_stats(r);
        }
        run.probe.reset();
    }
    for (const auto& s : record.scaling) {
        const ScalingStatsRecord r{m.step, s.layer, network_.gemm_label(s.layer, s.gemm), s.stats};
        for (auto* o : observers_) o->on_scaling_stats(r);
    }
    if (!record.stability.empty()) {
        StabilityRecord r{m.step, record.stability, {}};
        for (const auto& b : r.indicators.blocks) r.block_labels.push_back(network_.layer_label(b.layer));
        for (auto* o : observers_) o->on_stability(r);
    }
    drain_scaler_events(m.wall_time);
}

void Trainer::evaluate_now(Run& run, int64_t epoch) {
    collect(run, true);
    const auto r = run.engine->evaluate();
    EvalMetrics m;
    m.step = run.step;
    m.epoch = epoch;
    m.wall_time = run.seconds();
    m.test_loss = r.loss;
    const int64_t test_predictions =
        data_.test_size() * target_rows_per_sample(data_.target_kind(), data_.test_y);
    m.test_accuracy =
        test_predictions ? static_cast<double>(r.correct) / static_cast<double>(test_predictions) : 0;
    if (data_.target_kind() == TargetKind::ClassPerPosition) m.test_bits_per_token = r.loss / std::log(2.0);
    m.train_loss = run.since_eval_steps ? run.since_eval_loss / static_cast<double>(run.since_eval_steps) : 0;
    const int64_t train_predictions =
        run.since_eval_samples * target_rows_per_sample(data_.target_kind(), data_.train_y);
    m.train_accuracy =
        train_predictions ? run.since_eval_correct / static_cast<double>(train_predictions) : 0;
    run.since_eval_loss = run.since_eval_correct = 0;
    run.since_eval_steps = run.since_eval_samples = 0;
    run.summary.test_loss = m.test_loss;
    run.summary.test_accuracy = m.test_accuracy;
    run.summary.best_test_accuracy = std::max(run.summary.best_test_accuracy, m.test_accuracy);
    for (auto* o : observers_) o->on_eval(m);
    write_text_sample(run.step, m.wall_time);
}

void Trainer::end_epoch(Run& run, int64_t epoch, int64_t batches_done, bool evaluated) {
    collect(run, true);
    const bool complete = batches_done >= run.batches.batches_per_epoch();
    run.next_epoch = complete ? epoch + 1 : epoch;
    run.next_batch = complete ? 0 : batches_done;
    if (run.epoch_steps) run.summary.train_loss = run.epoch_loss / static_cast<double>(run.epoch_steps);
    if (stop_ || run.interrupted) {
        run.finished = true;
        return;
    }
    if (complete) run.summary.epochs_completed = epoch + 1;
    // Every epoch ends with an evaluation unless eval_every sets the rhythm; the last one always
    // does, so the summary holds the final weights' accuracy.
    const bool last = config_.max_steps > 0 ? run.step >= config_.max_steps : epoch + 1 == config_.epochs;
    if (!evaluated && (config_.eval_every == 0 || last)) evaluate_now(run, epoch);
    run.finished = config_.max_steps > 0 && run.step >= config_.max_steps;
}

void Trainer::close_summary(Run& run) {
    RunSummary& summary = run.summary;
    summary.skipped_steps = scaler_.skipped_steps();
    summary.overflow_count = scaler_.overflow_count();
    summary.wall_seconds = run.seconds();
    summary.samples_per_second =
        summary.train_seconds > 0 ? static_cast<double>(run.trained_samples) / summary.train_seconds : 0;
    summary.mean_activation_underflow =
        run.underflow_count ? run.underflow_sum / static_cast<double>(run.underflow_count) : 0;
}

}  // namespace mpwb
