// RunStore's checkpoints (store schema 7): saving a run's resumable state, reading its newest one,
// and taking an INTERRUPTED or STOPPED run back so that a resumed trainer can record the steps
// after its checkpoint again. Trimming keeps the run's summaries (latest_metrics, metric_blocks)
// exactly as the RunWriter would have left them had the run ended at the checkpoint's step.
// The run's final weights (schema 8) are read here too: like a checkpoint, a state of the run.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "sessions/checkpoint_rows.h"
#include "sessions/final_weights_rows.h"
#include "sessions/run_store.h"
#include "sessions/store_schema.h"

namespace mpwb {

void insert_checkpoint_row(sqlite::Db& db, std::int64_t run_id, const TrainingCheckpoint& checkpoint,
                           int keep) {
    if (keep < 1) throw StoreError(StoreError::Kind::Invalid, "checkpoints to keep must be at least 1");
    if (checkpoint.step < 0 || checkpoint.epoch < 0 || checkpoint.batch < 0 ||
        !std::isfinite(checkpoint.wall_seconds))
        throw StoreError(StoreError::Kind::Invalid, "checkpoint of run " + std::to_string(run_id) +
                                                        " at step " + std::to_string(checkpoint.step) +
                                                        " has an impossible position or time");
    sqlite::Stmt insert(db,
                        "INSERT INTO checkpoints(run_id, step, epoch, batch, wall_seconds, created, state) "
                        "VALUES(?,?,?,?,?,?,?)");
    insert.bind(1, run_id).bind(2, checkpoint.step).bind(3, checkpoint.epoch).bind(4, checkpoint.batch);
    insert.bind(5, checkpoint.wall_seconds).bind(6, store_now());
    insert.bind_blob(7, checkpoint.state.data(), checkpoint.state.size()).run("storing a checkpoint");
    sqlite::Stmt prune(db,
                       "DELETE FROM checkpoints WHERE run_id=?1 AND id NOT IN (SELECT id FROM checkpoints "
                       "WHERE run_id=?1 ORDER BY step DESC, id DESC LIMIT ?2)");
    prune.bind(1, run_id).bind(2, keep).run("removing older checkpoints");
}

TrainingCheckpoint read_checkpoint_row(const sqlite::Stmt& row, const std::string& what) {
    TrainingCheckpoint c;
    c.step = row.col_int(0);
    c.epoch = row.col_int(1);
    c.batch = row.col_int(2);
    c.wall_seconds = row.col_double(3);
    if (c.step < 0 || c.epoch < 0 || c.batch < 0 || !std::isfinite(c.wall_seconds) || c.wall_seconds < 0)
        throw StoreError(StoreError::Kind::Corrupt,
                         what + ": impossible position (step " + std::to_string(c.step) + ", epoch " +
                             std::to_string(c.epoch) + ", batch " + std::to_string(c.batch) + ") or time");
    c.state = row.col_blob(4);
    return c;
}

void RunStore::save_checkpoint(std::int64_t run_id, const TrainingCheckpoint& checkpoint, int keep) {
    sqlite::Transaction tx(db_, "storing a checkpoint");
    require_run(run_id);
    insert_checkpoint_row(db_, run_id, checkpoint, keep);
    tx.commit();
}

namespace {

// The run's checkpoints, newest first, at most `limit` (-1: all), each naming itself in `source`.
std::vector<TrainingCheckpoint> read_checkpoints(sqlite::Db& db, const std::string& path, std::int64_t run_id,
                                                 int limit) {
    // A read-only open of a file from before schema 7 has no such table: no checkpoints.
    if (db.query_int("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='checkpoints'") == 0)
        return {};
    sqlite::Stmt s(db,
                   "SELECT step, epoch, batch, wall_seconds, state, id FROM checkpoints WHERE run_id=? "
                   "ORDER BY step DESC, id DESC LIMIT ?");
    s.bind(1, run_id).bind(2, limit);
    std::vector<TrainingCheckpoint> found;
    while (s.step("reading the run's checkpoints")) {
        const std::string row = std::to_string(s.col_int(5));
        TrainingCheckpoint c = read_checkpoint_row(s, "database " + path + ": table checkpoints, row " + row);
        c.source = "database " + path + ", run " + std::to_string(run_id) + ", checkpoint at step " +
                   std::to_string(c.step) + " (row " + row + ")";
        found.push_back(std::move(c));
    }
    return found;
}

}  // namespace

std::optional<TrainingCheckpoint> RunStore::latest_checkpoint(std::int64_t run_id) {
    std::vector<TrainingCheckpoint> newest = read_checkpoints(db_, path(), run_id, 1);
    if (newest.empty()) return std::nullopt;
    return std::move(newest.front());
}

std::vector<TrainingCheckpoint> RunStore::checkpoints(std::int64_t run_id) {
    return read_checkpoints(db_, path(), run_id, -1);
}

std::optional<NetworkWeights> RunStore::final_weights(std::int64_t run_id) {
    return read_final_weights(db_, "main", run_id, "database " + path());
}

namespace {

// Runs `sql` with ?1 = run id and ?2 = step.
void run_for_step(sqlite::Db& db, const char* sql, std::int64_t run_id, std::int64_t step, const char* what) {
    sqlite::Stmt s(db, sql);
    s.bind(1, run_id).bind(2, step).run(what);
}

// The (key, block) pairs of `sql` (selecting key, then an integer; ?1 run id, ?2 step).
std::vector<std::pair<std::string, std::int64_t>> keyed_rows(sqlite::Db& db, const char* sql,
                                                             std::int64_t run_id, std::int64_t step) {
    std::vector<std::pair<std::string, std::int64_t>> rows;
    sqlite::Stmt s(db, sql);
    s.bind(1, run_id).bind(2, step);
    while (s.step("reading the run's metric summaries")) rows.emplace_back(s.col_text(0), s.col_int(1));
    return rows;
}

// A block that held steps on both sides of the trim, summarised again from the points it keeps,
// as the writer folds them: the first value is the earliest row at the first step, the last
// value the latest row at the last step, min and max ignore NULL (NaN).
void rebuild_block(sqlite::Db& db, std::int64_t run_id, const std::string& key, std::int64_t block) {
    const std::int64_t lo = block * (std::int64_t{1} << kMetricBlockShift);
    const std::int64_t hi = lo + (std::int64_t{1} << kMetricBlockShift) - 1;
    sqlite::Stmt drop(db, "DELETE FROM metric_blocks WHERE run_id=? AND key=? AND block=?");
    drop.bind(1, run_id).bind(2, key).bind(3, block).run("trimming metric blocks");
    sqlite::Stmt insert(
        db,
        "INSERT INTO metric_blocks(run_id, key, block, first_step, last_step, min, max, count) "
        "SELECT ?1, ?2, ?3, min(step), max(step), min(value), max(value), count(*) FROM metrics "
        "WHERE run_id=?1 AND key=?2 AND step BETWEEN ?4 AND ?5 HAVING count(*) > 0");
    insert.bind(1, run_id).bind(2, key).bind(3, block).bind(4, lo).bind(5, hi).run("trimming metric blocks");
    sqlite::Stmt ends(db,
                      "UPDATE metric_blocks SET "
                      "first_value=(SELECT value FROM metrics m WHERE m.run_id=?1 AND m.key=?2 "
                      "AND m.step=metric_blocks.first_step ORDER BY m.rowid LIMIT 1), "
                      "last_value=(SELECT value FROM metrics m WHERE m.run_id=?1 AND m.key=?2 "
                      "AND m.step=metric_blocks.last_step ORDER BY m.rowid DESC LIMIT 1) "
                      "WHERE run_id=?1 AND key=?2 AND block=?3");
    ends.bind(1, run_id).bind(2, key).bind(3, block).run("trimming metric blocks");
}

// latest_metrics of a key whose newest point was trimmed: from its blocks (already trimmed), and
// the value and time of the latest row at the last step; removed when no point is left.
void rebuild_latest(sqlite::Db& db, std::int64_t run_id, const std::string& key) {
    sqlite::Stmt summary(db,
                         "UPDATE latest_metrics SET (step, min, max, count) = (SELECT max(last_step), "
                         "min(min), max(max), sum(count) FROM metric_blocks WHERE run_id=?1 AND key=?2) "
                         "WHERE run_id=?1 AND key=?2 AND EXISTS (SELECT 1 FROM metric_blocks "
                         "WHERE run_id=?1 AND key=?2)");
    summary.bind(1, run_id).bind(2, key).run("trimming the latest metrics");
    if (db.changes() == 0) {
        sqlite::Stmt drop(db, "DELETE FROM latest_metrics WHERE run_id=? AND key=?");
        drop.bind(1, run_id).bind(2, key).run("trimming the latest metrics");
        return;
    }
    sqlite::Stmt last(
        db,
        "UPDATE latest_metrics SET (value, wall_time) = (SELECT value, wall_time FROM metrics m "
        "WHERE m.run_id=?1 AND m.key=?2 AND m.step=latest_metrics.step ORDER BY m.rowid DESC "
        "LIMIT 1) WHERE run_id=?1 AND key=?2");
    last.bind(1, run_id).bind(2, key).run("trimming the latest metrics");
}

// Everything the run recorded after `step`. The "summary" event goes whatever its step: the run
// has not ended any more, and the resumed one writes its own.
void trim_after(sqlite::Db& db, std::int64_t run_id, std::int64_t step) {
    for (const char* sql : {"DELETE FROM metrics WHERE run_id=?1 AND step>?2",
                            "DELETE FROM histograms WHERE run_id=?1 AND step>?2",
                            "DELETE FROM scaling_stats WHERE run_id=?1 AND step>?2",
                            "DELETE FROM events WHERE run_id=?1 AND (step>?2 OR kind='summary')",
                            "DELETE FROM boundaries WHERE run_id=?1 AND step>?2",
                            "DELETE FROM checkpoints WHERE run_id=?1 AND step>?2",
                            "DELETE FROM metric_blocks WHERE run_id=?1 AND first_step>?2",
                            // The run has not ended any more: its final weights go whatever their step.
                            "DELETE FROM final_weights WHERE run_id=?1 AND ?2 IS NOT NULL",
                            "DELETE FROM final_weight_tensors WHERE run_id=?1 AND ?2 IS NOT NULL"})
        run_for_step(db, sql, run_id, step, "trimming the run after its checkpoint");
    for (const auto& [key, block] : keyed_rows(
             db, "SELECT key, block FROM metric_blocks WHERE run_id=?1 AND last_step>?2", run_id, step))
        rebuild_block(db, run_id, key, block);
    for (const auto& [key, latest_step] :
         keyed_rows(db, "SELECT key, step FROM latest_metrics WHERE run_id=?1 AND step>?2", run_id, step))
        rebuild_latest(db, run_id, key);
}

}  // namespace

std::string run_in_use_text(std::int64_t run_id, std::int64_t pid, const std::string& host) {
    const std::string process =
        pid > 0 ? "process " + std::to_string(pid) + (host.empty() ? "" : " on " + host) : "another process";
    return "run " + std::to_string(run_id) + " is still running: " + process +
           " is training it (its first start, or another resume); wait for it to end, or stop it (SIGTERM "
           "checkpoints it), then resume";
}

void RunStore::reopen_for_resume(std::int64_t run_id, std::int64_t step) {
    // A RUNNING run whose process died is INTERRUPTED (and resumable) from here on.
    mark_interrupted_runs();
    sqlite::Transaction tx(db_, "reopening a run to resume it");
    const std::string run = "run " + std::to_string(run_id);
    {
        sqlite::Stmt s(db_,
                       "SELECT status, deleted, coalesce(owner_pid, 0), coalesce(owner_host, '') FROM runs "
                       "WHERE id=?");
        s.bind(1, run_id);
        if (!s.step("reading the run to resume"))
            throw StoreError(StoreError::Kind::NotFound, run + " does not exist in " + path());
        const std::string status = s.col_text(0);
        if (status == "RUNNING")
            throw StoreError(StoreError::Kind::InUse, run_in_use_text(run_id, s.col_int(2), s.col_text(3)));
        if (status != "INTERRUPTED" && status != "STOPPED")
            throw StoreError(StoreError::Kind::Invalid,
                             run + " is " + status + ": only an INTERRUPTED or STOPPED run can be resumed");
        if (s.col_int(1) != 0)
            throw StoreError(StoreError::Kind::Invalid, run + " is in the trash; restore it to resume it");
    }
    {
        sqlite::Stmt c(db_, "SELECT 1 FROM checkpoints WHERE run_id=? AND step=?");
        c.bind(1, run_id).bind(2, step);
        if (!c.step("finding the checkpoint"))
            throw StoreError(StoreError::Kind::NotFound,
                             run + " has no checkpoint at step " + std::to_string(step) + " in " + path());
    }
    trim_after(db_, run_id, step);
    claim_run(run_id);
    sqlite::Stmt up(db_, "UPDATE runs SET status='RUNNING', ended=NULL WHERE id=?");
    up.bind(1, run_id).run("reopening a run to resume it");
    tx.commit();
}

}  // namespace mpwb
