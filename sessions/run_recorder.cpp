// RunRecorder: training callbacks turned into run-store rows (see run_recorder.h for what is
// stored under which key). Everything after on_run_start only appends to the RunWriter buffer.
#include "sessions/run_recorder.h"
#include "sessions/run_vocabulary.h"

#include "sessions/metric_keys.h"
#include "sessions/stability_series.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <thread>

namespace mpwb {

namespace {

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                auto v = line.substr(colon + 1);
                const auto b = v.find_first_not_of(" \t");
                return b == std::string::npos ? std::string() : v.substr(b);
            }
        }
    }
    return "unknown CPU";
}

std::string compiler_version() {
#if defined(__clang__)
    return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    return std::string("gcc ") + __VERSION__;
#else
    return "unknown";
#endif
}

std::string kind_name(const GradientStatsRecord& r) {
    if (r.kind == GradientKind::Activation) return metric_key::activation_grad;
    return metric_key::weight_grad_prefix + r.parameter;
}

}  // namespace

nlohmann::json RunRecorder::versions() {
    return {
        {"compiler", compiler_version()},
        {"sqlite", sqlite3_libversion()},
        {"json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                     std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                     std::to_string(NLOHMANN_JSON_VERSION_PATCH)},
        {"machine",
         {{"hostname", host_name()}, {"cpu", cpu_model()}, {"cores", std::thread::hardware_concurrency()}}}};
}

std::string RunRecorder::machine_description() {
    return host_name() + " / " + cpu_model() + " (" + std::to_string(std::thread::hardware_concurrency()) +
           " cores)";
}

RunRecorder::RunRecorder(Options options) : options_(std::move(options)) {
    path_ = options_.db_path.empty() ? default_database_path() : options_.db_path;
    RunStore::Options so;
    so.busy_timeout_ms = options_.writer.busy_timeout_ms;
    store_ = std::make_unique<RunStore>(path_, so);
    // Opening only reads unless a migration was due; take the write lock once so that a file
    // another process keeps locked is reported now, not after the first epoch.
    { sqlite::Transaction probe(store_->db(), "checking that the database can be written"); }
    if (options_.group_id) {
        // Fail before training, not at on_run_start, when the group does not exist.
        bool found = false;
        for (const auto& g : store_->list_groups()) found = found || g.id == *options_.group_id;
        if (!found)
            throw StoreError(
                StoreError::Kind::NotFound,
                "comparison group " + std::to_string(*options_.group_id) + " does not exist in " + path_);
    }
}

RunRecorder::~RunRecorder() = default;

std::int64_t RunRecorder::create_group(const std::string& db_path, const std::string& name) {
    RunStore store(db_path.empty() ? default_database_path() : db_path);
    return store.create_group(name, {});
}

std::string RunRecorder::error() const {
    std::lock_guard lock(error_mu_);
    return error_;
}

std::uint64_t RunRecorder::pending_rows() const { return writer_ ? writer_->pending_rows() : 0; }

void RunRecorder::fail(const std::string& message) {
    {
        std::lock_guard lock(error_mu_);
        if (!error_.empty()) return;  // said once: the first failure is the cause
        error_ = message;
    }
    if (options_.on_failure) options_.on_failure(message);
}

void RunRecorder::report_stopped_writer(std::int64_t step) {
    if (writer_stop_reported_ || !writer_->has_stopped()) return;
    writer_stop_reported_ = true;
    const std::int64_t kept = writer_->committed_step();
    fail("recording of run " + std::to_string(run_id_) + " stopped at step " + std::to_string(step) + ": " +
         writer_->last_error().value_or("the store refused a write") + " (the database holds " +
         (kept >= 0 ? "the run up to step " + std::to_string(kept) : "none of its steps") + ")");
}

void RunRecorder::mark_cut_short() {
    try {
        store_->set_status(run_id_, RunStatus::Interrupted);
    } catch (const std::exception&) {
        // A full disk may refuse this too: the run stays RUNNING until this process ends, and
        // the next open of the store marks it INTERRUPTED all the same.
    }
}

std::int64_t RunRecorder::create_run(const RunStartInfo& info) {
    t0_ = store_now();
    RunInfo run;
    run.name = options_.name.empty() ? info.dataset + " " + info.precision : options_.name;
    run.config_json = info.config.dump();
    run.network_json = info.network.dump();
    run.dataset = info.dataset;
    run.precision = info.precision;
    run.backend = info.backend;
    run.device = info.device;
    nlohmann::json v = versions();
    v["openblas_core"] = info.blas_core;
    v["parameters"] = info.parameters;
    v["steps_per_epoch"] = info.steps_per_epoch;
    v["total_steps"] = info.total_steps;
    v["train_samples"] = info.train_samples;
    v["test_samples"] = info.test_samples;
    if (!info.vocabulary.is_null()) v[kRunVocabularyKey] = info.vocabulary;
    run.versions_json = v.dump();
    run.machine = machine_description();
    if (info.config.contains("seed") && info.config["seed"].is_number())
        run.seed = info.config["seed"].get<std::int64_t>();
    const std::int64_t id = store_->create_run(run);
    run_id_ = id;  // set now, so a failure below marks this half-made run FAILED
    for (const auto& [k, val] : options_.tags) store_->set_tag(id, k, val);
    if (!options_.note.empty()) store_->set_note(id, options_.note);
    if (options_.group_id) store_->add_to_group(*options_.group_id, {id});
    return id;
}

std::int64_t RunRecorder::reopen_run(const RunStartInfo& info) {
    if (options_.resume_run_id <= 0)
        throw StoreError(StoreError::Kind::Invalid,
                         "the trainer resumes from a checkpoint, but no run to continue was given");
    store_->reopen_for_resume(options_.resume_run_id, info.resumed_from_step);
    run_id_ = options_.resume_run_id;  // set now, so a failure below hands the run back INTERRUPTED
    // The trainer's wall times go on from the checkpoint's; so do the stored ones.
    const auto checkpoint = store_->latest_checkpoint(options_.resume_run_id);
    t0_ = store_now() - (checkpoint ? checkpoint->wall_seconds : 0.0);
    return options_.resume_run_id;
}

void RunRecorder::on_run_start(const RunStartInfo& info) {
    // The trainer does not expect observers to throw: a store failure here is reported through
    // error()/on_failure and training goes on unrecorded unless the caller stops it.
    const bool resumed = info.resumed_from_step > 0;
    try {
        const std::int64_t id = resumed ? reopen_run(info) : create_run(info);
        writer_ = std::make_unique<RunWriter>(path_, id, options_.writer);
        run_id_ = id;
        // A resumed run says so itself (the trainer's "resumed_from_checkpoint" event).
        if (!resumed)
            writer_->log_event(0, t0_, "run_start",
                               nlohmann::json{{"source", "trainer"},
                                              {"layers", info.layer_labels},
                                              {"parameters", info.parameters},
                                              {"total_steps", info.total_steps}}
                                   .dump());
    } catch (const std::exception& e) {
        writer_.reset();
        if (run_id_ != 0) {
            // A half-made (or half-reopened) run should not sit as RUNNING until this process exits.
            try {
                store_->set_status(run_id_, resumed ? RunStatus::Interrupted : RunStatus::Failed);
            } catch (const std::exception&) {}
        }
        run_id_ = 0;
        fail(std::string("cannot record the run in ") + path_ + ": " + e.what());
        return;
    }
    if (options_.on_created) options_.on_created(run_id_);
}

void RunRecorder::on_step(const StepMetrics& m) {
    if (!writer_) return;
    report_stopped_writer(m.step);
    const double t = t0_ + m.wall_time;
    const auto s = m.step;
    last_step_ = s;
    RunWriter& w = *writer_;
    namespace key = metric_key;
    w.log_metric(key::train_loss, s, t, m.loss);
    w.log_metric(key::train_accuracy, s, t, m.accuracy);
    w.log_metric(key::samples_per_second, s, t, m.samples_per_second);
    w.log_metric(key::step_seconds, s, t, m.step_seconds);
    w.log_metric(key::lr, s, t, m.lr);
    w.log_metric(key::loss_scale, s, t, m.loss_scale);
    w.log_metric(key::skipped, s, t, m.skipped ? 1.0 : 0.0);
    w.log_metric(key::overflow_count, s, t, static_cast<double>(m.overflow_count));
    w.log_metric(key::skipped_count, s, t, static_cast<double>(m.skipped_count));
    if (m.retries != 0) w.log_metric(key::retries, s, t, m.retries);
    if (m.grad_norm != 0) w.log_metric(key::grad_norm, s, t, m.grad_norm);
    if (m.tokens_per_second != 0) w.log_metric(key::tokens_per_second, s, t, m.tokens_per_second);
}

void RunRecorder::on_eval(const EvalMetrics& m) {
    if (!writer_) return;
    const double t = t0_ + m.wall_time;
    namespace key = metric_key;
    writer_->log_metric(key::test_loss, m.step, t, m.test_loss);
    writer_->log_metric(key::test_accuracy, m.step, t, m.test_accuracy);
    writer_->log_metric(key::epoch_train_loss, m.step, t, m.train_loss);
    writer_->log_metric(key::epoch_train_accuracy, m.step, t, m.train_accuracy);
    if (m.test_bits_per_token != 0)
        writer_->log_metric(key::test_bits_per_token, m.step, t, m.test_bits_per_token);
}

void RunRecorder::on_gradient_stats(const GradientStatsRecord& r) {
    if (!writer_) return;
    // Statistics come right after on_step of the same step, whose wall time is the best we have.
    const std::string kind = kind_name(r);
    const double t = store_now();
    writer_->log_histogram(r.step, r.layer_label, kind, r.histogram.to_blob());
    namespace key = metric_key;
    auto log_stat = [&](const char* stat, double value) {
        writer_->log_metric(key::gradient_stat(stat, r.layer_label, kind), r.step, t, value);
    };
    log_stat(key::underflow, r.stats.underflow_fraction);
    log_stat(key::subnormal, r.stats.subnormal_fraction);
    log_stat(key::overflow, r.stats.overflow_fraction);
    log_stat(key::max_abs, r.stats.max_abs);
    if (std::isfinite(r.stats.headroom_log2)) log_stat(key::headroom_log2, r.stats.headroom_log2);
}

void RunRecorder::on_scaling_stats(const ScalingStatsRecord& r) {
    if (writer_) writer_->log_scaling_stats(r);
}

void RunRecorder::on_stability(const StabilityRecord& r) {
    if (!writer_) return;
    const double t = store_now();  // right after on_step of the same step, as the statistics
    for (const StabilityValue& v : stability_values(r))
        writer_->log_metric(metric_key::stability_key(v.source, v.indicator), r.step, t, v.value);
}

void RunRecorder::on_event(const TrainingEvent& e) {
    if (!writer_) return;
    nlohmann::json j = e.detail.is_object() ? e.detail : nlohmann::json{{"detail", e.detail}};
    j["source"] = e.source;
    writer_->log_event(e.step, t0_ + e.wall_time, e.kind, j.dump());
}

void RunRecorder::store_boundary(const BoundaryGrid& grid) const {
    if (run_id_ <= 0) return;
    RunStore::Options o;
    o.detect_interrupted = false;
    o.verify_integrity = false;  // checked when this recorder opened the store
    RunStore store(path_, o);
    store.set_boundary(run_id_, grid.step, boundary_to_blob(grid));
}

void RunRecorder::on_checkpoint(const TrainingCheckpoint& checkpoint) {
    if (!writer_) return;
    writer_->log_checkpoint(checkpoint);
}

void RunRecorder::on_final_weights(const NetworkWeights& weights) {
    if (!writer_) return;
    writer_->log_final_weights(weights);
    final_weights_digest_ = weights_digest(weights);
}

void RunRecorder::on_run_end(const RunSummary& summary) {
    if (!writer_) return;
    const RunStatus status = summary.status == RunStatus::Running ? RunStatus::Finished : summary.status;
    nlohmann::json summary_json = summary.to_json();
    const bool final_state = status == RunStatus::Finished || status == RunStatus::Stopped;
    if (final_state && !final_weights_digest_.empty())
        summary_json["final_weights_digest"] = final_weights_digest_;
    writer_->log_event(summary.steps, t0_ + summary.wall_seconds, metric_key::summary_event,
                       summary_json.dump());
    if (writer_->finish(status)) {
        complete_ = true;
        return;
    }
    if (writer_->has_stopped()) {
        report_stopped_writer(summary.steps);
        mark_cut_short();
        return;
    }
    fail("run " + std::to_string(run_id_) + ": the last rows could not be written to " + path_ + ": " +
         writer_->last_error().value_or("timed out"));
}

}  // namespace mpwb
