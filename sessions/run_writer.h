// RunWriter: the batched writer between the training thread and the run store. The training
// thread only appends rows to an in-memory buffer under a mutex (no I/O, no SQLite); a
// background thread with its own connection commits them in one transaction every
// commit_interval or when max_pending_rows are waiting, keeping latest_metrics and the
// downsampling blocks up to date in the same transaction. A failing write never reaches the
// training thread. A database locked beyond the busy timeout is waited out: the rows stay
// pending and the writer retries. Any other failure (disk full, I/O error, read-only, corrupt)
// would fail again on every retry, so the writer stops at once: has_stopped() turns true, the
// failed batch and every row logged afterwards are dropped (lost_rows()), flush() and finish()
// return false without waiting, and last_error() says why.
#pragma once
#include "sessions/run_store.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace mpwb {

class RunWriter {
public:
    struct Options {
        std::chrono::milliseconds commit_interval{250};
        std::size_t max_pending_rows = 4096;
        int busy_timeout_ms = 2000;
        std::chrono::milliseconds retry_delay{250};  // pause after a failed commit
        int keep_checkpoints = 2;  // the run's newest checkpoints kept (RunStore::save_checkpoint)
    };

    // Opens its own connection to `db_path` (creating/migrating like RunStore) and checks that
    // `run_id` exists; throws StoreError otherwise. No rows are written until something is
    // logged.
    RunWriter(const std::string& db_path, std::int64_t run_id);
    RunWriter(const std::string& db_path, std::int64_t run_id, const Options& options);
    // Commits what it can (one last attempt) and stops the thread. Does not change the status:
    // a run whose writer goes away without finish() stays RUNNING until its process dies.
    ~RunWriter();
    RunWriter(const RunWriter&) = delete;
    RunWriter& operator=(const RunWriter&) = delete;

    // Training-thread calls: append under a mutex and return.
    void log_metric(std::string_view key, std::int64_t step, double wall_time, double value);
    void log_histogram(std::int64_t step, std::string_view layer, std::string_view kind,
                       std::vector<std::uint8_t> blob);
    void log_event(std::int64_t step, double time, std::string_view kind, std::string_view json_text);
    void log_scaling_stats(ScalingStatsRecord record);
    // A copy of the checkpoint is queued: it is committed in the transaction of the rows logged
    // before it, so the store never holds a checkpoint ahead of the steps it continues.
    void log_checkpoint(const TrainingCheckpoint& checkpoint);
    // The weights the run ended with (replacing any stored before), committed with the rows
    // logged before them; finish() afterwards so a reader that sees the run ended sees them.
    void log_final_weights(NetworkWeights weights);

    // Blocks until every row logged before the call is committed; false when that did not
    // happen within `timeout` (the rows stay pending; last_error() says why), or as soon as the
    // writer has stopped with some of them uncommitted.
    bool flush(std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // Queues the final status and end time behind every pending row, then flushes; false at
    // once when the writer has stopped (the status is not written).
    bool finish(RunStatus status, std::chrono::milliseconds timeout = std::chrono::seconds(30));

    // The message of the most recent failed commit (kept after a later success, so a poller
    // cannot miss it); is_failing() says whether the latest attempt failed.
    std::optional<std::string> last_error() const;
    bool is_failing() const { return failing_.load(); }
    // True once a failure that retrying cannot mend stopped the writer (see the file comment).
    bool has_stopped() const { return stopped_.load(); }
    std::uint64_t lost_rows() const { return lost_rows_.load(); }
    // The highest step of the metrics committed so far; -1 before the first.
    std::int64_t committed_step() const { return committed_step_.load(); }
    std::uint64_t failed_commits() const { return failed_commits_.load(); }
    std::uint64_t committed_rows() const { return committed_rows_.load(); }
    std::uint64_t pending_rows() const;
    std::int64_t run_id() const { return run_id_; }

private:
    struct MetricRow {
        std::string key;
        std::int64_t step;
        double wall_time;
        double value;
    };
    struct HistogramRow {
        std::int64_t step;
        std::string layer;
        std::string kind;
        std::vector<std::uint8_t> blob;
    };
    struct EventRow {
        std::int64_t step;
        double time;
        std::string kind;
        std::string json;
    };
    struct Batch {
        std::vector<MetricRow> metrics;
        std::vector<HistogramRow> histograms;
        std::vector<EventRow> events;
        std::vector<ScalingStatsRecord> scaling;
        std::vector<TrainingCheckpoint> checkpoints;
        std::vector<NetworkWeights> final_weights;  // the last one stands
        std::optional<std::pair<RunStatus, double>> status;
        std::size_t rows() const {
            return metrics.size() + histograms.size() + events.size() + scaling.size() + checkpoints.size() +
                   final_weights.size();
        }
        bool empty() const { return rows() == 0 && !status; }
    };
    struct Statements;

    // False (the row is dropped and counted lost) once the writer has stopped.
    bool accepting_locked();
    void pushed_locked();
    void loop();
    // The batch's commit, or what a failure means: retry later (false) or stop for good.
    bool try_commit(Batch& batch, std::uint64_t batch_seq);
    void commit(const Batch& batch);                            // throws StoreError; rolls back on failure
    void write_metrics(const std::vector<MetricRow>& metrics);  // inside commit's transaction

    Options options_;
    std::int64_t run_id_;
    std::unique_ptr<RunStore> store_;  // the writer's own connection; used by the thread only
    std::unique_ptr<Statements> stmts_;

    mutable std::mutex mu_;
    std::condition_variable wake_;  // worker: rows waiting / flush / stop
    std::condition_variable done_;  // flushers: a commit finished
    Batch pending_;
    std::uint64_t pushed_seq_ = 0;     // rows (and status changes) pushed so far
    std::uint64_t committed_seq_ = 0;  // of those, committed
    int flush_waiters_ = 0;
    bool stop_ = false;
    std::optional<std::string> last_error_;

    std::atomic<bool> failing_{false};
    std::atomic<bool> stopped_{false};
    std::atomic<std::uint64_t> lost_rows_{0};
    std::atomic<std::int64_t> committed_step_{-1};
    std::atomic<std::uint64_t> failed_commits_{0};
    std::atomic<std::uint64_t> committed_rows_{0};
    std::thread thread_;
};

}  // namespace mpwb
