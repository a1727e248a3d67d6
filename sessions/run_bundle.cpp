// Bundle export/import through ATTACH, so rows move inside SQLite without a round trip through
// C++; column lists come from PRAGMA table_info so an older bundle (fewer columns) still imports.
#include "sessions/run_bundle.h"

#include "core/common/text_format.h"

#include "sessions/file_identity.h"
#include "sessions/final_weights_rows.h"
#include "sessions/scaling_stats_rows.h"
#include "sessions/scratch_dir.h"
#include "sessions/store_schema.h"
#include "sessions/sweep_spec.h"

#include "core/common/json_input.h"
#include "core/common/utf8.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <filesystem>
#include <fstream>
#include <set>

namespace mpwb {

namespace fs = std::filesystem;

namespace {

constexpr const char* kBundleFormat = "mpwb-run-bundle";
constexpr int kBundleFormatVersion = 1;
// The marker table that makes a store file a bundle.
constexpr const char* kBundleInfoSql = "CREATE TABLE bundle_info(key TEXT PRIMARY KEY, value TEXT NOT NULL)";

// Tables owned by a run, keyed by run_id.
const std::vector<std::string> kRunTables = {
    "metrics",    "latest_metrics", "metric_blocks", "histograms",          "events", "tags", "notes",
    "boundaries", "scaling_stats",  "final_weights", "final_weight_tensors"};

std::vector<std::string> columns(sqlite::Db& db, const std::string& schema, const std::string& table) {
    sqlite::Stmt s(db, "PRAGMA " + schema + ".table_info(" + table + ")");
    std::vector<std::string> out;
    while (s.step("reading table columns")) {
        out.push_back(s.col_text(1));
    }
    return out;
}

// Columns present in both, in `a`'s order, minus `skip`.
std::vector<std::string> common_columns(sqlite::Db& db, const std::string& a, const std::string& b,
                                        const std::string& table, const std::set<std::string>& skip) {
    const auto cb = columns(db, b, table);
    std::vector<std::string> out;
    for (const auto& c : columns(db, a, table)) {
        if (!skip.count(c) && std::find(cb.begin(), cb.end(), c) != cb.end()) {
            out.push_back(c);
        }
    }
    return out;
}

bool has_table(sqlite::Db& db, const std::string& schema, const std::string& table) {
    sqlite::Stmt s(db, "SELECT 1 FROM " + schema + ".sqlite_master WHERE type='table' AND name=?");
    s.bind(1, table);
    return s.step("reading tables of " + schema);
}

std::string join(const std::vector<std::string>& cols, const std::string& prefix = {}) {
    std::string s;
    for (const auto& c : cols) {
        s += (s.empty() ? "" : ", ") + prefix + "\"" + c + "\"";
    }
    return s;
}

// A number in the CSV and the bundle marker: the shortest text that reads back as the same
// double (what %.17g gave, minus the noise digits); NaN keeps the "NaN" spelling earlier
// exports used, which R and spreadsheets read.
std::string num(double v) { return std::isnan(v) ? "NaN" : shortest_text(v); }

void remove_db_files(const std::string& path) {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        fs::remove(path + suffix, ec);
    }
}

StoreError not_a_bundle(const std::string& path, const std::string& why) {
    return StoreError(StoreError::Kind::NotABundle,
                      path + " is not an MP Workbench run bundle (" + why + ")");
}

// The bundle read-only, its work bounded by its size: a bundle is a file from elsewhere.
sqlite::Db open_bundle(const std::string& path) {
    sqlite::Db db(path, SQLITE_OPEN_READONLY);
    db.limit_work(sqlite::work_steps_for_file(path), "bundle " + path);
    return db;
}

// Opens the file read-only and checks the marker and the schema (exactly the store's at the
// bundle's version, plus the marker table) before reading any table; throws the import errors.
// Returns the connection, for the checks of the bundle's rows.
sqlite::Db validate_bundle(const std::string& path) {
    if (!fs::exists(path)) {
        throw StoreError(StoreError::Kind::NotFound, "bundle " + path + " does not exist");
    }
    if (fs::is_directory(path)) {
        throw not_a_bundle(path, "it is a folder");
    }
    sqlite::Db db;
    try {
        db = open_bundle(path);
        db.query_int("SELECT count(*) FROM sqlite_master");
    } catch (const StoreError& e) {
        if (e.kind() == StoreError::Kind::Corrupt) {
            throw not_a_bundle(path, "not an SQLite database");
        }
        throw;
    }
    if (db.query_int("SELECT count(*) FROM sqlite_master WHERE type='table' AND "
                     "name='bundle_info'") == 0) {
        throw not_a_bundle(path, "no bundle marker");
    }
    const int version = static_cast<int>(db.query_int("PRAGMA user_version"));
    if (version > schema_version()) {
        throw StoreError(StoreError::Kind::NewerSchema,
                         "bundle " + path + ": database schema version " + std::to_string(version) +
                             " is newer than this build supports (" + std::to_string(schema_version()) +
                             "); upgrade MP Workbench");
    }
    if (version < 2) {
        throw not_a_bundle(path, "schema version " + std::to_string(version) + " is too old");
    }
    if (const std::string difference = schema_difference(db, "main", version, kBundleInfoSql);
        !difference.empty()) {
        throw not_a_bundle(path, difference);
    }
    {
        sqlite::Stmt s(db, "SELECT value FROM bundle_info WHERE key='format'");
        if (!s.step() || s.col_text(0) != kBundleFormat) {
            throw not_a_bundle(path, "wrong bundle marker");
        }
    }
    return db;
}

// Every JSON text a bundle carries, parsed under the project's limits before anything is
// imported: a crafted 100k-deep value imported fine and then crashed runs show, runs compare
// and mpwb report (each walks stored JSON recursively).
void check_bundle_json(sqlite::Db& db, const std::string& path) {
    auto check = [&](const std::string& text, const std::string& where) {
        try {
            check_json_text(text, "bundle " + path + ", " + where);
        } catch (const JsonInputError& e) {
            throw StoreError(StoreError::Kind::Invalid, std::string(e.what()) + "; nothing was imported");
        }
    };
    sqlite::Stmt runs(db, "SELECT uuid, config_json, network_json, versions_json FROM runs");
    while (runs.step("reading bundle runs")) {
        const std::string run = "run " + runs.col_text(0);
        check(runs.col_text(1), run + ", config_json");
        check(runs.col_text(2), run + ", network_json");
        check(runs.col_text(3), run + ", versions_json");
    }
    if (has_table(db, "main", "sweeps")) {
        sqlite::Stmt sweeps(db, "SELECT uuid, spec_json FROM sweeps");
        while (sweeps.step("reading bundle sweeps"))
            check(sweeps.col_text(1), "sweep " + sweeps.col_text(0) + ", spec_json");
    }
    sqlite::Stmt events(
        db, "SELECT e.id, coalesce(r.uuid, ''), e.json FROM events e LEFT JOIN runs r ON r.id = e.run_id");
    while (events.step("reading bundle events")) {
        check(events.col_text(2), "run " + events.col_text(1) + ", event " + events.col_text(0) + " json");
    }
}

// Every scaling_stats row a bundle carries, decoded as RunStore::scaling_stats will decode it,
// before anything is imported: a damaged row would import and then fail every reader. A bundle
// from before schema 6 has no such table and passes.
void check_bundle_scaling_stats(sqlite::Db& db, const std::string& path) {
    if (db.query_int("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='scaling_stats'") == 0)
        return;
    sqlite::Stmt rows(
        db, "SELECT " + scaling_stats_columns(has_recipe_columns(db)) +
                ", s.id, coalesce(r.uuid, '') FROM scaling_stats s LEFT JOIN runs r ON r.id = s.run_id");
    while (rows.step("reading bundle scaling statistics")) {
        const std::string what = "bundle " + path + ": table scaling_stats, row " +
                                 std::to_string(rows.col_int(18)) + " (run " + rows.col_text(19) + ")";
        try {
            (void)read_scaling_stats_row(rows, what);
        } catch (const DataError& e) {
            throw StoreError(StoreError::Kind::Invalid, std::string(e.what()) + "; nothing was imported");
        }
    }
}

// Every final weights row a bundle carries, checked as RunStore::final_weights reads it (shapes,
// sizes, limits; the values themselves are not loaded), before anything is imported: a hostile
// size must never reach an export. Tensor rows without their run's final_weights row are refused
// too. A bundle from before schema 8 has no such tables and passes.
void check_bundle_final_weights(sqlite::Db& db, const std::string& path) {
    if (!has_final_weights_tables(db, "main")) return;
    sqlite::Stmt runs(db, "SELECT run_id FROM final_weights UNION SELECT run_id FROM final_weight_tensors");
    while (runs.step("reading bundle final weights")) {
        const std::int64_t run_id = runs.col_int(0);
        try {
            if (!read_final_weights(db, "main", run_id, "bundle " + path, false))
                throw StoreError(StoreError::Kind::Corrupt,
                                 "bundle " + path + ": table final_weight_tensors, run " +
                                     std::to_string(run_id) + ": tensors without a row in final_weights");
        } catch (const StoreError& e) {
            throw StoreError(StoreError::Kind::Invalid, std::string(e.what()) + "; nothing was imported");
        }
    }
}

// Every text a bundle carries (each TEXT column of each table) checked to be UTF-8 before anything
// is imported, as the store's own entry points check what they are given: one imported run name
// that was not made `runs list --json` fail for the whole store.
void check_bundle_text(sqlite::Db& db, const std::string& path) {
    std::vector<std::string> tables;
    {
        sqlite::Stmt s(db, "SELECT name FROM main.sqlite_master WHERE type='table' ORDER BY name");
        while (s.step("reading bundle tables")) tables.push_back(s.col_text(0));
    }
    for (const auto& table : tables) {
        std::vector<std::string> text_columns;
        std::string row_key;  // what names a row in the message
        {
            sqlite::Stmt info(db, "PRAGMA main.table_info(\"" + table + "\")");
            while (info.step("reading bundle columns")) {
                const std::string column = info.col_text(1);
                if (info.col_text(2) == "TEXT") text_columns.push_back(column);
                if (row_key.empty() || column == "run_id") row_key = column;
            }
        }
        for (const auto& column : text_columns) {
            sqlite::Stmt rows(db,
                              "SELECT \"" + column + "\", \"" + row_key + "\" FROM main.\"" + table + "\"");
            while (rows.step("reading bundle texts")) {
                const std::string problem = utf8_problem(rows.col_text(0));
                if (problem.empty()) continue;
                throw StoreError(StoreError::Kind::Invalid,
                                 "bundle " + path + ": table " + table + ", row with " + row_key + " " +
                                     replace_invalid_utf8(rows.col_text(1)) + ", column " + column + ": " +
                                     problem + "; nothing was imported");
            }
        }
    }
}

// Every sweep a bundle carries checked against the sweep limits before anything is imported: its
// planned run count, and the index of each of its runs. A count of 1e11 used to import and then
// make every `sweep collect` of the sweep allocate until it failed. A bundle from before schema 7
// has no sweeps and passes.
void check_bundle_sweeps(sqlite::Db& db, const std::string& path) {
    if (!has_table(db, "main", "sweeps")) return;
    auto refuse = [&](const std::string& problem) {
        throw StoreError(StoreError::Kind::Invalid,
                         "bundle " + path + ": " + problem + "; nothing was imported");
    };
    const std::string limit = std::to_string(kSweepHardMaxRuns);
    sqlite::Stmt sweeps(db,
                        "SELECT id, uuid, run_count FROM sweeps WHERE typeof(run_count) != 'integer' OR "
                        "run_count < 0 OR run_count > ? ORDER BY id LIMIT 1");
    sweeps.bind(1, kSweepHardMaxRuns);
    if (sweeps.step("reading bundle sweeps"))
        refuse("table sweeps, row " + std::to_string(sweeps.col_int(0)) + " (sweep " + sweeps.col_text(1) +
               "), run_count: " + sweeps.col_text(2) + " is not a number of runs from 0 to " + limit +
               ", the most a sweep may plan");
    sqlite::Stmt members(db,
                         "SELECT s.uuid, m.run_index, s.run_count FROM sweep_runs m JOIN sweeps s ON "
                         "s.id = m.sweep_id WHERE typeof(m.run_index) != 'integer' OR m.run_index < 0 OR "
                         "m.run_index >= s.run_count ORDER BY m.sweep_id LIMIT 1");
    if (members.step("reading bundle sweep runs"))
        refuse("table sweep_runs, sweep " + members.col_text(0) + ", run_index: " + members.col_text(1) +
               " is not one of the sweep's planned runs (0 to " + std::to_string(members.col_int(2) - 1) +
               ")");
}

// The work limit of an import on the store's connection, for as long as the import lasts: the
// statements that copy the bundle's rows run there.
class ImportWorkLimit {
public:
    ImportWorkLimit(sqlite::Db& db, const std::string& bundle_path) : db_(db) {
        db_.limit_work(sqlite::work_steps_for_file(bundle_path), "importing bundle " + bundle_path);
    }
    ~ImportWorkLimit() { db_.clear_work_limit(); }
    ImportWorkLimit(const ImportWorkLimit&) = delete;
    ImportWorkLimit& operator=(const ImportWorkLimit&) = delete;

private:
    sqlite::Db& db_;
};

// ATTACH for the lifetime of the object (DETACH cannot run inside a transaction, so the
// transaction must be closed before this goes out of scope).
class Attached {
public:
    Attached(sqlite::Db& db, const std::string& path, const std::string& name) : db_(db), name_(name) {
        sqlite::Stmt s(db, "ATTACH DATABASE ? AS " + name);
        s.bind(1, path).run("attaching " + path);
    }
    ~Attached() {
        sqlite3_exec(db_.handle(), ("DETACH DATABASE " + name_).c_str(), nullptr, nullptr, nullptr);
    }

private:
    sqlite::Db& db_;
    std::string name_;
};

// The bundle_info table that makes a store file a bundle (validate_bundle checks it).
void write_bundle_marker(sqlite::Db& db, const std::string& source, std::size_t runs) {
    db.exec(kBundleInfoSql);
    sqlite::Stmt info(db, "INSERT INTO bundle_info(key, value) VALUES(?,?)");
    const std::vector<std::pair<std::string, std::string>> rows = {
        {"format", kBundleFormat},
        {"format_version", std::to_string(kBundleFormatVersion)},
        {"created", num(store_now())},
        {"source", source},
        {"runs", std::to_string(runs)}};
    for (const auto& [k, v] : rows) {
        info.bind(1, k).bind(2, v).run("writing bundle marker");
        info.reset();
    }
}

// Copies the run store at `source` (opened read-only as a foreign file: its schema checked
// first) into `snapshot`, turned into a bundle of its runs; unless include_unfinished, RUNNING
// and INTERRUPTED runs are removed from the copy and their uuids returned.
std::vector<std::string> snapshot_as_bundle(const std::string& source, const std::string& snapshot,
                                            bool include_unfinished) {
    {
        RunStore::Options ro;
        ro.read_only = true;
        ro.foreign = true;
        RunStore store(source, ro);
        sqlite::Stmt vacuum(store.db(), "VACUUM INTO ?");
        vacuum.bind(1, snapshot).run("copying " + source);
    }
    sqlite::Db db(snapshot, SQLITE_OPEN_READWRITE);
    db.limit_work(sqlite::work_steps_for_file(snapshot), "the copy of " + source);
    db.query_text("PRAGMA journal_mode=DELETE");
    db.exec("PRAGMA foreign_keys=ON");
    std::vector<std::string> unfinished;
    if (!include_unfinished) {
        const std::string which = " FROM runs WHERE status IN ('RUNNING', 'INTERRUPTED')";
        sqlite::Stmt s(db, "SELECT uuid" + which + " ORDER BY id");
        while (s.step("reading runs of " + source)) unfinished.push_back(s.col_text(0));
        s.reset();
        db.exec("DELETE" + which, "leaving out unfinished runs of " + source);
    }
    sqlite::Transaction tx(db, "marking the copy of " + source);
    write_bundle_marker(db, source, static_cast<std::size_t>(db.query_int("SELECT count(*) FROM runs")));
    tx.commit();
    return unfinished;
}

// The CSV files an export writes: runs.csv, then run_<id>.csv per run.
std::string csv_index_name() { return "runs.csv"; }
std::string csv_run_name(std::int64_t id) { return "run_" + std::to_string(id) + ".csv"; }

// Refuses an export whose bundle or CSV files would land on the database it reads.
void refuse_outputs_onto_source(const std::string& source, const std::set<std::int64_t>& ids,
                                const std::string& bundle_path, const std::string& csv_dir) {
    refuse_output_onto_database(bundle_path, source, "the bundle");
    if (csv_dir.empty()) {
        return;
    }
    refuse_output_onto_database((fs::path(csv_dir) / csv_index_name()).string(), source, "a CSV file");
    for (auto id : ids) {
        refuse_output_onto_database((fs::path(csv_dir) / csv_run_name(id)).string(), source, "a CSV file");
    }
}

// What SQLite's integrity check finds in db; a file too damaged to be checked at all reports
// the error that stopped the check. Empty: healthy.
std::string damage_found(sqlite::Db& db) {
    try {
        return sqlite::integrity_findings(db);
    } catch (const StoreError& e) {
        return e.what();
    }
}

// After a Corrupt error while rows moved between two files: the damaged one is the one whose
// quick_check fails (throws naming it); when neither does, the original error stands.
[[noreturn]] void blame_damaged_file(const StoreError& error, sqlite::Db& suspect, const std::string& what) {
    if (const std::string findings = damage_found(suspect); !findings.empty()) {
        throw StoreError(StoreError::Kind::Corrupt, what + " " + suspect.path() + " is corrupt: " + findings);
    }
    throw error;
}

void write_csv(RunStore& store, const std::vector<std::int64_t>& ids, const std::string& dir,
               BundleExportResult& result) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
        throw StoreError(StoreError::Kind::Other, "cannot create CSV folder " + dir + ": " + ec.message());
    }
    auto open = [&](const std::string& name) {
        const std::string p = (fs::path(dir) / name).string();
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        if (!f) {
            throw StoreError(StoreError::Kind::Other, "cannot write CSV file " + p);
        }
        result.csv_files.push_back(p);
        return f;
    };
    auto index = open(csv_index_name());
    index << "id,uuid,name,status,dataset,precision,backend,device,seed,created,ended\n";
    for (auto id : ids) {
        const Run r = store.get_run(id);
        index << r.id << ',' << r.uuid << ',' << csv_field(r.name) << ',' << to_string(r.status) << ','
              << csv_field(r.dataset) << ',' << csv_field(r.precision) << ',' << csv_field(r.backend) << ','
              << csv_field(r.device) << ',' << (r.seed ? std::to_string(*r.seed) : "") << ','
              << num(r.created) << ',' << (r.ended ? num(*r.ended) : "") << '\n';
        auto f = open(csv_run_name(id));
        f << "key,step,wall_time,value\n";
        for (const auto& key : store.metric_keys(id)) {
            const std::string k = csv_field(key);
            for (const auto& p : store.series(id, key)) {
                f << k << ',' << p.step << ',' << num(p.wall_time) << ',' << num(p.value) << '\n';
            }
        }
        if (!f) {
            throw StoreError(StoreError::Kind::Other,
                             "writing CSV for run " + std::to_string(id) + " in " + dir + " failed");
        }
    }
}

// A bundle is read whole by an import: its quick_check costs about as much, and tells a
// damaged bundle from a damaged store before anything is written.
void check_bundle_integrity(sqlite::Db& db, const std::string& path) {
    if (const std::string findings = damage_found(db); !findings.empty()) {
        throw StoreError(StoreError::Kind::Corrupt,
                         "bundle " + path + " is damaged (it fails SQLite's integrity check: " + findings +
                             "); nothing was imported");
    }
}

// The selected runs and everything that belongs to them (their rows in every run table, their
// comparison groups and sweeps) copied into a new bundle at bundle_path, in one transaction.
void copy_runs_into_bundle(RunStore& store, const std::set<std::int64_t>& ids,
                           const std::string& bundle_path) {
    RunStore::Options bo;
    bo.detect_interrupted = false;
    RunStore bundle(bundle_path, bo);
    auto& db = bundle.db();
    db.exec("CREATE TEMP TABLE sel(id INTEGER PRIMARY KEY)");
    {
        sqlite::Stmt ins(db, "INSERT INTO temp.sel(id) VALUES(?)");
        for (auto id : ids) {
            ins.bind(1, id).run();
            ins.reset();
        }
    }
    {
        Attached src(db, store.path(), "src");
        sqlite::Transaction tx(db, "writing bundle");
        auto copy = [&](const std::string& table, const std::string& where) {
            const auto cols = join(common_columns(db, "main", "src", table, {}));
            db.exec("INSERT INTO main." + table + "(" + cols + ") SELECT " + cols + " FROM src." + table +
                        " WHERE " + where,
                    "copying " + table + " into the bundle");
        };
        copy("runs", "id IN (SELECT id FROM temp.sel)");
        for (const auto& t : kRunTables) {
            // A read-only source may predate a table (scaling_stats, final_weights).
            if (has_table(db, "src", t)) copy(t, "run_id IN (SELECT id FROM temp.sel)");
        }
        copy("comparison_groups",
             "id IN (SELECT group_id FROM src.comparison_members WHERE run_id IN "
             "(SELECT id FROM temp.sel))");
        copy("comparison_members", "run_id IN (SELECT id FROM temp.sel)");
        if (has_table(db, "src", "sweep_runs")) {  // a read-only source may predate schema 7
            copy("sweeps",
                 "id IN (SELECT sweep_id FROM src.sweep_runs WHERE run_id IN "
                 "(SELECT id FROM temp.sel))");
            copy("sweep_runs", "run_id IN (SELECT id FROM temp.sel)");
        }
        write_bundle_marker(db, store.path(), ids.size());
        tx.commit();
    }
    // One self-contained file: no -wal/-shm companions to forget when it is copied.
    db.query_text("PRAGMA journal_mode=DELETE");
}

ImportReport import_checked_bundle(RunStore& store, const std::string& bundle_path);

}  // namespace

bool is_run_bundle(const std::string& path) {
    try {
        validate_bundle(path);
        return true;
    } catch (const StoreError&) {
        return false;
    }
}

BundleExportResult export_bundle(RunStore& store, const std::vector<std::int64_t>& run_ids,
                                 const std::string& bundle_path, const BundleExportOptions& options) {
    if (run_ids.empty()) {
        throw StoreError(StoreError::Kind::Invalid, "export of " + bundle_path + ": no runs given");
    }
    const std::set<std::int64_t> ids(run_ids.begin(), run_ids.end());
    // Before anything is removed or written: --force must never delete the database it reads.
    refuse_outputs_onto_source(store.path(), ids, bundle_path, options.csv_dir);
    if (const std::string problem = sqlite_companion_problem(bundle_path); !problem.empty())
        throw StoreError(StoreError::Kind::Invalid,
                         "cannot write the bundle to " + bundle_path + ": " + problem);
    for (auto id : ids) {
        store.get_run(id);  // NotFound names the run
    }
    if (fs::exists(bundle_path)) {
        if (!options.overwrite) {
            throw StoreError(StoreError::Kind::Invalid, "bundle " + bundle_path + " already exists");
        }
        remove_db_files(bundle_path);
    }
    BundleExportResult result;
    try {
        copy_runs_into_bundle(store, ids, bundle_path);
        result.runs = ids.size();
    } catch (const StoreError& e) {
        remove_db_files(bundle_path);  // a half-written bundle is worse than none
        // The copy runs on the bundle's connection, so SQLite blames the bundle for any
        // damaged page; a fresh bundle is not the damaged file when the source fails its check.
        if (e.kind() == StoreError::Kind::Corrupt) {
            blame_damaged_file(e, store.db(), "database");
        }
        throw;
    } catch (...) {
        remove_db_files(bundle_path);  // a half-written bundle is worse than none
        throw;
    }
    if (!options.csv_dir.empty()) {
        write_csv(store, std::vector<std::int64_t>(ids.begin(), ids.end()), options.csv_dir, result);
    }
    return result;
}

ImportReport import_run_store(RunStore& store, const std::string& path, bool include_unfinished) {
    if (same_file(path, store.path())) {
        throw StoreError(StoreError::Kind::Invalid, "cannot import " + path +
                                                        " into itself: it is the database " + store.path() +
                                                        " the runs would be imported into");
    }
    const ScratchDir scratch(fs::path(path).filename().string());
    const std::string snapshot = scratch.file();
    std::vector<std::string> unfinished;
    ImportReport report;
    try {
        unfinished = snapshot_as_bundle(path, snapshot, include_unfinished);
        report = import_bundle(store, snapshot);
    } catch (const StoreError& e) {
        throw StoreError(e.kind(), "importing run store " + path + ": " + e.what());
    }
    report.unfinished = std::move(unfinished);
    return report;
}

ImportReport import_bundle(RunStore& store, const std::string& bundle_path) {
    // Attaching the store's own file makes SQLite see two writers of one file ("locked").
    if (same_file(bundle_path, store.path())) {
        throw StoreError(StoreError::Kind::Invalid, "cannot import " + bundle_path +
                                                        " into itself: it is the database " + store.path() +
                                                        " the runs would be imported into");
    }
    {
        sqlite::Db bundle = validate_bundle(bundle_path);
        check_bundle_integrity(bundle, bundle_path);
        check_bundle_text(bundle, bundle_path);
        check_bundle_json(bundle, bundle_path);
        check_bundle_scaling_stats(bundle, bundle_path);
        check_bundle_final_weights(bundle, bundle_path);
        check_bundle_sweeps(bundle, bundle_path);
    }
    try {
        const ImportWorkLimit limit(store.db(), bundle_path);
        return import_checked_bundle(store, bundle_path);
    } catch (const StoreError& e) {
        // The bundle passed its check: a damaged page met now is the store's.
        if (e.kind() == StoreError::Kind::Corrupt) {
            blame_damaged_file(e, store.db(), "database");
        }
        throw;
    }
}

namespace {

// The bundle's sweeps, merged by uuid: a sweep the store lacks is created with its spec, and
// each run at its index joins the store's sweep. An imported run takes its index (replacing an
// earlier run there); a run the store already had fills its index only when that is empty.
// Returns the store ids of the sweeps that gained a run or were created.
std::vector<std::int64_t> import_sweeps(sqlite::Db& db, RunStore& store, const std::string& bundle_path,
                                        const std::map<std::int64_t, std::int64_t>& id_map,
                                        const std::vector<ImportedRun>& imported) {
    std::set<std::int64_t> imported_ids;
    for (const auto& r : imported) imported_ids.insert(r.bundle_id);
    std::vector<std::int64_t> touched;
    sqlite::Stmt sweeps(
        db, "SELECT id, uuid, name, spec_json, run_count, created FROM bundle.sweeps ORDER BY id");
    sqlite::Stmt members(
        db, "SELECT run_index, run_id FROM bundle.sweep_runs WHERE sweep_id=? ORDER BY run_index");
    sqlite::Stmt new_sweep(
        db, "INSERT INTO main.sweeps(uuid, name, spec_json, run_count, created) VALUES(?,?,?,?,?)");
    sqlite::Stmt replace_member(
        db, "INSERT OR REPLACE INTO main.sweep_runs(sweep_id, run_index, run_id) VALUES(?,?,?)");
    sqlite::Stmt fill_member(
        db, "INSERT OR IGNORE INTO main.sweep_runs(sweep_id, run_index, run_id) VALUES(?,?,?)");
    while (sweeps.step("reading bundle sweeps")) {
        const std::string uuid = sweeps.col_text(1);
        std::optional<std::int64_t> sweep_id = store.find_sweep_by_uuid(uuid);
        const bool created = !sweep_id;
        // The runs join the store's sweep at their indices, so both must plan the same runs.
        const std::int64_t planned = created ? sweeps.col_int(4) : store.get_sweep(*sweep_id).run_count;
        if (planned != sweeps.col_int(4))
            throw StoreError(StoreError::Kind::Invalid, "bundle " + bundle_path + ": sweep " + uuid +
                                                            " plans " + std::to_string(sweeps.col_int(4)) +
                                                            " runs, the store's sweep of that uuid " +
                                                            std::to_string(planned) +
                                                            "; nothing was imported");
        if (created) {
            new_sweep.bind(1, uuid).bind(2, sweeps.col_text(2)).bind(3, sweeps.col_text(3));
            new_sweep.bind(4, sweeps.col_int(4)).bind(5, sweeps.col_double(5)).run("importing sweep " + uuid);
            new_sweep.reset();
            sweep_id = db.last_insert_rowid();
        }
        bool gained = false;
        members.bind(1, sweeps.col_int(0));
        while (members.step("reading bundle sweep runs")) {
            const auto found = id_map.find(members.col_int(1));
            if (found == id_map.end()) continue;
            auto& insert = imported_ids.count(found->first) ? replace_member : fill_member;
            insert.bind(1, *sweep_id).bind(2, members.col_int(0)).bind(3, found->second);
            insert.run("importing the runs of sweep " + uuid);
            insert.reset();
            gained = gained || db.changes() > 0;
        }
        members.reset();
        if (created || gained) touched.push_back(*sweep_id);
    }
    return touched;
}

std::set<std::string> bundle_table_names(sqlite::Db& db) {
    std::set<std::string> tables;
    sqlite::Stmt s(db, "SELECT name FROM bundle.sqlite_master WHERE type='table'");
    while (s.step("reading bundle tables")) tables.insert(s.col_text(0));
    return tables;
}

// A bundle from before the downsampling summary: its metric_blocks rebuilt for one imported run.
void rebuild_metric_blocks(sqlite::Db& db, std::int64_t run_id) {
    sqlite::Stmt rb(db,
                    "INSERT INTO main.metric_blocks(run_id, key, block, first_step, "
                    "last_step, min, max, count) SELECT run_id, key, step >> " +
                        std::to_string(kMetricBlockShift) +
                        ", min(step), max(step), min(value), max(value), count(*) "
                        "FROM main.metrics WHERE run_id=?1 GROUP BY key, step >> " +
                        std::to_string(kMetricBlockShift));
    rb.bind(1, run_id).run("rebuilding metric blocks");
    sqlite::Stmt fv(db,
                    "UPDATE main.metric_blocks SET first_value=(SELECT value FROM "
                    "main.metrics m WHERE m.run_id=?1 AND m.key=metric_blocks.key AND "
                    "m.step=metric_blocks.first_step LIMIT 1), last_value=(SELECT "
                    "value FROM main.metrics m WHERE m.run_id=?1 AND "
                    "m.key=metric_blocks.key AND m.step=metric_blocks.last_step LIMIT "
                    "1) WHERE run_id=?1");
    fv.bind(1, run_id).run("rebuilding metric blocks");
}

// Copies the bundle's runs the store lacks (by uuid) with their rows in every run table; a run
// still RUNNING in the bundle arrives INTERRUPTED (its writer is not this machine's).
// Its statements are finalized when it goes, before the import's transaction commits.
class RunImporter {
public:
    RunImporter(sqlite::Db& db, const std::set<std::string>& bundle_tables)
        : db_(db), rebuild_blocks_(!bundle_tables.count("metric_blocks")) {
        const auto run_cols = common_columns(db, "main", "bundle", "runs", {"id"});
        insert_run_ = sqlite::Stmt(db, "INSERT INTO main.runs(" + join(run_cols) + ") SELECT " +
                                           join(run_cols) + " FROM bundle.runs WHERE id=?");
        orphan_ = sqlite::Stmt(db,
                               "UPDATE main.runs SET status='INTERRUPTED', ended=coalesce(ended, "
                               "(SELECT max(wall_time) FROM main.latest_metrics WHERE run_id=?1), "
                               "started, created), owner_pid=NULL, owner_host=NULL, owner_start=NULL "
                               "WHERE id=?1 AND status='RUNNING'");
        for (const auto& t : kRunTables) {
            if (!bundle_tables.count(t)) continue;
            const auto cols = common_columns(db, "main", "bundle", t, {"id", "run_id"});
            children_.push_back(
                {t, std::make_unique<sqlite::Stmt>(db, "INSERT INTO main." + t + "(run_id, " + join(cols) +
                                                           ") SELECT ?1, " + join(cols) + " FROM bundle." +
                                                           t + " WHERE run_id=?2")});
        }
    }

    // The run's id in the store.
    std::int64_t import_run(std::int64_t bundle_id, const std::string& uuid) {
        insert_run_.bind(1, bundle_id).run("importing run " + uuid);
        insert_run_.reset();
        const auto new_id = db_.last_insert_rowid();
        for (auto& c : children_) {
            c.stmt->bind(1, new_id).bind(2, bundle_id).run("importing " + c.table + " of run " + uuid);
            c.stmt->reset();
        }
        if (rebuild_blocks_) rebuild_metric_blocks(db_, new_id);
        orphan_.bind(1, new_id).run("importing run " + uuid);
        orphan_.reset();
        return new_id;
    }

private:
    struct ChildCopy {
        std::string table;
        std::unique_ptr<sqlite::Stmt> stmt;
    };
    sqlite::Db& db_;
    bool rebuild_blocks_;
    sqlite::Stmt insert_run_, orphan_;
    std::vector<ChildCopy> children_;
};

// Imports the bundle's runs the store lacks; fills id_map (bundle id -> store id, imported or
// already there) and the report's imported and skipped runs.
void import_runs(sqlite::Db& db, RunStore& store, const std::set<std::string>& bundle_tables,
                 std::map<std::int64_t, std::int64_t>& id_map, ImportReport& report) {
    std::vector<std::pair<std::int64_t, std::string>> bundle_runs;
    {
        sqlite::Stmt s(db, "SELECT id, uuid FROM bundle.runs ORDER BY id");
        while (s.step("reading bundle runs")) bundle_runs.emplace_back(s.col_int(0), s.col_text(1));
    }
    RunImporter importer(db, bundle_tables);
    for (const auto& [bundle_id, uuid] : bundle_runs) {
        if (const auto existing = store.find_run_by_uuid(uuid)) {
            report.skipped.push_back({uuid, *existing});
            id_map[bundle_id] = *existing;
            continue;
        }
        const std::int64_t new_id = importer.import_run(bundle_id, uuid);
        id_map[bundle_id] = new_id;
        report.imported.push_back({bundle_id, new_id, uuid});
    }
}

// Comparison groups come along when at least one of their runs was imported; returns the new
// groups' ids.
std::vector<std::int64_t> import_groups(sqlite::Db& db, const std::map<std::int64_t, std::int64_t>& id_map,
                                        const std::vector<ImportedRun>& imported) {
    std::set<std::int64_t> imported_ids;
    for (const auto& r : imported) imported_ids.insert(r.bundle_id);
    std::vector<std::int64_t> new_groups;
    sqlite::Stmt groups(db, "SELECT id, name, created FROM bundle.comparison_groups ORDER BY id");
    sqlite::Stmt members(db, "SELECT run_id FROM bundle.comparison_members WHERE group_id=?");
    sqlite::Stmt new_group(db, "INSERT INTO main.comparison_groups(name, created) VALUES(?,?)");
    sqlite::Stmt new_member(db,
                            "INSERT OR IGNORE INTO main.comparison_members(group_id, "
                            "run_id) VALUES(?,?)");
    while (groups.step("reading bundle groups")) {
        std::vector<std::int64_t> mem;
        bool any_imported = false;
        members.bind(1, groups.col_int(0));
        while (members.step("reading bundle group members")) {
            const auto old_id = members.col_int(0);
            if (const auto found = id_map.find(old_id); found != id_map.end()) {
                mem.push_back(found->second);
                any_imported = any_imported || imported_ids.count(old_id) > 0;
            }
        }
        members.reset();
        if (!any_imported) continue;
        new_group.bind(1, groups.col_text(1)).bind(2, groups.col_double(2)).run("importing group");
        new_group.reset();
        const auto gid = db.last_insert_rowid();
        for (auto m : mem) {
            new_member.bind(1, gid).bind(2, m).run("importing group member");
            new_member.reset();
        }
        new_groups.push_back(gid);
    }
    return new_groups;
}

ImportReport import_checked_bundle(RunStore& store, const std::string& bundle_path) {
    auto& db = store.db();
    ImportReport report;
    Attached b(db, bundle_path, "bundle");
    sqlite::Transaction tx(db, "importing bundle");
    const std::set<std::string> bundle_tables = bundle_table_names(db);
    std::map<std::int64_t, std::int64_t> id_map;  // bundle id -> store id (imported or existing)
    import_runs(db, store, bundle_tables, id_map, report);
    if (bundle_tables.count("comparison_groups") && !report.imported.empty())
        report.groups = import_groups(db, id_map, report.imported);
    if (bundle_tables.count("sweep_runs"))
        report.sweeps = import_sweeps(db, store, bundle_path, id_map, report.imported);
    tx.commit();
    return report;
}

}  // namespace

}  // namespace mpwb
