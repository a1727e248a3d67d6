// RunRecorder: the training observer that writes a run into the run store. Constructing it opens
// the database and proves it can be written (so a locked, read-only, corrupt or newer-schema file
// is an error before training starts); on_run_start creates the run row, and from then on every
// callback only appends to a RunWriter's in-memory buffer, so the training thread never waits for
// SQLite. on_run_end stores the summary and the final status and waits for the last commit.
// Checkpoints (on_checkpoint) go through the writer too, the newest two kept per run. A trainer
// that resumes from a checkpoint (RunStartInfo::resumed_from_step > 0) is recorded into the run
// it continues (Options::resume_run_id): on_run_start reopens that run (RunStore::reopen_for_resume,
// dropping what it recorded after the checkpoint) instead of creating one. When the writer stops
// for good (disk full, I/O error: RunWriter::has_stopped), the next on_step says so through
// on_failure, with the step and how far the database holds the run, and on_run_end marks the run
// INTERRUPTED (cut short; resumable from its checkpoint once there is room) instead of the
// trainer's status. Should even that write fail, the run stays RUNNING until this process ends
// and the next open of the store marks it INTERRUPTED.
//
// Stored per run (keys are the constants of sessions/metric_keys.h, which the run browser,
// `mpwb-cli runs`, the plot board and the reports read):
//   metrics  train_loss, train_accuracy, samples_per_second, step_seconds, lr, loss_scale,
//            skipped (0/1), overflow_count, skipped_count, retries (when nonzero),
//            grad_norm (when nonzero); test_loss, test_accuracy, epoch_train_loss,
//            epoch_train_accuracy at each evaluation; per gradient statistic
//            "<stat>/<layer label>/<kind>" with stat in underflow, subnormal, overflow, max_abs,
//            headroom_log2 (infinite headroom, from an all-zero tensor, is not stored); per
//            statistics step of a transformer run, its instability indicators
//            "stability/<block label>/<indicator>" and "stability/output/<indicator>"
//            (sessions/stability_series.h).
//   histograms  layer label, kind "activation_grad" or "weight_grad:<parameter>", the exponent
//            histogram blob (ExponentHistogram::to_blob).
//   scaling_stats  every ScalingStatsRecord of a scaled recipe (RunStore::scaling_stats).
//   events   every TrainingEvent: its kind, and its detail object with "source" added (a
//            non-object detail goes under "detail"); "summary" at the end holds
//            RunSummary::to_json(), plus "final_weights_digest" (weights_digest of the weights it
//            ended with, equal to its final checkpoint's when it kept one) when the run ended
//            FINISHED or STOPPED, so the digest travels in bundles, which carry no checkpoints.
//   vocabulary  a text run's Vocabulary::to_json() in versions_json under "vocabulary"
//            (run_vocabulary reads it back).
//   final weights  the FP32 weights the run ended with (on_final_weights; RunStore::final_weights),
//            committed before the final status; bundles carry them, for export elsewhere.
// All times are seconds since the Unix epoch (store_now()), so started + metric offsets and
// the crash detector's "ended" agree.
#pragma once
#include "core/train/decision_boundary.h"
#include "core/train/observer.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace mpwb {

class RunRecorder final : public TrainingObserver {
public:
    struct Options {
        std::string db_path;                      // empty: default_database_path()
        std::string name;                         // empty: "<dataset> <precision>"
        std::map<std::string, std::string> tags;  // set when the run is created
        std::string note;
        // Adds the run to this comparison group (RunRecorder::create_group, or RunStore's).
        std::optional<std::int64_t> group_id;
        RunWriter::Options writer;
        // Training thread, after the run row exists: e.g. to print "recording run 12 in ...".
        std::function<void(std::int64_t run_id)> on_created;
        // Training thread, once, when recording cannot go on: the run could not be created, the
        // writer stopped ("recording of run 7 stopped at step 120: the disk holding ... is
        // full; ..."), or the last rows could not be written at the end. The caller decides
        // whether to stop training. A locked database is waited out by the writer instead.
        std::function<void(const std::string& message)> on_failure;
        // The run to go on recording into when the trainer resumes from a checkpoint; name, tags,
        // note and group then stay the run's own. A fresh run (resumed_from_step 0) ignores it.
        std::int64_t resume_run_id = 0;
    };

    // Opens (creating or migrating) the database and checks that it takes a write lock.
    // Throws StoreError (Locked, ReadOnly, Corrupt, NewerSchema, ...) naming the file.
    explicit RunRecorder(Options options);
    ~RunRecorder() override;
    RunRecorder(const RunRecorder&) = delete;
    RunRecorder& operator=(const RunRecorder&) = delete;

    const std::string& db_path() const { return path_; }
    // 0 until on_run_start created the run.
    std::int64_t run_id() const { return run_id_; }
    // Stores the run's decision boundary (RunStore::set_boundary), after the run: the workbench
    // and mpwb-cli hand it the final weights' grid on 2-D sets. Nothing when no run row exists;
    // throws StoreError when the database refuses the write.
    void store_boundary(const BoundaryGrid& grid) const;
    // Why recording failed or rows were lost; empty when every row was committed.
    std::string error() const;
    // True once on_run_end committed everything including the final status.
    bool complete() const { return complete_; }
    // Rows waiting in the writer (0 when not recording).
    std::uint64_t pending_rows() const;

    // A comparison group for runs started together (e.g. `mpwb-cli compare`): pass its id in
    // Options::group_id of each recorder.
    static std::int64_t create_group(const std::string& db_path, const std::string& name);

    // Machine and library facts stored with every run: {"compiler", "sqlite", "json", "machine":
    // {"hostname", "cpu", "cores"}}; the run adds "openblas_core" from RunStartInfo::blas_core.
    static nlohmann::json versions();
    // "host / CPU model (N cores)".
    static std::string machine_description();

    void on_run_start(const RunStartInfo& info) override;
    void on_step(const StepMetrics& m) override;
    void on_eval(const EvalMetrics& m) override;
    void on_gradient_stats(const GradientStatsRecord& r) override;
    void on_scaling_stats(const ScalingStatsRecord& r) override;
    void on_stability(const StabilityRecord& r) override;
    void on_event(const TrainingEvent& e) override;
    void on_checkpoint(const TrainingCheckpoint& checkpoint) override;
    void on_final_weights(const NetworkWeights& weights) override;
    void on_run_end(const RunSummary& summary) override;

private:
    void fail(const std::string& message);
    // Reports a stopped writer once (fail), at the step the trainer is at.
    void report_stopped_writer(std::int64_t step);
    // The end of a run whose writer stopped: INTERRUPTED when the store still takes that.
    void mark_cut_short();
    // on_run_start's two ways to a run id: a new run, or the reopened one a resume continues.
    std::int64_t create_run(const RunStartInfo& info);
    std::int64_t reopen_run(const RunStartInfo& info);

    Options options_;
    std::string path_;
    std::unique_ptr<RunStore> store_;  // used on open and on_run_start only
    std::unique_ptr<RunWriter> writer_;
    std::int64_t run_id_ = 0;
    double t0_ = 0;  // epoch seconds at on_run_start: the trainer's wall_time origin
    std::int64_t last_step_ = 0;
    std::string final_weights_digest_;  // weights_digest of on_final_weights' weights
    bool complete_ = false;
    bool writer_stop_reported_ = false;
    mutable std::mutex error_mu_;
    std::string error_;
};

}  // namespace mpwb
