// RunWriter: swap-buffer batching and the commit transaction (metrics, latest_metrics upsert,
// metric_blocks upsert, histograms, events, checkpoints, final status).
#include "sessions/run_writer.h"

#include "sessions/checkpoint_rows.h"
#include "sessions/final_weights_rows.h"
#include "sessions/scaling_stats_rows.h"
#include "sessions/store_schema.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>

namespace mpwb {

struct RunWriter::Statements {
    sqlite::Stmt begin, commit, metric, latest, block, histogram, event, scaling, status;
};

namespace {

// NaN is stored as NULL; min/max ignore it, exactly like SQL's min()/max() aggregates.
void fold_min_max(double v, double& mn, double& mx) {
    if (std::isnan(v)) {
        return;
    }
    mn = std::isnan(mn) ? v : std::min(mn, v);
    mx = std::isnan(mx) ? v : std::max(mx, v);
}

void bind_real(sqlite::Stmt& s, int i, double v) {
    if (std::isnan(v)) {
        s.bind_null(i);
    } else {
        s.bind(i, v);
    }
}

// What latest_metrics and metric_blocks keep of a key's points (in one batch, or one block).
struct MetricAggregate {
    std::int64_t first_step = 0, last_step = 0;
    double first = 0, last = 0, last_wall = 0;
    double mn = std::numeric_limits<double>::quiet_NaN(), mx = mn;
    std::int64_t count = 0;

    void fold(std::int64_t step, double value, double wall_time) {
        if (count == 0 || step < first_step) {
            first_step = step;
            first = value;
        }
        if (count == 0 || step >= last_step) {
            last_step = step;
            last = value;
            last_wall = wall_time;
        }
        fold_min_max(value, mn, mx);
        ++count;
    }
};

void insert_scaling_row(sqlite::Stmt& s, std::int64_t run_id, const ScalingStatsRecord& r) {
    const ScalingStats& st = r.stats;
    s.bind(1, run_id).bind(2, r.step).bind(3, static_cast<std::int64_t>(r.layer)).bind(4, r.layer_label);
    s.bind(5, st.operand).bind(6, format_name(st.element));
    bind_real(s, 7, st.amax);
    bind_real(s, 8, st.scale);
    bind_real(s, 9, st.underflow_fraction);
    bind_real(s, 10, st.saturate_fraction);
    bind_real(s, 11, st.sqnr_db);
    s.bind(12, st.values).bind(13, st.blocks).bind(14, st.clipped_blocks).bind(15, st.block_exponent_min);
    const auto blob = block_exponent_counts_to_blob(st.block_exponent_counts);
    s.bind_blob(16, blob.data(), blob.size())
        .bind(17, st.recipe)
        .bind(18, static_cast<std::int64_t>(st.what_if))
        .bind(19, st.blocks_scaled_to_4);
    s.run("writing scaling statistics");
    s.reset();
}

}  // namespace

RunWriter::RunWriter(const std::string& db_path, std::int64_t run_id)
    : RunWriter(db_path, run_id, Options{}) {}

RunWriter::RunWriter(const std::string& db_path, std::int64_t run_id, const Options& options)
    : options_(options), run_id_(run_id) {
    RunStore::Options so;
    so.busy_timeout_ms = options.busy_timeout_ms;
    so.detect_interrupted = false;
    so.verify_integrity = false;  // the store that created the run checked the file a moment ago
    store_ = std::make_unique<RunStore>(db_path, so);
    store_->get_run(run_id);  // throws NotFound naming the run
    auto& db = store_->db();
    stmts_ = std::make_unique<Statements>(Statements{
        sqlite::Stmt(db, "BEGIN IMMEDIATE"),
        sqlite::Stmt(db, "COMMIT"),
        sqlite::Stmt(db,
                     "INSERT INTO metrics(run_id, key, step, wall_time, value) "
                     "VALUES(?,?,?,?,?)"),
        // In an upsert's SET every bare column is the old value, so the order does not matter.
        sqlite::Stmt(db,
                     "INSERT INTO latest_metrics(run_id, key, step, wall_time, value, min, "
                     "max, count) VALUES(?1,?2,?3,?4,?5,?6,?7,?8) "
                     "ON CONFLICT(run_id, key) DO UPDATE SET "
                     "value = CASE WHEN excluded.step >= step THEN excluded.value ELSE value END, "
                     "wall_time = CASE WHEN excluded.step >= step THEN excluded.wall_time "
                     "ELSE wall_time END, "
                     "step = max(step, excluded.step), "
                     "min = min(coalesce(min, excluded.min), coalesce(excluded.min, min)), "
                     "max = max(coalesce(max, excluded.max), coalesce(excluded.max, max)), "
                     "count = count + excluded.count"),
        sqlite::Stmt(db,
                     "INSERT INTO metric_blocks(run_id, key, block, first_step, first_value, "
                     "last_step, last_value, min, max, count) "
                     "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10) "
                     "ON CONFLICT(run_id, key, block) DO UPDATE SET "
                     "first_value = CASE WHEN excluded.first_step < first_step "
                     "THEN excluded.first_value ELSE first_value END, "
                     "first_step = min(first_step, excluded.first_step), "
                     "last_value = CASE WHEN excluded.last_step >= last_step "
                     "THEN excluded.last_value ELSE last_value END, "
                     "last_step = max(last_step, excluded.last_step), "
                     "min = min(coalesce(min, excluded.min), coalesce(excluded.min, min)), "
                     "max = max(coalesce(max, excluded.max), coalesce(excluded.max, max)), "
                     "count = count + excluded.count"),
        sqlite::Stmt(db, "INSERT INTO histograms(run_id, step, layer, kind, blob) VALUES(?,?,?,?,?)"),
        sqlite::Stmt(db, "INSERT INTO events(run_id, step, time, kind, json) VALUES(?,?,?,?,?)"),
        sqlite::Stmt(db,
                     "INSERT INTO scaling_stats(run_id, step, layer, layer_label, operand, element, amax, "
                     "scale, underflow_fraction, saturate_fraction, sqnr_db, value_count, blocks, "
                     "clipped_blocks, block_exponent_min, block_exponent_counts, recipe, what_if, "
                     "blocks_scaled_to_4) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        sqlite::Stmt(db, "UPDATE runs SET status=?, ended=? WHERE id=?"),
    });
    thread_ = std::thread([this] { loop(); });
}

RunWriter::~RunWriter() {
    {
        std::lock_guard lk(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
    stmts_.reset();  // finalize before the connection closes
}

bool RunWriter::accepting_locked() {
    if (!stopped_) return true;
    ++lost_rows_;
    return false;
}

void RunWriter::pushed_locked() {
    ++pushed_seq_;
    if (pending_.rows() >= options_.max_pending_rows) {
        wake_.notify_one();
    }
}

void RunWriter::log_metric(std::string_view key, std::int64_t step, double wall_time, double value) {
    std::lock_guard lk(mu_);
    if (!accepting_locked()) return;
    pending_.metrics.push_back({std::string(key), step, wall_time, value});
    pushed_locked();
}

void RunWriter::log_histogram(std::int64_t step, std::string_view layer, std::string_view kind,
                              std::vector<std::uint8_t> blob) {
    std::lock_guard lk(mu_);
    if (!accepting_locked()) return;
    pending_.histograms.push_back({step, std::string(layer), std::string(kind), std::move(blob)});
    pushed_locked();
}

void RunWriter::log_event(std::int64_t step, double time, std::string_view kind, std::string_view json_text) {
    std::lock_guard lk(mu_);
    if (!accepting_locked()) return;
    pending_.events.push_back(
        {step, time, std::string(kind), json_text.empty() ? "{}" : std::string(json_text)});
    pushed_locked();
}

void RunWriter::log_scaling_stats(ScalingStatsRecord record) {
    std::lock_guard lk(mu_);
    if (!accepting_locked()) return;
    pending_.scaling.push_back(std::move(record));
    pushed_locked();
}

void RunWriter::log_checkpoint(const TrainingCheckpoint& checkpoint) {
    TrainingCheckpoint copy = checkpoint;  // copied outside the lock: the state may be megabytes
    std::lock_guard lk(mu_);
    if (!accepting_locked()) return;
    pending_.checkpoints.push_back(std::move(copy));
    pushed_locked();
}

void RunWriter::log_final_weights(NetworkWeights weights) {
    std::lock_guard lk(mu_);
    if (!accepting_locked()) return;
    pending_.final_weights.push_back(std::move(weights));
    pushed_locked();
}

bool RunWriter::flush(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu_);
    const auto target = pushed_seq_;
    ++flush_waiters_;
    wake_.notify_one();
    done_.wait_for(lk, timeout, [&] { return committed_seq_ >= target || stopped_; });
    --flush_waiters_;
    return committed_seq_ >= target;
}

bool RunWriter::finish(RunStatus status, std::chrono::milliseconds timeout) {
    {
        std::lock_guard lk(mu_);
        if (stopped_) return false;
        pending_.status = std::make_pair(status, store_now());
        ++pushed_seq_;
    }
    return flush(timeout);
}

std::optional<std::string> RunWriter::last_error() const {
    std::lock_guard lk(mu_);
    return last_error_;
}

std::uint64_t RunWriter::pending_rows() const {
    std::lock_guard lk(mu_);
    return stopped_ ? 0 : pushed_seq_ - committed_seq_;  // a stopped writer's rows are lost
}

void RunWriter::loop() {
    Batch batch;  // rows taken from pending_ and not yet committed (kept across failed attempts)
    std::uint64_t batch_seq = 0;
    bool stopping = false;
    bool failed_last = false;
    while (true) {
        {
            std::unique_lock lk(mu_);
            if (failed_last) {
                // Back off after a failure, but still wake for stop.
                wake_.wait_for(lk, options_.retry_delay, [&] { return stop_; });
            } else {
                wake_.wait_for(lk, options_.commit_interval, [&] {
                    return stop_ || flush_waiters_ > 0 || pending_.rows() >= options_.max_pending_rows;
                });
            }
            stopping = stop_;
            // Swap buffers: the training thread gets fresh vectors and keeps appending.
            auto move_all = [](auto& to, auto& from) {
                if (to.empty()) {
                    to.swap(from);
                } else {
                    std::move(from.begin(), from.end(), std::back_inserter(to));
                    from.clear();
                }
            };
            move_all(batch.metrics, pending_.metrics);
            move_all(batch.histograms, pending_.histograms);
            move_all(batch.events, pending_.events);
            move_all(batch.scaling, pending_.scaling);
            move_all(batch.checkpoints, pending_.checkpoints);
            move_all(batch.final_weights, pending_.final_weights);
            if (pending_.status) {
                batch.status = pending_.status;
                pending_.status.reset();
            }
            batch_seq = pushed_seq_;
        }
        if (!batch.empty()) {
            failed_last = !try_commit(batch, batch_seq);
            if (stopped_) return;
        } else {
            std::lock_guard lk(mu_);
            committed_seq_ = batch_seq;
            done_.notify_all();
        }
        if (stopping) {
            // One last attempt was made above; a store that still refuses loses these rows,
            // and last_error() says why.
            return;
        }
    }
}

bool RunWriter::try_commit(Batch& batch, std::uint64_t batch_seq) {
    bool retry = false;
    std::string error;
    try {
        commit(batch);
        std::int64_t top = committed_step_;
        for (const auto& m : batch.metrics) top = std::max(top, m.step);
        committed_step_ = top;
        committed_rows_ += batch.rows();
        batch = Batch{};
        failing_ = false;
        {
            std::lock_guard lk(mu_);
            committed_seq_ = batch_seq;
        }
        done_.notify_all();
        return true;
    } catch (const StoreError& e) {
        retry = e.kind() == StoreError::Kind::Locked;  // the other process's transaction ends
        error = e.what();
    } catch (const std::exception& e) {
        error = e.what();
    }
    failing_ = true;
    ++failed_commits_;
    {
        std::lock_guard lk(mu_);
        last_error_ = error;
        if (!retry) {
            // A full disk or a broken file fails every retry the same way: stop now, so the
            // caller hears of it while the run goes on, and drop what cannot be written rather
            // than keep a growing buffer.
            stopped_ = true;
            lost_rows_ += batch.rows() + pending_.rows();
            batch = Batch{};
            pending_ = Batch{};
        }
    }
    if (!retry) done_.notify_all();
    return false;
}

// The points, and what they change of latest_metrics and metric_blocks.
void RunWriter::write_metrics(const std::vector<MetricRow>& metrics) {
    auto& s = *stmts_;
    std::map<std::string_view, MetricAggregate> latest;
    std::map<std::pair<std::string_view, std::int64_t>, MetricAggregate> blocks;
    for (const auto& m : metrics) {
        s.metric.bind(1, run_id_).bind(2, m.key).bind(3, m.step).bind(4, m.wall_time);
        bind_real(s.metric, 5, m.value);
        s.metric.run("writing metrics");
        s.metric.reset();
        latest[m.key].fold(m.step, m.value, m.wall_time);
        blocks[{m.key, m.step >> kMetricBlockShift}].fold(m.step, m.value, m.wall_time);
    }
    for (const auto& [key, a] : latest) {
        s.latest.bind(1, run_id_).bind(2, key).bind(3, a.last_step).bind(4, a.last_wall);
        bind_real(s.latest, 5, a.last);
        bind_real(s.latest, 6, a.mn);
        bind_real(s.latest, 7, a.mx);
        s.latest.bind(8, a.count).run("updating latest metrics");
        s.latest.reset();
    }
    for (const auto& [kb, a] : blocks) {
        s.block.bind(1, run_id_).bind(2, kb.first).bind(3, kb.second).bind(4, a.first_step);
        bind_real(s.block, 5, a.first);
        s.block.bind(6, a.last_step);
        bind_real(s.block, 7, a.last);
        bind_real(s.block, 8, a.mn);
        bind_real(s.block, 9, a.mx);
        s.block.bind(10, a.count).run("updating metric blocks");
        s.block.reset();
    }
}

void RunWriter::commit(const Batch& batch) {
    auto& s = *stmts_;
    s.begin.step("begin batch");
    s.begin.reset();
    try {
        write_metrics(batch.metrics);
        for (const auto& h : batch.histograms) {
            s.histogram.bind(1, run_id_).bind(2, h.step).bind(3, h.layer).bind(4, h.kind);
            s.histogram.bind_blob(5, h.blob.data(), h.blob.size()).run("writing histograms");
            s.histogram.reset();
        }
        for (const auto& e : batch.events) {
            s.event.bind(1, run_id_).bind(2, e.step).bind(3, e.time).bind(4, e.kind).bind(5, e.json);
            s.event.run("writing events");
            s.event.reset();
        }
        for (const auto& r : batch.scaling) insert_scaling_row(s.scaling, run_id_, r);
        for (const auto& c : batch.checkpoints)
            insert_checkpoint_row(store_->db(), run_id_, c, options_.keep_checkpoints);
        if (!batch.final_weights.empty())
            insert_final_weights(store_->db(), run_id_, batch.final_weights.back());
        if (batch.status) {
            s.status.bind(1, to_string(batch.status->first)).bind(2, batch.status->second);
            s.status.bind(3, run_id_).run("setting run status");
            s.status.reset();
        }
        s.commit.step("commit batch");
        s.commit.reset();
    } catch (...) {
        s.commit.reset();
        // Nothing of a failed batch may stay behind, or the retry would duplicate rows.
        if (!sqlite3_get_autocommit(store_->db().handle())) {
            sqlite3_exec(store_->db().handle(), "ROLLBACK", nullptr, nullptr, nullptr);
        }
        throw;
    }
}

}  // namespace mpwb
