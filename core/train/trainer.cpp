// The step loop.
#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/data/batcher.h"
#include "core/optim/grad_clip.h"
#include "core/train/device_step.h"

namespace mpwb {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Collects exponent histograms for a statistics step.
class StatsProbe final : public GradientProbe {
public:
    StatsProbe(const Network& net, int64_t step, Format format, float scale) : net_(net), step_(step), format_(format), scale_(scale) {}
    void observe(size_t layer, GradientKind kind, const std::string& parameter, const float* values,
                 int64_t count) override {
        GradientStatsRecord r;
        r.step = step_;
        r.layer = layer;
        r.layer_label = net_.layer_label(layer);
        r.kind = kind;
        r.parameter = parameter;
        r.histogram = ExponentHistogram::compute(values, static_cast<size_t>(count));
        r.format = format_;
        r.stats = range_stats(r.histogram, format_);
        r.loss_scale = scale_;
        records.push_back(std::move(r));
    }
    std::vector<GradientStatsRecord> records;

private:
    const Network& net_;
    int64_t step_;
    Format format_;
    float scale_;
};

}  // namespace

const char* run_status_name(RunStatus status) {
    switch (status) {
        case RunStatus::Running: return "RUNNING";
        case RunStatus::Finished: return "FINISHED";
        case RunStatus::Stopped: return "STOPPED";
        case RunStatus::Failed: return "FAILED";
        case RunStatus::Interrupted: return "INTERRUPTED";
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
    : network_(network), data_(data), config_(std::move(config)), backend_(backend), policy_(config_.policy()),
      scaler_(config_.effective_scaler()) {
    config_.validate();
    if (data_.train_size() == 0) throw DataError("dataset '" + data_.name + "' has no training samples");
    // Sized for the largest batch a step or an evaluation will run, so a network too large for
    // it is refused here with the numbers, before anything is allocated.
    const int64_t eval_batch = std::min(config_.eval_batch, std::max<int64_t>(data_.test_size(), 1));
    network_.build(data_.sample_shape, std::max(std::min(config_.batch_size, data_.train_size()), eval_batch));
    if (data_.is_classification()) {
        if (network_.loss() != "cross_entropy")
            throw NetworkError("dataset '" + data_.name + "' is a classification set; the network's loss must be cross_entropy");
        if (network_.output_shape() != Shape{data_.num_classes})
            throw NetworkError("the network's output " + shape_to_string(network_.output_shape()) + " does not match the " +
                               std::to_string(data_.num_classes) + " classes of '" + data_.name +
                               "'; the last Linear layer needs \"out\": " + std::to_string(data_.num_classes));
    } else if (network_.output_shape() != Shape{data_.target_width()}) {
        throw NetworkError("the network's output " + shape_to_string(network_.output_shape()) + " does not match the " +
                           std::to_string(data_.target_width()) + " regression targets of '" + data_.name + "'");
    }
    network_.init(config_.seed);
    network_.prepare_weights(policy_);
    optimizer_ = make_optimizer(config_.optimizer);
    ScheduleConfig schedule = config_.schedule;
    const int64_t total = config_.max_steps > 0 ? config_.max_steps : config_.epochs * steps_per_epoch();
    if (schedule.kind == "cosine" && schedule.total_steps == 0) schedule.total_steps = total;
    schedule_ = std::make_unique<LrSchedule>(schedule, config_.lr);
}

Trainer::~Trainer() = default;

int64_t Trainer::steps_per_epoch() const {
    return (data_.train_size() + config_.batch_size - 1) / config_.batch_size;
}

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

void Trainer::request_scaler_config(const LossScalerConfig& config) { scaler_.request_config(config); }
void Trainer::request_loss_scale(double scale) { scaler_.request_scale(scale); }

void Trainer::request_learning_rate(float lr) {
    if (!(lr > 0.0f) || !std::isfinite(lr))
        throw ConfigError("learning rate must be positive and finite, gets " + std::to_string(lr));
    std::lock_guard lock(request_mutex_);
    pending_lr_ = lr;
}

void Trainer::wait_while_paused() {
    std::unique_lock lock(pause_mutex_);
    pause_cv_.wait(lock, [this] { return !paused_ || stop_; });
}

void Trainer::emit_event(const TrainingEvent& event) {
    for (auto* o : observers_) o->on_event(event);
}

void Trainer::drain_scaler_events(double wall) {
    for (auto& e : scaler_.take_events()) emit_event({e.step, wall, e.kind, e.source, e.detail});
}

Backend::LossResult Trainer::evaluate() {
    LayerContext ctx{backend_, policy_.gemm_operands, false, nullptr};
    BatchIterator batches(data_.test_x, data_.test_y, config_.eval_batch, 0, false, false);
    batches.start_epoch(0);
    Tensor bx, by;
    Backend::LossResult total;
    int64_t seen = 0;
    while (batches.next(bx, by)) {
        const Tensor& out = network_.forward(ctx, bx, policy_);
        const int64_t n = bx.dim(0);
        const auto r = data_.is_classification()
                           ? backend_.softmax_cross_entropy(out.data(), by.data(), nullptr, n, out.numel() / n, 1.0f)
                           : backend_.mse(out.data(), by.data(), nullptr, n, out.numel() / n, 1.0f);
        total.loss += r.loss * static_cast<double>(n);
        total.correct += r.correct;
        seen += n;
    }
    if (seen) total.loss /= static_cast<double>(seen);
    return total;
}

RunSummary Trainer::run() {
    set_thread_count(config_.threads);
    const auto t0 = Clock::now();
    RunSummary summary;
    summary.min_scale = summary.max_scale = scaler_.scale();

    RunStartInfo info;
    info.config = to_json(config_);
    info.network = network_.to_json();
    info.dataset = data_.name;
    info.precision = policy_.name();
    info.backend = backend_.name();
    info.device = backend_.device_name();
    info.parameters = network_.parameter_count();
    info.steps_per_epoch = steps_per_epoch();
    info.total_steps = config_.max_steps > 0 ? config_.max_steps : config_.epochs * steps_per_epoch();
    info.train_samples = data_.train_size();
    info.test_samples = data_.test_size();
    for (size_t i = 0; i < network_.size(); ++i) info.layer_labels.push_back(network_.layer_label(i));
    for (auto* o : observers_) o->on_run_start(info);

    const Format stats_format = policy_.reduced() ? policy_.activations : Format::FP16;
    const auto params = network_.parameters();
    Rng dropout_rng(config_.seed ^ 0xD50Full);
    LayerContext ctx{backend_, policy_.gemm_operands, true, &dropout_rng};
    BatchIterator batches(data_.train_x, data_.train_y, config_.batch_size, config_.seed, true, false);
    Tensor bx, by, dout;
    int64_t step = 0;
    double since_eval_loss = 0, since_eval_correct = 0;
    int64_t since_eval_steps = 0, since_eval_samples = 0;
    double underflow_sum = 0;
    int64_t underflow_count = 0;
    double epoch_loss = 0;
    int64_t epoch_steps = 0;
    int64_t trained_samples = 0;

    std::unique_ptr<DeviceStep> device;  // set when the backend keeps steps on its device
    auto run_eval = [&](int64_t epoch) {
        const auto r = device ? device->evaluate(data_) : evaluate();
        EvalMetrics m;
        m.step = step;
        m.epoch = epoch;
        m.wall_time = seconds_since(t0);
        m.test_loss = r.loss;
        m.test_accuracy = data_.test_size() ? static_cast<double>(r.correct) / static_cast<double>(data_.test_size()) : 0;
        m.train_loss = since_eval_steps ? since_eval_loss / static_cast<double>(since_eval_steps) : 0;
        m.train_accuracy = since_eval_samples ? since_eval_correct / static_cast<double>(since_eval_samples) : 0;
        since_eval_loss = since_eval_correct = 0;
        since_eval_steps = since_eval_samples = 0;
        summary.test_loss = m.test_loss;
        summary.test_accuracy = m.test_accuracy;
        summary.best_test_accuracy = std::max(summary.best_test_accuracy, m.test_accuracy);
        for (auto* o : observers_) o->on_eval(m);
    };

    auto apply_lr_request = [&](int64_t at_step) {
        std::lock_guard lock(request_mutex_);
        if (!pending_lr_) return;
        const float base = schedule_->lr_at(scaler_.optimizer_iteration());
        const float old_lr = base * lr_scale_;
        lr_scale_ = *pending_lr_ / base;
        emit_event({at_step, seconds_since(t0), "lr_changed", "user", {{"from", old_lr}, {"to", *pending_lr_}}});
        pending_lr_.reset();
    };
    auto lr_request_pending = [&] {
        std::lock_guard lock(request_mutex_);
        return pending_lr_.has_value();
    };

    // What every step reports, whichever path computed it: summary, running means, observers.
    auto finish_step = [&](StepMetrics& m, const StepOutcome& outcome, const Backend::LossResult& loss, int64_t n,
                           std::vector<GradientStatsRecord>* stats) {
        summary.train_seconds += m.step_seconds;
        m.wall_time = seconds_since(t0);
        m.loss = loss.loss;
        m.accuracy = data_.is_classification() ? static_cast<double>(loss.correct) / static_cast<double>(n) : 0;
        m.samples_per_second = static_cast<double>(n) / std::max(m.step_seconds, 1e-9);
        m.loss_scale = outcome.scale_used;
        m.overflow_count = scaler_.overflow_count();
        m.skipped_count = scaler_.skipped_steps();
        summary.min_scale = std::min(summary.min_scale, outcome.next_scale);
        summary.max_scale = std::max(summary.max_scale, outcome.next_scale);
        summary.steps = m.step;
        if (std::isfinite(loss.loss)) {
            since_eval_loss += loss.loss;
            epoch_loss += loss.loss;
        }
        since_eval_correct += static_cast<double>(loss.correct);
        ++since_eval_steps;
        ++epoch_steps;
        since_eval_samples += n;
        trained_samples += n;
        for (auto* o : observers_) o->on_step(m);
        if (stats) {
            for (auto& r : *stats) {
                if (r.kind == GradientKind::Activation) {
                    underflow_sum += r.stats.underflow_fraction;
                    ++underflow_count;
                }
                for (auto* o : observers_) o->on_gradient_stats(r);
            }
        }
        drain_scaler_events(m.wall_time);
    };

    // The device path: steps are launched ahead and narrated when their records arrive.
    struct Launched {
        int64_t step, offset, n;
        int retries = 0;
    };
    std::deque<Launched> in_flight;
    std::vector<DeviceStepResult> arrived;
    // A statistics step's histograms, taken by the CPU engine on the step's batch and weights.
    std::optional<std::pair<int64_t, std::vector<GradientStatsRecord>>> host_stats;
    auto host_gradient_stats = [&](int64_t at_step, int64_t offset, int64_t n) {
        device->download(network_);
        const auto order = std::span<const int64_t>(batches.order()).subspan(static_cast<size_t>(offset), static_cast<size_t>(n));
        gather_rows(data_.train_x, order, bx);
        gather_rows(data_.train_y, order, by);
        LayerContext host_ctx{backend_, policy_.gemm_operands, true, &dropout_rng};
        const float scale = scaler_.scale();
        const Tensor& out = network_.forward(host_ctx, bx, policy_);
        dout.resize(out.shape());
        const int64_t k = out.numel() / n;
        if (data_.is_classification())
            backend_.softmax_cross_entropy(out.data(), by.data(), dout.data(), n, k, scale);
        else
            backend_.mse(out.data(), by.data(), dout.data(), n, k, scale);
        StatsProbe probe(network_, at_step, stats_format, scale);
        network_.backward(host_ctx, dout, policy_, &probe);
        host_stats.emplace(at_step, std::move(probe.records));
    };
    const bool device_retries = scaler_.config().on_overflow == OverflowAction::Retry;
    // Narrates every record that has arrived (all launched ones when wait). Returns false when
    // the last one asked for a retry of its batch, which the caller relaunches.
    auto drain_device = [&](bool wait, int64_t epoch) -> bool {
        arrived.clear();
        device->collect(arrived, wait);
        bool retry = false;
        for (const auto& r : arrived) {
            if (in_flight.empty() || in_flight.front().step != r.step)
                throw Error("device step record for step " + std::to_string(r.step) + " arrived out of order");
            Launched& l = in_flight.front();
            std::string first_bad;
            if (r.nonfinite)
                first_bad = r.first_nonfinite_parameter >= 0
                                ? network_.parameter_owner(static_cast<size_t>(r.first_nonfinite_parameter)) + " " +
                                      params.at(static_cast<size_t>(r.first_nonfinite_parameter))->name
                                : std::string("loss");
            const StepOutcome outcome = scaler_.on_step_result(r.step, r.nonfinite, first_bad);
            const bool host_applies = outcome.action == StepAction::Apply;
            if (host_applies != r.applied || outcome.scale_used != r.scale_used)
                throw Error("the device's loss scaler disagreed with the host's at step " + std::to_string(r.step) +
                            ": device " + (r.applied ? "applied" : "skipped") + " at scale " +
                            std::to_string(r.scale_used) + ", host " + to_string(outcome.action) + " at scale " +
                            std::to_string(outcome.scale_used));
            if (outcome.action == StepAction::Retry) {
                ++l.retries;
                retry = true;
                continue;
            }
            StepMetrics m;
            m.step = r.step;
            m.epoch = epoch;
            m.retries = l.retries;
            m.lr = r.lr;  // the record's rate includes the live factor
            m.grad_norm = r.grad_norm;
            if (!host_applies) {
                m.skipped = true;
                m.skip_reason = outcome.reason;
                m.first_nonfinite_layer = outcome.first_nonfinite_layer;
            }
            m.step_seconds = r.seconds;
            std::vector<GradientStatsRecord>* stats = nullptr;
            if (host_stats && host_stats->first == r.step) stats = &host_stats->second;
            const int64_t n = l.n;
            in_flight.pop_front();
            finish_step(m, outcome, {r.loss, r.correct}, n, stats);
            if (stats) host_stats.reset();
        }
        return !retry;
    };
    // One epoch on the device; returns whether it ended with an evaluation.
    auto device_epoch = [&](int64_t epoch) -> bool {
        device->set_epoch_order(batches.order());
        const int64_t total = batches.samples();
        const int64_t per_epoch = batches.batches_per_epoch();
        bool evaluated = false;
        for (int64_t b = 0; b < per_epoch && !stop_ && (config_.max_steps == 0 || step < config_.max_steps); ++b) {
            const bool held = take_hold(step);
            if (paused_) {
                drain_device(true, epoch);
                emit_event({step, seconds_since(t0), "paused", held ? "hold" : "user", {}});
                wait_while_paused();
                emit_event({step, seconds_since(t0), "resumed", "user", {}});
                if (stop_) break;
            }
            ++step;
            const int64_t offset = b * config_.batch_size;
            const int64_t n = std::min(config_.batch_size, total - offset);
            // A live change lands on a step boundary the host and the device agree on: the host
            // catches up with every step in flight, applies it, and hands the device its scaler.
            if (scaler_.has_pending_requests() || lr_request_pending()) {
                drain_device(true, epoch);
                scaler_.begin_step(step);
                apply_lr_request(step);
                device->set_scaler(scaler_.config(), scaler_);
            }
            const bool stats_step = config_.stats_every > 0 && (step % config_.stats_every == 0 || step == 1);
            if (stats_step) {
                drain_device(true, epoch);
                host_gradient_stats(step, offset, n);
            }
            in_flight.push_back({step, offset, n});
            device->launch(step, offset, n, lr_scale_);
            // Retries need the verdict before the next batch.
            if (device_retries) {
                while (!drain_device(true, epoch)) {
                    device->set_scaler(scaler_.config(), scaler_);
                    device->launch(step, offset, n, lr_scale_);
                }
                if (device_retries) device->set_scaler(scaler_.config(), scaler_);
            } else {
                drain_device(false, epoch);
            }
            evaluated = false;
            if (config_.eval_every > 0 && step % config_.eval_every == 0) {
                drain_device(true, epoch);
                run_eval(epoch);
                evaluated = true;
            }
        }
        drain_device(true, epoch);
        return evaluated;
    };

    try {
        if (DeviceStepFactory* factory = backend_.device_steps()) {
            DeviceStepConfig dc;
            dc.policy = policy_;
            dc.optimizer = config_.optimizer;
            dc.clip_norm = config_.clip_norm;
            // One entry past the last step: the schedule's clock can run one ahead on a skip.
            for (int64_t i = 0; i <= info.total_steps; ++i) dc.lr_by_iteration.push_back(schedule_->lr_at(i));
            dc.batch_size = config_.batch_size;
            dc.eval_batch = config_.eval_batch;
            dc.seed = config_.seed;
            dc.use_graphs = config_.device_graphs;
            device = factory->make_device_step(network_, dc);
            device->upload(data_, network_);
            device->set_scaler(scaler_.config(), scaler_);
        }
        for (int64_t epoch = 0; epoch < config_.epochs || config_.max_steps > 0; ++epoch) {
            batches.start_epoch(epoch);
            epoch_loss = 0;
            epoch_steps = 0;
            bool evaluated_at_end = false;
            const int64_t steps_before_epoch = step;
            if (device) evaluated_at_end = device_epoch(epoch);
            while (!device && !stop_ && (config_.max_steps == 0 || step < config_.max_steps)) {
                const bool held = take_hold(step);
                if (paused_) {
                    emit_event({step, seconds_since(t0), "paused", held ? "hold" : "user", {}});
                    wait_while_paused();
                    emit_event({step, seconds_since(t0), "resumed", "user", {}});
                    if (stop_) break;
                }
                if (!batches.next(bx, by)) break;
                ++step;
                const auto step_start = Clock::now();
                scaler_.begin_step(step);
                apply_lr_request(step);
                const int64_t n = bx.dim(0);
                StepMetrics m;
                m.step = step;
                m.epoch = epoch;
                StepOutcome outcome;
                Backend::LossResult loss;
                const bool stats_step = config_.stats_every > 0 && (step % config_.stats_every == 0 || step == 1);
                std::optional<StatsProbe> probe;
                for (;;) {
                    const float scale = scaler_.scale();
                    const Tensor& out = network_.forward(ctx, bx, policy_);
                    dout.resize(out.shape());
                    const int64_t k = out.numel() / n;
                    loss = data_.is_classification()
                               ? backend_.softmax_cross_entropy(out.data(), by.data(), dout.data(), n, k, scale)
                               : backend_.mse(out.data(), by.data(), dout.data(), n, k, scale);
                    if (stats_step) probe.emplace(network_, step, stats_format, scale);
                    network_.backward(ctx, dout, policy_, probe ? &*probe : nullptr);
                    // Unscale from the loss backwards so the first non-finite layer is the one
                    // nearest the loss, where an overflow starts.
                    bool finite = true;
                    std::string first_bad;
                    const float inverse = 1.0f / scale;
                    for (size_t p = params.size(); p-- > 0;) {
                        Tensor& g = params[p]->grad;
                        if (!backend_.scale_and_check_finite(inverse, g.data(), g.numel()) && finite) {
                            finite = false;
                            first_bad = network_.parameter_owner(p) + " " + params[p]->name;
                        }
                    }
                    if (!std::isfinite(loss.loss) && finite) {
                        finite = false;
                        first_bad = "loss";
                    }
                    outcome = scaler_.on_step_result(step, !finite, first_bad);
                    if (outcome.action != StepAction::Retry) break;
                    ++m.retries;
                }
                if (outcome.action == StepAction::Apply) {
                    if (config_.clip_norm > 0)
                        m.grad_norm = clip_grad_norm(params, config_.clip_norm);
                    const float lr = schedule_->lr_at(outcome.optimizer_iteration - 1) * lr_scale_;
                    m.lr = lr;
                    optimizer_->step(params, lr, {policy_.master, policy_.weight_copy});
                } else {
                    m.skipped = true;
                    m.skip_reason = outcome.reason;
                    m.first_nonfinite_layer = outcome.first_nonfinite_layer;
                    m.lr = schedule_->lr_at(std::max<int64_t>(0, outcome.optimizer_iteration - 1)) * lr_scale_;
                }
                m.step_seconds = seconds_since(step_start);
                finish_step(m, outcome, loss, n, probe ? &probe->records : nullptr);
                evaluated_at_end = false;
                if (config_.eval_every > 0 && step % config_.eval_every == 0) {
                    run_eval(epoch);
                    evaluated_at_end = true;
                }
            }
            summary.train_loss = epoch_steps ? epoch_loss / static_cast<double>(epoch_steps) : summary.train_loss;
            if (stop_) break;
            const int64_t batches_done = device ? step - steps_before_epoch : batches.batch_index();
            if (batches_done >= batches.batches_per_epoch()) summary.epochs_completed = epoch + 1;
            // Every epoch ends with an evaluation unless eval_every sets the rhythm; the last
            // one always does, so the summary holds the final weights' accuracy.
            const bool last = config_.max_steps > 0 ? step >= config_.max_steps : epoch + 1 == config_.epochs;
            if (!evaluated_at_end && (config_.eval_every == 0 || last)) run_eval(epoch);
            if (config_.max_steps > 0 && step >= config_.max_steps) break;
        }
        if (device) device->download(network_);
        summary.status = stop_ ? RunStatus::Stopped : RunStatus::Finished;
        if (stop_) emit_event({step, seconds_since(t0), "stopped", "user", {}});
    } catch (const std::exception& e) {
        summary.status = RunStatus::Failed;
        summary.error = e.what();
        emit_event({step, seconds_since(t0), "failed", "trainer", {{"error", e.what()}}});
    }
    summary.skipped_steps = scaler_.skipped_steps();
    summary.overflow_count = scaler_.overflow_count();
    summary.wall_seconds = seconds_since(t0);
    summary.samples_per_second =
        summary.train_seconds > 0 ? static_cast<double>(trained_samples) / summary.train_seconds : 0;
    summary.mean_activation_underflow = underflow_count ? underflow_sum / static_cast<double>(underflow_count) : 0;
    for (auto* o : observers_) o->on_run_end(summary);
    return summary;
}

}  // namespace mpwb
