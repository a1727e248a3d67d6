// Run-store options.
#include "app/cli/store_options.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/common/error.h"
#include "core/common/utf8.h"
#include "sessions/run_store.h"

namespace mpwb::cli {

std::string display_path(const std::string& path) {
    const char* home = std::getenv("HOME");
    if (home && *home) {
        const std::string h = std::string(home) + "/";
        if (path.rfind(h, 0) == 0) return "~/" + path.substr(h.size());
    }
    return path;
}

void StoreOptions::add_to(CLI::App& cmd) {
    auto* db_option =
        cmd.add_option("--db", db, "Run database to record into (default: $XDG_DATA_HOME/mpwb/runs.sqlite)");
    cmd.add_flag("--no-store", no_store, "Do not record the run")->excludes(db_option);
    cmd.add_option("--run-name", run_name, "Name of the recorded run (default: preset and precision)");
    cmd.add_option("--tag", tags, "Tag the recorded run: key or key=value (repeatable)");
}

std::string StoreOptions::database_path() const { return db.empty() ? default_database_path() : db; }

std::unique_ptr<RunRecorder> StoreOptions::open_recorder(const std::string& default_name,
                                                         const std::string& preset,
                                                         std::optional<std::int64_t> group_id,
                                                         Trainer** stop_target,
                                                         const RecorderExtras& extras) const {
    if (no_store) return nullptr;
    // Refused here, before anything trains, rather than by the store when the run starts.
    if (const std::string problem = utf8_problem(run_name); !problem.empty())
        throw ConfigError("--run-name: " + problem);
    for (const auto& t : tags)
        if (const std::string problem = utf8_problem(t); !problem.empty())
            throw ConfigError("--tag: " + problem);
    RunRecorder::Options ro;
    ro.db_path = db;
    ro.writer.busy_timeout_ms = busy_timeout_ms;
    ro.name = run_name.empty() ? default_name : run_name;
    ro.group_id = group_id;
    ro.resume_run_id = extras.resume_run_id;
    ro.tags["preset"] = preset;
    for (const auto& t : tags) {
        const auto eq = t.find('=');
        const std::string key = t.substr(0, eq);
        if (key.empty()) throw ConfigError("--tag '" + t + "' has an empty key (expected key or key=value)");
        ro.tags[key] = eq == std::string::npos ? std::string() : t.substr(eq + 1);
    }
    auto path = std::make_shared<std::string>();
    ro.on_created = [path, resumed = extras.resume_run_id > 0, then = extras.on_created](std::int64_t id) {
        std::fprintf(stderr, "%s run %lld in %s\n", resumed ? "continuing" : "recording",
                     static_cast<long long>(id), display_path(*path).c_str());
        if (then) then(id);
    };
    // A resumed run exists only in its store: --no-store or another --db cannot continue it.
    const bool resumed = extras.resume_run_id > 0;
    ro.on_failure = [stop_target, resumed](const std::string& message) {
        std::fprintf(
            stderr, "mpwb-cli: error: %s; %s\n", message.c_str(),
            resumed ? "nothing was trained" : "stopping (use --no-store to train without recording)");
        if (stop_target && *stop_target) (*stop_target)->stop();
    };
    try {
        auto recorder = std::make_unique<RunRecorder>(std::move(ro));
        *path = recorder->db_path();
        return recorder;
    } catch (const StoreError& e) {
        throw StoreError(e.kind(), std::string(e.what()) + "; nothing was trained" +
                                       (resumed ? ""
                                                : " (--db PATH records elsewhere, --no-store trains "
                                                  "without recording)"));
    }
}

std::string resolve_database_path(const std::string& db) { return db.empty() ? default_database_path() : db; }

namespace {

// Failures of a read-write open after which a read-only open may still succeed: the file or
// its folder is not writable, another process writes, the disk is full, the -shm cannot be made.
bool can_still_read(StoreError::Kind kind) {
    using K = StoreError::Kind;
    return kind == K::ReadOnly || kind == K::Locked || kind == K::DiskFull || kind == K::Other ||
           kind == K::Corrupt;
}

}  // namespace

std::unique_ptr<RunStore> open_store_for_command(const std::string& db, bool write, bool create) {
    const std::string path = resolve_database_path(db);
    RunStore::Options o;
    o.create = create;
    if (!create && !std::filesystem::exists(path))
        throw StoreError(StoreError::Kind::NotFound,
                         "database " + path + " does not exist (train a run first, or pass --db)");
    try {
        return std::make_unique<RunStore>(path, o);
    } catch (const StoreError& e) {
        if (write || !can_still_read(e.kind())) throw;
        // Reading goes on without the write-side work (marking crashed runs INTERRUPTED): a
        // damaged file is still listed so its runs can be got out, and it is said so once.
        if (e.kind() == StoreError::Kind::Corrupt)
            std::fprintf(stderr, "mpwb-cli: warning: %s; reading it anyway, nothing is written to it\n",
                         e.what());
        o.read_only = true;
        auto store = std::make_unique<RunStore>(path, o);
        if (store->read_without_wal())
            std::fprintf(
                stderr,
                "mpwb-cli: note: %s was read without its -wal file (the folder is read-only or the disk "
                "is full); rows a running writer has not yet checkpointed are not shown\n",
                path.c_str());
        return store;
    }
}

}  // namespace mpwb::cli
