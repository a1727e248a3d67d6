// Run-store options shared by train and compare: where runs are recorded, under which name and
// tags, or not at all. The database is opened and write-checked before any data loads, so a
// store problem (locked, read-only, corrupt, too new) costs no training time.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/train/trainer.h"
#include "sessions/run_recorder.h"

namespace mpwb::cli {

// What a recorder may need beyond StoreOptions: the run a resumed trainer continues
// (RunRecorder::Options::resume_run_id) and a callback once the run has its id.
struct RecorderExtras {
    std::int64_t resume_run_id = 0;
    std::function<void(std::int64_t run_id)> on_created;
};

struct StoreOptions {
    std::string db;  // empty: default_database_path()
    bool no_store = false;
    int busy_timeout_ms = RunStore::Options{}.busy_timeout_ms;  // the recorder's writes
    std::string run_name;
    std::vector<std::string> tags;  // key or key=value

    void add_to(CLI::App& cmd);
    // Null with --no-store. `stop_target` is stopped when recording cannot go on; it may be set
    // after this call (the recorder's callbacks only run inside Trainer::run).
    std::unique_ptr<RunRecorder> open_recorder(const std::string& default_name, const std::string& preset,
                                               std::optional<std::int64_t> group_id, Trainer** stop_target,
                                               const RecorderExtras& extras = {}) const;
    std::string database_path() const;
};

// The database a command reads: `db`, else default_database_path().
std::string resolve_database_path(const std::string& db);

// Opens the store for a command. `write`: the command changes the store. A missing file is an
// error (not silently created) except where `create` says so. A read falls back to a read-only
// open when the file cannot be written (a damaged file is said so once on stderr).
std::unique_ptr<RunStore> open_store_for_command(const std::string& db, bool write, bool create = false);

// "~/..." for paths under $HOME: shorter, and what a user would type.
std::string display_path(const std::string& path);

}  // namespace mpwb::cli
