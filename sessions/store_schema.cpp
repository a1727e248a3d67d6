// Migration history of the run store (see store_schema.h). Never edit a released step: append.
//   1: runs, metrics, events, tags, notes
//   2: owner pid/host (crash detection), latest_metrics summary, histograms, comparison groups
//   3: metric_blocks (per-32-step min/max/first/last so downsampling never scans a whole series)
//      and a covering (run_id, key, step, value) series index
//   4: boundaries (a run's final decision boundary)
//   5: runs rebuilt with AUTOINCREMENT (an id is never reused, not even after a purge) and
//      owner_start (the writer's boot and start time, so a reused pid is not taken for it)
//   6: scaling_stats (what a scaled recipe's quantization of each GEMM operand did, per layer and
//      statistics step)
//   7: checkpoints (a run's resumable training state) and sweeps (a sweep's spec and its runs,
//      one per planned index)
//   8: final_weights and final_weight_tensors (the FP32 weights a run ended with, for export)
#include "sessions/store_schema.h"

#include "sessions/sqlite_db.h"

#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

namespace mpwb {

namespace {

// The SQL of each migration step, the first creating schema 1.
constexpr const char* kMigrationSteps[] = {
    // 1
    R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT 'RUNNING'
    CHECK(status IN ('RUNNING','FINISHED','FAILED','STOPPED','INTERRUPTED')),
  config_json TEXT NOT NULL DEFAULT '{}',
  network_json TEXT NOT NULL DEFAULT '{}',
  dataset TEXT NOT NULL DEFAULT '',
  precision TEXT NOT NULL DEFAULT '',
  backend TEXT NOT NULL DEFAULT '',
  device TEXT NOT NULL DEFAULT '',
  versions_json TEXT NOT NULL DEFAULT '{}',
  machine TEXT NOT NULL DEFAULT '',
  seed INTEGER,
  created REAL NOT NULL,
  started REAL,
  ended REAL,
  deleted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE metrics(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  wall_time REAL NOT NULL,
  value REAL);
CREATE INDEX metrics_run_key_step ON metrics(run_id, key, step);
CREATE TABLE events(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  time REAL NOT NULL,
  kind TEXT NOT NULL,
  json TEXT NOT NULL DEFAULT '{}');
CREATE INDEX events_run_step ON events(run_id, step);
CREATE TABLE tags(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(run_id, key)) WITHOUT ROWID;
CREATE TABLE notes(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  text TEXT NOT NULL,
  updated REAL NOT NULL);
)sql",
    // 2
    R"sql(
ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE runs ADD COLUMN owner_host TEXT;
CREATE INDEX runs_status ON runs(status);
CREATE TABLE latest_metrics(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  wall_time REAL NOT NULL,
  value REAL,
  min REAL,
  max REAL,
  count INTEGER NOT NULL,
  PRIMARY KEY(run_id, key)) WITHOUT ROWID;
INSERT INTO latest_metrics(run_id, key, step, wall_time, value, min, max, count)
  SELECT m.run_id, m.key, m.step, m.wall_time, m.value, a.mn, a.mx, a.n
  FROM (SELECT run_id, key, max(step) AS ms, min(value) AS mn, max(value) AS mx, count(*) AS n
        FROM metrics GROUP BY run_id, key) AS a
  JOIN metrics AS m ON m.run_id = a.run_id AND m.key = a.key AND m.step = a.ms
  GROUP BY m.run_id, m.key;
CREATE TABLE histograms(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  layer TEXT NOT NULL,
  kind TEXT NOT NULL,
  blob BLOB NOT NULL);
CREATE INDEX histograms_run_step ON histograms(run_id, step, layer);
CREATE TABLE comparison_groups(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  created REAL NOT NULL);
CREATE TABLE comparison_members(
  group_id INTEGER NOT NULL REFERENCES comparison_groups(id) ON DELETE CASCADE,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  PRIMARY KEY(group_id, run_id)) WITHOUT ROWID;
CREATE INDEX comparison_members_run ON comparison_members(run_id);
)sql",
    // 3
    R"sql(
DROP INDEX metrics_run_key_step;
CREATE INDEX metrics_series ON metrics(run_id, key, step, value);
CREATE TABLE metric_blocks(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  block INTEGER NOT NULL,
  first_step INTEGER NOT NULL,
  first_value REAL,
  last_step INTEGER NOT NULL,
  last_value REAL,
  min REAL,
  max REAL,
  count INTEGER NOT NULL,
  PRIMARY KEY(run_id, key, block)) WITHOUT ROWID;
INSERT INTO metric_blocks(run_id, key, block, first_step, last_step, min, max, count)
  SELECT run_id, key, step >> 5, min(step), max(step), min(value), max(value), count(*)
  FROM metrics GROUP BY run_id, key, step >> 5;
UPDATE metric_blocks SET
  first_value = (SELECT value FROM metrics AS m WHERE m.run_id = metric_blocks.run_id
                 AND m.key = metric_blocks.key AND m.step = metric_blocks.first_step LIMIT 1),
  last_value = (SELECT value FROM metrics AS m WHERE m.run_id = metric_blocks.run_id
                AND m.key = metric_blocks.key AND m.step = metric_blocks.last_step LIMIT 1);
)sql",
    // 4: the final decision boundary of a run on a 2-D set (an opaque blob the workbench
    // writes and reads), so a reopened run shows it again.
    R"sql(
CREATE TABLE boundaries(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  blob BLOB NOT NULL);
)sql",
    // 5: SQLite cannot add AUTOINCREMENT to a table, so runs is rebuilt (the documented
    // create-copy-drop-rename; RunStore::migrate turns foreign keys off around it, so the
    // drop does not cascade). The child tables' REFERENCES runs(id) then name the new table.
    R"sql(
CREATE TABLE runs_v5(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT 'RUNNING'
    CHECK(status IN ('RUNNING','FINISHED','FAILED','STOPPED','INTERRUPTED')),
  config_json TEXT NOT NULL DEFAULT '{}',
  network_json TEXT NOT NULL DEFAULT '{}',
  dataset TEXT NOT NULL DEFAULT '',
  precision TEXT NOT NULL DEFAULT '',
  backend TEXT NOT NULL DEFAULT '',
  device TEXT NOT NULL DEFAULT '',
  versions_json TEXT NOT NULL DEFAULT '{}',
  machine TEXT NOT NULL DEFAULT '',
  seed INTEGER,
  created REAL NOT NULL,
  started REAL,
  ended REAL,
  deleted INTEGER NOT NULL DEFAULT 0,
  owner_pid INTEGER,
  owner_host TEXT,
  owner_start TEXT);
INSERT INTO runs_v5(id, uuid, name, status, config_json, network_json, dataset, precision, backend,
                    device, versions_json, machine, seed, created, started, ended, deleted,
                    owner_pid, owner_host)
  SELECT id, uuid, name, status, config_json, network_json, dataset, precision, backend, device,
         versions_json, machine, seed, created, started, ended, deleted, owner_pid, owner_host
  FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v5 RENAME TO runs;
CREATE INDEX runs_status ON runs(status);
)sql",
    // 6: one row per layer, operand and statistics step of a scaled recipe (fp8-delayed ...
    // nvfp4). block_exponent_counts is the histogram of block-scale exponents as int64
    // counts in the host's byte order (sessions/scaling_stats_rows.h), one per power of two
    // from block_exponent_min; empty for the per-tensor recipes. sqnr_db keeps 999 for a
    // lossless quantization (ScalingStats' convention); NULL reads back as NaN.
    R"sql(
CREATE TABLE scaling_stats(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  layer INTEGER NOT NULL,
  layer_label TEXT NOT NULL,
  operand TEXT NOT NULL,
  element TEXT NOT NULL,
  amax REAL,
  scale REAL,
  underflow_fraction REAL,
  saturate_fraction REAL,
  sqnr_db REAL,
  value_count INTEGER NOT NULL,
  blocks INTEGER NOT NULL DEFAULT 0,
  clipped_blocks INTEGER NOT NULL DEFAULT 0,
  block_exponent_min INTEGER NOT NULL DEFAULT 0,
  block_exponent_counts BLOB NOT NULL DEFAULT x'');
CREATE INDEX scaling_stats_run_step ON scaling_stats(run_id, step, layer, operand);
)sql",
    // 7: checkpoints hold TrainingCheckpoint (core/train/checkpoint.h): the position in
    // columns, everything else in its versioned binary state. A sweep keeps its spec and a
    // uuid, so the databases of a sweep's Slurm tasks collect into one sweep; sweep_runs
    // maps each planned index to the run that trained it.
    R"sql(
CREATE TABLE checkpoints(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  batch INTEGER NOT NULL,
  wall_seconds REAL NOT NULL,
  created REAL NOT NULL,
  state BLOB NOT NULL);
CREATE INDEX checkpoints_run_step ON checkpoints(run_id, step);
CREATE TABLE sweeps(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uuid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  run_count INTEGER NOT NULL,
  created REAL NOT NULL);
CREATE TABLE sweep_runs(
  sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  run_index INTEGER NOT NULL,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  PRIMARY KEY(sweep_id, run_index));
CREATE INDEX sweep_runs_run ON sweep_runs(run_id);
)sql",
    // 8: the weights a run ended with (sessions/final_weights_rows.h): one row per run with
    // the step and the per-sample input shape (a JSON array), one per tensor in the
    // network's order with its layer, its name, its shape and its FP32 values.
    R"sql(
CREATE TABLE final_weights(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  input_shape TEXT NOT NULL);
CREATE TABLE final_weight_tensors(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  layer INTEGER NOT NULL,
  name TEXT NOT NULL,
  shape TEXT NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(run_id, position));
)sql",
    // 9: a scaling_stats row names the recipe that took it ("mxfp8"; "bf16" for an operand a
    // precision rule keeps unquantized) and marks a what-if recipe's rows (what_if 1: statistics
    // of a recipe the GEMM did not use). Rows from before read as '' and 0: the run's own.
    // blocks_scaled_to_4: nvfp4 with 4 over 6, the blocks scaled so their maximum maps to 4.
    R"sql(
ALTER TABLE scaling_stats ADD COLUMN recipe TEXT NOT NULL DEFAULT '';
ALTER TABLE scaling_stats ADD COLUMN what_if INTEGER NOT NULL DEFAULT 0;
ALTER TABLE scaling_stats ADD COLUMN blocks_scaled_to_4 INTEGER NOT NULL DEFAULT 0;
)sql",
};

}  // namespace

const std::vector<std::string>& schema_migrations() {
    static const std::vector<std::string> steps(std::begin(kMigrationSteps), std::end(kMigrationSteps));
    return steps;
}

int schema_version() { return static_cast<int>(schema_migrations().size()); }

namespace {

struct SchemaObject {
    std::string table;
    std::optional<std::string> sql;  // NULL for SQLite's automatic indexes
};

// By type and name: a trigger may share its name with a table.
using SchemaObjects = std::map<std::pair<std::string, std::string>, SchemaObject>;

constexpr const char* kSchemaQuery = "SELECT type, name, tbl_name, sql FROM ";

std::optional<std::string> opt_text(const sqlite::Stmt& s, int column) {
    return s.col_null(column) ? std::nullopt : std::optional<std::string>(s.col_text(column));
}

// The objects the migration steps up to `version` and then `extra_sql` create, built once per
// version in an in-memory database.
const SchemaObjects& reference_objects(int version, const std::string& extra_sql) {
    static std::mutex mutex;
    static std::map<std::pair<int, std::string>, SchemaObjects> cache;
    const std::lock_guard lock(mutex);
    const auto key = std::make_pair(version, extra_sql);
    if (const auto found = cache.find(key); found != cache.end()) return found->second;
    sqlite::Db db(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY);
    for (int step = 0; step < version && step < schema_version(); ++step)
        db.exec(schema_migrations()[static_cast<std::size_t>(step)], "building the reference schema");
    if (!extra_sql.empty()) db.exec(extra_sql, "building the reference schema");
    SchemaObjects objects;
    sqlite::Stmt s(db, std::string(kSchemaQuery) + "main.sqlite_master");
    while (s.step("reading the reference schema"))
        objects[{s.col_text(0), s.col_text(1)}] = {s.col_text(2), opt_text(s, 3)};
    return cache.emplace(key, std::move(objects)).first->second;
}

// A name from a file, for a message: quoted, and cut short when it is long.
std::string quoted(const std::string& name) {
    constexpr std::size_t kShown = 60;
    return "'" + (name.size() > kShown ? name.substr(0, kShown) + "..." : name) + "'";
}

}  // namespace

std::string schema_difference(sqlite::Db& db, const std::string& schema, int version,
                              const std::string& extra_sql) {
    const SchemaObjects& expected = reference_objects(version, extra_sql);
    const std::string of = " of the run store's schema (version " + std::to_string(version) + ")";
    std::set<std::pair<std::string, std::string>> seen;
    // Triggers and views first: where a file has one, it is the telling difference.
    sqlite::Stmt s(db, std::string(kSchemaQuery) + schema +
                           ".sqlite_master ORDER BY CASE type WHEN 'trigger' THEN 0 WHEN 'view' THEN 1 "
                           "WHEN 'index' THEN 2 ELSE 3 END, rowid");
    while (s.step("reading the schema")) {
        const std::string type = s.col_text(0), name = s.col_text(1), table = s.col_text(2);
        const auto found = expected.find({type, name});
        if (found == expected.end())
            return "it has a " + type + " " + quoted(name) +
                   (type == "index" || type == "trigger" ? " on table " + quoted(table) : "") +
                   ", which is not part" + of;
        if (found->second.table != table || found->second.sql != opt_text(s, 3))
            return "its " + type + " " + quoted(name) + " is not defined as the one" + of;
        seen.insert(found->first);
    }
    for (const auto& [key, object] : expected)
        if (!seen.count(key)) return "it lacks the " + key.first + " " + quoted(key.second) + of;
    return {};
}

}  // namespace mpwb
