// RunStore: the SQLite database every run lands in (the tracking store of MP Workbench).
// Opening it creates or migrates the schema, switches to WAL so the GUI can read while a
// writer appends, and marks runs whose owning process died as INTERRUPTED. All the queries the
// run browser, the comparison view and the reports need live here too (run_query.cpp).
// A RunStore is one connection: use it from one thread at a time. Training writes go through
// RunWriter, which has its own connection and thread.
#pragma once
#include "core/train/checkpoint.h"
#include "core/train/run_records.h"
#include "sessions/run_types.h"
#include "sessions/sqlite_db.h"
#include "sessions/store_error.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

namespace mpwb {

// $XDG_DATA_HOME/mpwb/runs.sqlite, else ~/.local/share/mpwb/runs.sqlite; creates the folder.
std::string default_database_path();

// Seconds since the Unix epoch, the time unit of every timestamp in the store.
double store_now();

// Why a RUNNING run cannot be resumed: which process trains it (pid 0: unknown) and what to do.
std::string run_in_use_text(std::int64_t run_id, std::int64_t pid, const std::string& host);

// Throws StoreError(Invalid) "<what> '...' is refused: byte 0xFF at offset 3 is not valid UTF-8"
// for text that is not UTF-8. Every entry point of the store that takes text (a run's name and
// fields, a tag, a note, a group's or a sweep's name) calls it, so no such text is stored.
void require_utf8(std::string_view text, std::string_view what);

class RunStore {
public:
    struct Options {
        bool read_only = false;  // SQLITE_OPEN_READONLY: every write fails with a clear error
        bool create = true;      // create the file when it does not exist (read-write only)
        int busy_timeout_ms = 2000;
        bool detect_interrupted = true;
        // PRAGMA quick_check before the first write, so a damaged file is refused instead of
        // written to. Off only for a second connection of a process whose first one checked.
        bool verify_integrity = true;
        // The file comes from elsewhere (a sweep's task database, a store from another machine):
        // its schema must be exactly the one this build writes at the file's version
        // (schema_difference: no views, triggers or other objects of its own), checked before
        // any table is read, and the connection's work is bounded by the file's size
        // (sqlite::Db::limit_work).
        bool foreign = false;
    };

    explicit RunStore(const std::string& path);
    RunStore(const std::string& path, const Options& options);

    const std::string& path() const { return db_.path(); }
    bool read_only() const { return options_.read_only; }
    int busy_timeout_ms() const { return options_.busy_timeout_ms; }
    // The PRAGMA user_version found on open, before migrating.
    int opened_schema_version() const { return opened_version_; }
    // Runs marked INTERRUPTED by this open.
    const std::vector<std::int64_t>& interrupted_on_open() const { return interrupted_; }
    // True when a read-only open had to read the file without its -wal and -shm (they could not
    // be created: a read-only folder, a full disk); rows still in a -wal are then not seen.
    bool read_without_wal() const { return without_wal_; }

    // --- runs ---------------------------------------------------------------------------
    // Inserts a RUNNING run owned by this process (pid, hostname and the process's start time)
    // and returns its id, never one a purged run had.
    std::int64_t create_run(const RunInfo& info);
    void set_status(std::int64_t run_id, RunStatus status, std::optional<double> ended = {});
    void rename(std::int64_t run_id, const std::string& name);
    void set_tag(std::int64_t run_id, const std::string& key, const std::string& value = {});
    void remove_tag(std::int64_t run_id, const std::string& key);
    void set_note(std::int64_t run_id, const std::string& text);
    // The run's decision boundary at `step` (replacing an earlier one): an opaque blob that the
    // workbench encodes (app/gui/boundary_grid.h).
    void set_boundary(std::int64_t run_id, std::int64_t step, const std::vector<std::uint8_t>& blob);
    // Moves the run to the trash. A RUNNING run whose writer is alive (or runs on another
    // machine, where this process cannot tell) is refused with StoreError(InUse); one whose
    // writer died is marked INTERRUPTED first.
    void soft_delete(std::int64_t run_id);
    void restore(std::int64_t run_id);
    struct PurgeReport {
        int purged = 0;                           // runs removed with every row they own
        std::vector<std::int64_t> still_running;  // deleted runs kept: their writer is alive
    };
    // Removes soft-deleted runs and every row they own, except RUNNING runs whose writer is alive.
    PurgeReport purge();
    // Marks RUNNING runs owned by a dead process on this host as INTERRUPTED; returns their ids.
    // A process is the owner only when its pid and its start time both match what the run
    // recorded, so a pid reused by another process does not keep a crashed run RUNNING.
    std::vector<std::int64_t> mark_interrupted_runs();

    // --- queries (run_query.cpp) ---------------------------------------------------------
    std::vector<Run> list_runs(const RunFilter& filter = {});
    Run get_run(std::int64_t run_id);
    std::optional<std::int64_t> find_run_by_uuid(const std::string& uuid);
    std::vector<std::string> metric_keys(std::int64_t run_id);
    std::vector<MetricPoint> series(std::int64_t run_id, const std::string& key,
                                    std::optional<std::int64_t> step_lo = {},
                                    std::optional<std::int64_t> step_hi = {});
    // At most `buckets` buckets over [step_lo, step_hi] (default: the series' own range), each
    // with min/max/first/last/count. Reads per-block summaries and only the raw points of blocks
    // that straddle a bucket border, so 1M points cost about the same as 100k.
    std::vector<Bucket> downsample(std::int64_t run_id, const std::string& key, int buckets,
                                   std::optional<std::int64_t> step_lo = {},
                                   std::optional<std::int64_t> step_hi = {});
    std::vector<Event> events(std::int64_t run_id, const std::string& kind = {});
    // The stored decision boundary: its step and blob; nullopt when the run has none.
    std::optional<std::pair<std::int64_t, std::vector<std::uint8_t>>> boundary(std::int64_t run_id);
    std::vector<Histogram> histograms(std::int64_t run_id, std::optional<std::int64_t> step_lo = {},
                                      std::optional<std::int64_t> step_hi = {}, const std::string& layer = {},
                                      const std::string& kind = {});
    // The scaled recipe's statistics of the run (empty for other policies), ordered by step,
    // layer and operand. A damaged row (an unknown element format, a bad exponent histogram) is
    // a StoreError(Corrupt) naming the file, the table, the row and the field.
    std::vector<ScalingStatsRecord> scaling_stats(std::int64_t run_id) const;
    // Configuration keys whose values differ across the runs (missing counts as different).
    std::vector<ConfigDiffEntry> config_diff(const std::vector<std::int64_t>& run_ids);

    // --- comparison groups ----------------------------------------------------------------
    std::int64_t create_group(const std::string& name, const std::vector<std::int64_t>& run_ids);
    void add_to_group(std::int64_t group_id, const std::vector<std::int64_t>& run_ids);
    std::vector<ComparisonGroup> list_groups();
    void delete_group(std::int64_t group_id);

    // --- checkpoints (run_store_checkpoints.cpp) -----------------------------------------
    // Stores a checkpoint of the run and removes all but the newest `keep` of its checkpoints.
    void save_checkpoint(std::int64_t run_id, const TrainingCheckpoint& checkpoint, int keep = 2);
    // The run's newest checkpoint; nullopt when it has none.
    std::optional<TrainingCheckpoint> latest_checkpoint(std::int64_t run_id);
    // All its checkpoints, newest first (a resume falls back on an older one when the newest is
    // damaged). Each names itself in TrainingCheckpoint::source.
    std::vector<TrainingCheckpoint> checkpoints(std::int64_t run_id);
    // Takes an INTERRUPTED or STOPPED run back to resume it from its checkpoint at `step`: it
    // becomes RUNNING, owned by this process, and what it recorded after `step` (metrics and their
    // summaries, histograms, scaling statistics, events, the decision boundary) is removed, since
    // the resumed run records those steps again, bit for bit. StoreError(InUse) for a run whose
    // writer is alive, Invalid for a FINISHED or FAILED run.
    void reopen_for_resume(std::int64_t run_id, std::int64_t step);
    // The weights the run ended with (store schema 8); nullopt when it has none: it ended before
    // schema 8, before its first step, or failed where the engine could not hand them over, or
    // is still running. A damaged row is a StoreError(Corrupt) naming the file, table and field.
    std::optional<NetworkWeights> final_weights(std::int64_t run_id);

    // --- sweeps (run_store_sweeps.cpp) ----------------------------------------------------
    // Creates the sweep (its id, runs and created are ignored), or returns the id of the sweep
    // that already has its uuid.
    std::int64_t create_sweep(const SweepRecord& sweep);
    std::optional<std::int64_t> find_sweep_by_uuid(const std::string& uuid);
    // Records that planned index `index` of the sweep trained as run `run_id` (replacing an
    // earlier run of that index).
    void add_sweep_run(std::int64_t sweep_id, std::int64_t index, std::int64_t run_id);
    std::vector<SweepRecord> list_sweeps();
    SweepRecord get_sweep(std::int64_t sweep_id);
    // The sweep a run belongs to, with its index; nullopt for a run outside every sweep.
    struct SweepMembership {
        std::int64_t sweep_id = 0;
        std::int64_t index = 0;
    };
    std::optional<SweepMembership> sweep_of_run(std::int64_t run_id);

    // PRAGMA quick_check over the whole file (done on every open for writing unless
    // Options::verify_integrity is off). Throws StoreError(Corrupt) with SQLite's findings.
    void check_integrity();

    // The connection, for the bundle exporter and tests.
    sqlite::Db& db() { return db_; }

private:
    void open(const std::string& path);
    void open_for_reading(const std::string& path);
    void open_for_writing(const std::string& path, bool existed);
    void check_schema(const std::string& path);
    void migrate();
    void mark_interrupted(const std::vector<std::int64_t>& run_ids);
    void require_run(std::int64_t run_id);
    // Records this process as the run's writer (owner pid, host and start; run_store.cpp), for
    // reopen_for_resume, inside its transaction.
    void claim_run(std::int64_t run_id);

    Options options_;
    // mutable: const queries (scaling_stats) prepare statements on it too.
    mutable sqlite::Db db_;
    int opened_version_ = 0;
    std::vector<std::int64_t> interrupted_;
    bool without_wal_ = false;
};

}  // namespace mpwb
