// RunStore: opening (create, migrate, refuse what it cannot handle without touching the file),
// crash detection, and the mutations of runs and comparison groups.
#include "sessions/run_store.h"

#include "sessions/store_schema.h"

#include "core/common/utf8.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <signal.h>
#include <unistd.h>

namespace mpwb {

namespace fs = std::filesystem;

RunStatus parse_run_status(const std::string& text) {
    std::string up;
    for (char c : text) {
        up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    for (RunStatus s : {RunStatus::Running, RunStatus::Finished, RunStatus::Failed, RunStatus::Stopped,
                        RunStatus::Interrupted}) {
        if (up == run_status_name(s)) {
            return s;
        }
    }
    throw StoreError(
        StoreError::Kind::Invalid,
        "unknown run status '" + text + "' (expected RUNNING, FINISHED, FAILED, STOPPED or INTERRUPTED)");
}

void set_tag_filter(RunFilter& filter, const std::string& expression) {
    const auto eq = expression.find('=');
    if (eq == std::string::npos) {
        filter.tag_key = expression;
        filter.tag_value.reset();
    } else {
        filter.tag_key = expression.substr(0, eq);
        filter.tag_value = expression.substr(eq + 1);
    }
    if (filter.tag_key->empty()) {
        throw StoreError(StoreError::Kind::Invalid, "tag filter '" + expression + "' has an empty key");
    }
}

double store_now() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string default_database_path() {
    fs::path base;
    const char* xdg = std::getenv("XDG_DATA_HOME");
    // The XDG spec says relative values are invalid and must be ignored.
    if (xdg && *xdg && fs::path(xdg).is_absolute()) {
        base = xdg;
    } else {
        const char* home = std::getenv("HOME");
        if (!home || !*home) {
            throw StoreError(StoreError::Kind::NotFound,
                             "cannot find the default database location: neither XDG_DATA_HOME "
                             "nor HOME is set");
        }
        base = fs::path(home) / ".local" / "share";
    }
    const fs::path dir = base / "mpwb";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        throw StoreError(StoreError::Kind::Other,
                         "cannot create the data folder " + dir.string() + ": " + ec.message());
    }
    return (dir / "runs.sqlite").string();
}

namespace {

std::string make_uuid() {
    // Identity, not reproducibility: this must differ between runs with the same seed, so it
    // comes from the OS entropy source rather than the training RNG.
    static thread_local std::mt19937_64 gen{[] {
        std::random_device rd;
        return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
               static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }()};
    std::uint64_t hi = gen(), lo = gen();
    hi = (hi & ~0xF000ull) | 0x4000ull;        // version 4
    lo = (lo & ~(3ull << 62)) | (2ull << 62);  // RFC 4122 variant
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                  static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xffffffffffffull));
    return buf;
}

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) {
        return "unknown";
    }
    return buf;
}

// What tells this boot's process `pid` from a later one with the same pid: the boot id and the
// process's start time in clock ticks since boot (field 22 of /proc/PID/stat). Empty where
// /proc cannot say (then the pid alone is trusted).
std::string process_start_token(pid_t pid) {
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string boot_id;
    std::getline(boot, boot_id);
    std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(stat_file, stat);
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    const auto close = stat.rfind(')');
    if (boot_id.empty() || close == std::string::npos) return {};
    std::istringstream fields(stat.substr(close + 1));
    std::string field;
    for (int i = 3; i <= 22 && (fields >> field); ++i) {
        if (i == 22) return boot_id + ":" + field;
    }
    return {};
}

// Whether the process that writes a RUNNING run still does, judged from this machine.
enum class WriterState {
    Alive,      // this host, pid alive with the recorded start time
    Dead,       // this host, no such process (or the pid now belongs to another one)
    Elsewhere,  // written on another host: cannot be judged from here
    Unknown     // no writer recorded (files from before schema 2)
};

WriterState writer_state(const std::optional<std::int64_t>& pid, const std::string& host,
                         const std::string& start) {
    if (!pid || *pid <= 0 || host.empty()) return WriterState::Unknown;
    if (host != host_name()) return WriterState::Elsewhere;
    if (kill(static_cast<pid_t>(*pid), 0) == -1 && errno == ESRCH) return WriterState::Dead;
    if (!start.empty()) {
        const std::string now = process_start_token(static_cast<pid_t>(*pid));
        if (!now.empty() && now != start) return WriterState::Dead;
    }
    return WriterState::Alive;
}

// The writer of one run as stored: status and owner columns.
struct RunOwner {
    bool running = false;
    std::optional<std::int64_t> pid;
    std::string host, start;
};

constexpr const char* kOwnerColumns =
    "status='RUNNING', owner_pid, coalesce(owner_host,''), coalesce(owner_start,'')";

RunOwner read_owner(const sqlite::Stmt& s, int first_column) {
    return {s.col_int(first_column) != 0, s.col_opt_int(first_column + 1), s.col_text(first_column + 2),
            s.col_text(first_column + 3)};
}

// Kinds of failure that mean "the -shm/-wal cannot be used here", after which a read-only open
// reads the file as immutable; corruption, a newer schema and bad arguments are not among them.
bool is_wal_trouble(StoreError::Kind kind) {
    return kind == StoreError::Kind::Other || kind == StoreError::Kind::NotFound ||
           kind == StoreError::Kind::ReadOnly || kind == StoreError::Kind::DiskFull;
}

}  // namespace

RunStore::RunStore(const std::string& path) : RunStore(path, Options{}) {}

RunStore::RunStore(const std::string& path, const Options& options) : options_(options) { open(path); }

void RunStore::open(const std::string& path) {
    if (path.empty()) {
        throw StoreError(StoreError::Kind::Invalid, "database path is empty");
    }
    const bool exists = fs::exists(path);
    if (options_.read_only || !options_.create) {
        if (!exists) {
            throw StoreError(StoreError::Kind::NotFound, "database " + path + " does not exist");
        }
    }
    if (options_.read_only) {
        open_for_reading(path);
    } else {
        open_for_writing(path, exists);
    }
    if (options_.foreign) db_.limit_work(sqlite::work_steps_for_file(path), "database " + path);
}

void RunStore::open_for_reading(const std::string& path) {
    const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;
    try {
        db_ = sqlite::Db(path, flags);
        db_.set_busy_timeout(options_.busy_timeout_ms);
        check_schema(path);
    } catch (const StoreError& e) {
        // A WAL database needs its -shm even to be read; where that cannot be created or grown
        // (a read-only folder, a full disk) the file is read as it is, without the WAL.
        if (!is_wal_trouble(e.kind())) {
            throw;
        }
        db_ = sqlite::Db(sqlite::immutable_uri(path), flags, path);
        db_.set_busy_timeout(options_.busy_timeout_ms);
        check_schema(path);
        without_wal_ = true;
    }
    db_.exec("PRAGMA foreign_keys=ON");
}

void RunStore::open_for_writing(const std::string& path, bool existed) {
    const int flags =
        SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_READWRITE | (options_.create ? SQLITE_OPEN_CREATE : 0);
    db_ = sqlite::Db(path, flags);
    db_.set_busy_timeout(options_.busy_timeout_ms);
    // SQLite silently falls back to read-only when the file is not writable (permissions, a
    // read-only mount); a writer must hear that now, not at its first commit.
    if (sqlite3_db_readonly(db_.handle(), "main") == 1) {
        throw StoreError(StoreError::Kind::ReadOnly, "database " + path + " is read-only");
    }
    check_schema(path);
    // Nothing is written to a damaged file: not the WAL switch, not a migration, not a run.
    if (existed && options_.verify_integrity) {
        check_integrity();
    }
    const std::string mode = db_.query_text("PRAGMA journal_mode=WAL");
    if (mode != "wal") {
        throw StoreError(StoreError::Kind::Other,
                         "database " + path + ": cannot switch to WAL mode (got '" + mode + "')");
    }
    db_.exec("PRAGMA synchronous=NORMAL");
    migrate();
    db_.exec("PRAGMA foreign_keys=ON");
    if (options_.detect_interrupted) {
        try {
            interrupted_ = mark_interrupted_runs();
        } catch (const StoreError& e) {
            // Another process is writing right now: detection waits for the next open.
            if (e.kind() != StoreError::Kind::Locked) {
                throw;
            }
        }
    }
}

// Reads the header and the schema version: what detects a file that is not a database (or a
// damaged schema) before anything is written to it. Refuses files this build cannot use.
void RunStore::check_schema(const std::string& path) {
    // The default 2 MiB page cache cannot hold the index pages of a long series, and
    // downsampling re-reads them on every zoom; 64 MiB is a cap, not an allocation.
    db_.exec("PRAGMA cache_size=-65536");
    opened_version_ = static_cast<int>(db_.query_int("PRAGMA user_version", 0));
    const auto objects = db_.query_int("SELECT count(*) FROM sqlite_master", 0);
    const int current = schema_version();
    if (opened_version_ > current) {
        throw StoreError(StoreError::Kind::NewerSchema,
                         "database schema version " + std::to_string(opened_version_) +
                             " is newer than this build supports (" + std::to_string(current) +
                             "); upgrade MP Workbench");
    }
    if (opened_version_ == 0 && objects > 0) {
        throw StoreError(StoreError::Kind::Invalid,
                         "database " + path +
                             " is not an MP Workbench run store (it has tables but no schema "
                             "version)");
    }
    // Opened for writing, an empty file becomes a store; read, it holds nothing to read.
    if (options_.read_only && opened_version_ == 0) {
        throw StoreError(
            StoreError::Kind::Invalid,
            "database " + path + " is empty: no run was ever recorded in it, so it is not a run store");
    }
    if (options_.foreign) {
        if (const std::string difference = schema_difference(db_, "main", opened_version_);
            !difference.empty())
            throw StoreError(StoreError::Kind::Invalid,
                             "database " + path + " is not a run store MP Workbench wrote: " + difference);
    }
    if (options_.read_only && opened_version_ < kOldestReadableSchema) {
        throw StoreError(StoreError::Kind::ReadOnly,
                         "database " + path + " has schema version " + std::to_string(opened_version_) +
                             ", older than this build's " + std::to_string(current) +
                             "; open it once for writing to upgrade it");
    }
}

void RunStore::migrate() {
    const auto& steps = schema_migrations();
    int version = opened_version_;
    // A step may rebuild a table that others reference (schema 5 rebuilds runs); with foreign
    // keys on, dropping the old table would cascade into every child row. The pragma has no
    // effect inside a transaction, so it is set around the steps.
    db_.exec("PRAGMA foreign_keys=OFF");
    while (version < static_cast<int>(steps.size())) {
        sqlite::Transaction tx(db_, "migrate schema");
        // Re-read under the write lock: another process may have migrated meanwhile.
        version = static_cast<int>(db_.query_int("PRAGMA user_version", 0));
        if (version >= static_cast<int>(steps.size())) {
            break;
        }
        db_.exec(steps[static_cast<std::size_t>(version)],
                 "migrating schema to version " + std::to_string(version + 1));
        db_.exec("PRAGMA user_version=" + std::to_string(version + 1));
        tx.commit();
        ++version;
    }
}

std::vector<std::int64_t> RunStore::mark_interrupted_runs() {
    std::vector<std::int64_t> dead;
    {
        sqlite::Stmt s(db_, std::string("SELECT id, ") + kOwnerColumns + " FROM runs WHERE status='RUNNING'");
        while (s.step("finding running runs")) {
            const RunOwner owner = read_owner(s, 1);
            if (writer_state(owner.pid, owner.host, owner.start) == WriterState::Dead) {
                dead.push_back(s.col_int(0));
            }
        }
    }
    if (!dead.empty()) {
        sqlite::Transaction tx(db_, "marking interrupted runs");
        mark_interrupted(dead);
        tx.commit();
    }
    return dead;
}

// The run ends where its last sign of life was: its newest metric or event.
void RunStore::mark_interrupted(const std::vector<std::int64_t>& run_ids) {
    sqlite::Stmt up(db_,
                    "UPDATE runs SET status='INTERRUPTED', ended=coalesce("
                    "(SELECT max(wall_time) FROM latest_metrics WHERE run_id=?1),"
                    "(SELECT max(time) FROM events WHERE run_id=?1), started, created) "
                    "WHERE id=?1 AND status='RUNNING'");
    for (auto id : run_ids) {
        up.bind(1, id);
        up.run("marking run interrupted");
        up.reset();
    }
}

void RunStore::require_run(std::int64_t run_id) {
    sqlite::Stmt s(db_, "SELECT 1 FROM runs WHERE id=?");
    s.bind(1, run_id);
    if (!s.step()) {
        throw StoreError(StoreError::Kind::NotFound,
                         "run " + std::to_string(run_id) + " does not exist in " + path());
    }
}

void require_utf8(std::string_view text, std::string_view what) {
    const std::string problem = utf8_problem(text);
    if (problem.empty()) return;
    constexpr std::size_t kShown = 60;
    const std::string shown =
        replace_invalid_utf8(text.substr(0, kShown)) + (text.size() > kShown ? "..." : "");
    throw StoreError(StoreError::Kind::Invalid,
                     std::string(what) + " '" + shown + "' is refused: " + problem);
}

std::int64_t RunStore::create_run(const RunInfo& info) {
    for (const auto& [text, what] : {std::pair{&info.name, "run name"},
                                     {&info.uuid, "run uuid"},
                                     {&info.dataset, "dataset"},
                                     {&info.precision, "precision"},
                                     {&info.backend, "backend"},
                                     {&info.device, "device"},
                                     {&info.machine, "machine"},
                                     {&info.config_json, "configuration"},
                                     {&info.network_json, "network"},
                                     {&info.versions_json, "versions"}})
        require_utf8(*text, what);
    const std::string uuid = info.uuid.empty() ? make_uuid() : info.uuid;
    sqlite::Stmt s(db_,
                   "INSERT INTO runs(uuid, name, status, config_json, network_json, dataset, "
                   "precision, backend, device, versions_json, machine, seed, created, started, "
                   "owner_pid, owner_host, owner_start) VALUES(?,?,'RUNNING',?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    const double now = store_now();
    s.bind(1, uuid).bind(2, info.name);
    s.bind(3, info.config_json.empty() ? std::string("{}") : info.config_json);
    s.bind(4, info.network_json.empty() ? std::string("{}") : info.network_json);
    s.bind(5, info.dataset).bind(6, info.precision).bind(7, info.backend).bind(8, info.device);
    s.bind(9, info.versions_json.empty() ? std::string("{}") : info.versions_json);
    s.bind(10, info.machine).bind(11, info.seed).bind(12, now).bind(13, now);
    s.bind(14, static_cast<std::int64_t>(getpid())).bind(15, host_name());
    s.bind(16, process_start_token(getpid()));
    try {
        s.run("creating run");
    } catch (const StoreError& e) {
        if (e.kind() == StoreError::Kind::Other &&
            sqlite3_extended_errcode(db_.handle()) == SQLITE_CONSTRAINT_UNIQUE) {
            throw StoreError(StoreError::Kind::Invalid,
                             "a run with uuid " + uuid + " already exists in " + path());
        }
        throw;
    }
    return db_.last_insert_rowid();
}

void RunStore::claim_run(std::int64_t run_id) {
    sqlite::Stmt s(db_, "UPDATE runs SET owner_pid=?, owner_host=?, owner_start=? WHERE id=?");
    s.bind(1, static_cast<std::int64_t>(getpid())).bind(2, host_name());
    s.bind(3, process_start_token(getpid())).bind(4, run_id).run("taking over run");
}

namespace {
void expect_changed(sqlite::Db& db, std::int64_t run_id) {
    if (db.changes() == 0) {
        throw StoreError(StoreError::Kind::NotFound,
                         "run " + std::to_string(run_id) + " does not exist in " + db.path());
    }
}
}  // namespace

void RunStore::set_status(std::int64_t run_id, RunStatus status, std::optional<double> ended) {
    sqlite::Stmt s(db_, "UPDATE runs SET status=?, ended=? WHERE id=?");
    s.bind(1, to_string(status));
    if (status == RunStatus::Running) {
        s.bind_null(2);
    } else {
        s.bind(2, ended.value_or(store_now()));
    }
    s.bind(3, run_id).run("setting run status");
    expect_changed(db_, run_id);
}

void RunStore::rename(std::int64_t run_id, const std::string& name) {
    require_utf8(name, "run name");
    sqlite::Stmt s(db_, "UPDATE runs SET name=? WHERE id=?");
    s.bind(1, name).bind(2, run_id).run("renaming run");
    expect_changed(db_, run_id);
}

void RunStore::set_tag(std::int64_t run_id, const std::string& key, const std::string& value) {
    if (key.empty()) {
        throw StoreError(StoreError::Kind::Invalid, "tag key is empty");
    }
    require_utf8(key, "tag key");
    require_utf8(value, "tag value");
    require_run(run_id);
    sqlite::Stmt s(db_,
                   "INSERT INTO tags(run_id, key, value) VALUES(?,?,?) "
                   "ON CONFLICT(run_id, key) DO UPDATE SET value=excluded.value");
    s.bind(1, run_id).bind(2, key).bind(3, value).run("setting tag");
}

void RunStore::remove_tag(std::int64_t run_id, const std::string& key) {
    sqlite::Stmt s(db_, "DELETE FROM tags WHERE run_id=? AND key=?");
    s.bind(1, run_id).bind(2, key).run("removing tag");
}

void RunStore::set_boundary(std::int64_t run_id, std::int64_t step, const std::vector<std::uint8_t>& blob) {
    require_run(run_id);
    sqlite::Stmt s(db_,
                   "INSERT INTO boundaries(run_id, step, blob) VALUES(?,?,?) "
                   "ON CONFLICT(run_id) DO UPDATE SET step=excluded.step, blob=excluded.blob");
    s.bind(1, run_id)
        .bind(2, step)
        .bind_blob(3, blob.data(), blob.size())
        .run("storing the decision boundary");
}

void RunStore::set_note(std::int64_t run_id, const std::string& text) {
    require_utf8(text, "note");
    require_run(run_id);
    if (text.empty()) {
        sqlite::Stmt s(db_, "DELETE FROM notes WHERE run_id=?");
        s.bind(1, run_id).run("clearing note");
        return;
    }
    sqlite::Stmt s(db_,
                   "INSERT INTO notes(run_id, text, updated) VALUES(?,?,?) "
                   "ON CONFLICT(run_id) DO UPDATE SET text=excluded.text, "
                   "updated=excluded.updated");
    s.bind(1, run_id).bind(2, text).bind(3, store_now()).run("setting note");
}

void RunStore::soft_delete(std::int64_t run_id) {
    sqlite::Transaction tx(db_, "deleting run");
    RunOwner owner;
    {
        sqlite::Stmt s(db_, std::string("SELECT ") + kOwnerColumns + " FROM runs WHERE id=?");
        s.bind(1, run_id);
        if (!s.step("deleting run")) {
            throw StoreError(StoreError::Kind::NotFound,
                             "run " + std::to_string(run_id) + " does not exist in " + path());
        }
        owner = read_owner(s, 0);
    }
    if (owner.running) {
        const std::string run = "run " + std::to_string(run_id);
        const std::string writer = "process " + std::to_string(owner.pid.value_or(0)) + " on " + owner.host;
        switch (writer_state(owner.pid, owner.host, owner.start)) {
            case WriterState::Alive:
                throw StoreError(StoreError::Kind::InUse,
                                 run + " is still running (" + writer + "); stop it, then delete it");
            case WriterState::Elsewhere:
                throw StoreError(StoreError::Kind::InUse,
                                 run + " is RUNNING on another machine (" + writer +
                                     "): whether it is still writing cannot be told from here; delete it "
                                     "there, or once it has ended");
            case WriterState::Dead:
                mark_interrupted({run_id});
                break;
            case WriterState::Unknown:
                break;  // no writer was ever recorded: nothing can still be writing through an id
        }
    }
    sqlite::Stmt s(db_, "UPDATE runs SET deleted=1 WHERE id=?");
    s.bind(1, run_id).run("deleting run");
    tx.commit();
}

void RunStore::restore(std::int64_t run_id) {
    sqlite::Stmt s(db_, "UPDATE runs SET deleted=0 WHERE id=?");
    s.bind(1, run_id).run("restoring run");
    expect_changed(db_, run_id);
}

RunStore::PurgeReport RunStore::purge() {
    sqlite::Transaction tx(db_, "purging deleted runs");
    PurgeReport report;
    std::vector<std::int64_t> dead;
    {
        sqlite::Stmt s(db_, std::string("SELECT id, ") + kOwnerColumns +
                                " FROM runs WHERE deleted=1 AND status='RUNNING' ORDER BY id");
        while (s.step("purging deleted runs")) {
            const RunOwner owner = read_owner(s, 1);
            const WriterState state = writer_state(owner.pid, owner.host, owner.start);
            if (state == WriterState::Alive || state == WriterState::Elsewhere) {
                report.still_running.push_back(s.col_int(0));
            } else if (state == WriterState::Dead) {
                dead.push_back(s.col_int(0));
            }
        }
    }
    mark_interrupted(dead);
    std::string keep;
    for (auto id : report.still_running) {
        keep += (keep.empty() ? "" : ",") + std::to_string(id);
    }
    // Child rows go through ON DELETE CASCADE (foreign_keys is on for every connection).
    db_.exec(
        "DELETE FROM runs WHERE deleted=1" + (keep.empty() ? std::string() : " AND id NOT IN (" + keep + ")"),
        "purging deleted runs");
    report.purged = db_.changes();
    tx.commit();
    return report;
}

std::int64_t RunStore::create_group(const std::string& name, const std::vector<std::int64_t>& run_ids) {
    if (name.empty()) {
        throw StoreError(StoreError::Kind::Invalid, "comparison group name is empty");
    }
    require_utf8(name, "comparison group name");
    sqlite::Transaction tx(db_, "creating comparison group");
    sqlite::Stmt s(db_, "INSERT INTO comparison_groups(name, created) VALUES(?,?)");
    s.bind(1, name).bind(2, store_now()).run("creating comparison group");
    const auto id = db_.last_insert_rowid();
    for (auto run : run_ids) {
        require_run(run);
    }
    sqlite::Stmt m(db_, "INSERT OR IGNORE INTO comparison_members(group_id, run_id) VALUES(?,?)");
    for (auto run : run_ids) {
        m.bind(1, id).bind(2, run).run("adding run to group");
        m.reset();
    }
    tx.commit();
    return id;
}

void RunStore::add_to_group(std::int64_t group_id, const std::vector<std::int64_t>& run_ids) {
    sqlite::Transaction tx(db_, "adding runs to comparison group");
    {
        sqlite::Stmt g(db_, "SELECT 1 FROM comparison_groups WHERE id=?");
        g.bind(1, group_id);
        if (!g.step()) {
            throw StoreError(StoreError::Kind::NotFound,
                             "comparison group " + std::to_string(group_id) + " does not exist");
        }
    }
    for (auto run : run_ids) {
        require_run(run);
    }
    sqlite::Stmt m(db_, "INSERT OR IGNORE INTO comparison_members(group_id, run_id) VALUES(?,?)");
    for (auto run : run_ids) {
        m.bind(1, group_id).bind(2, run).run("adding run to group");
        m.reset();
    }
    tx.commit();
}

std::vector<ComparisonGroup> RunStore::list_groups() {
    std::vector<ComparisonGroup> out;
    sqlite::Stmt s(db_, "SELECT id, name, created FROM comparison_groups ORDER BY created, id");
    while (s.step("listing comparison groups")) {
        out.push_back({s.col_int(0), s.col_text(1), s.col_double(2), {}});
    }
    sqlite::Stmt m(db_, "SELECT run_id FROM comparison_members WHERE group_id=? ORDER BY run_id");
    for (auto& g : out) {
        m.bind(1, g.id);
        while (m.step("listing group members")) {
            g.run_ids.push_back(m.col_int(0));
        }
        m.reset();
    }
    return out;
}

void RunStore::delete_group(std::int64_t group_id) {
    sqlite::Stmt s(db_, "DELETE FROM comparison_groups WHERE id=?");
    s.bind(1, group_id).run("deleting comparison group");
    if (db_.changes() == 0) {
        throw StoreError(StoreError::Kind::NotFound,
                         "comparison group " + std::to_string(group_id) + " does not exist");
    }
}

void RunStore::check_integrity() {
    const std::string findings = sqlite::integrity_findings(db_);
    if (!findings.empty()) {
        throw StoreError(StoreError::Kind::Corrupt, "database " + path() + " is corrupt: " + findings);
    }
}

}  // namespace mpwb
