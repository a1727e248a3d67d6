// RunStore's sweeps (schema 7): a sweep keeps its spec and a uuid, and sweep_runs maps each
// planned index to the run that trained it. Several processes of one sweep (`sweep run` children,
// Slurm tasks) create the sweep by its uuid at about the same time, so creation is one
// INSERT OR IGNORE under a write transaction: whoever comes second finds the first one's row.
#include "sessions/run_store.h"
#include "sessions/sweep_spec.h"

namespace mpwb {

namespace {

// A random version-4 uuid from SQLite's randomblob (seeded from the OS entropy source), so the
// sweep's identity never depends on a training seed.
std::string random_uuid(sqlite::Db& db) {
    std::string hex = db.query_text("SELECT lower(hex(randomblob(16)))");
    hex[12] = '4';                                                    // version 4
    hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];  // RFC 4122 variant
    return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) +
           "-" + hex.substr(20);
}

StoreError no_sweep(std::int64_t sweep_id) {
    return StoreError(StoreError::Kind::NotFound, "sweep " + std::to_string(sweep_id) + " does not exist");
}

}  // namespace

std::int64_t RunStore::create_sweep(const SweepRecord& sweep) {
    if (sweep.name.empty()) throw StoreError(StoreError::Kind::Invalid, "sweep name is empty");
    require_utf8(sweep.name, "sweep name");
    require_utf8(sweep.uuid, "sweep uuid");
    require_utf8(sweep.spec_json, "sweep spec");
    if (sweep.run_count < 0 || sweep.run_count > kSweepHardMaxRuns)
        throw StoreError(StoreError::Kind::Invalid,
                         "sweep '" + sweep.name + "': run count " + std::to_string(sweep.run_count) +
                             " is outside 0 to " + std::to_string(kSweepHardMaxRuns) +
                             ", the most runs a sweep may plan");
    sqlite::Transaction tx(db_, "creating sweep");
    const std::string uuid = sweep.uuid.empty() ? random_uuid(db_) : sweep.uuid;
    sqlite::Stmt insert(
        db_, "INSERT OR IGNORE INTO sweeps(uuid, name, spec_json, run_count, created) VALUES(?,?,?,?,?)");
    insert.bind(1, uuid)
        .bind(2, sweep.name)
        .bind(3, sweep.spec_json)
        .bind(4, sweep.run_count)
        .bind(5, store_now());
    insert.run("creating sweep " + sweep.name);
    const auto id = find_sweep_by_uuid(uuid);
    tx.commit();
    return *id;
}

std::optional<std::int64_t> RunStore::find_sweep_by_uuid(const std::string& uuid) {
    sqlite::Stmt s(db_, "SELECT id FROM sweeps WHERE uuid=?");
    s.bind(1, uuid);
    if (!s.step("finding sweep " + uuid)) return std::nullopt;
    return s.col_int(0);
}

void RunStore::add_sweep_run(std::int64_t sweep_id, std::int64_t index, std::int64_t run_id) {
    sqlite::Transaction tx(db_, "adding run to sweep");
    const SweepRecord sweep = get_sweep(sweep_id);
    if (index < 0 || index >= sweep.run_count)
        throw StoreError(StoreError::Kind::Invalid, "sweep '" + sweep.name + "' plans runs 0 to " +
                                                        std::to_string(sweep.run_count - 1) + ", not index " +
                                                        std::to_string(index));
    require_run(run_id);
    sqlite::Stmt s(db_, "INSERT OR REPLACE INTO sweep_runs(sweep_id, run_index, run_id) VALUES(?,?,?)");
    s.bind(1, sweep_id).bind(2, index).bind(3, run_id).run("adding run to sweep " + sweep.name);
    tx.commit();
}

std::vector<SweepRecord> RunStore::list_sweeps() {
    std::vector<std::int64_t> ids;
    sqlite::Stmt s(db_, "SELECT id FROM sweeps ORDER BY created, id");
    while (s.step("listing sweeps")) ids.push_back(s.col_int(0));
    s.reset();
    std::vector<SweepRecord> out;
    for (auto id : ids) out.push_back(get_sweep(id));
    return out;
}

SweepRecord RunStore::get_sweep(std::int64_t sweep_id) {
    sqlite::Stmt s(db_, "SELECT id, uuid, name, spec_json, run_count, created FROM sweeps WHERE id=?");
    s.bind(1, sweep_id);
    if (!s.step("reading sweep " + std::to_string(sweep_id))) throw no_sweep(sweep_id);
    SweepRecord sweep{
        s.col_int(0), s.col_text(1), s.col_text(2), s.col_text(3), s.col_int(4), s.col_double(5), {}};
    s.reset();
    sqlite::Stmt m(db_, "SELECT run_index, run_id FROM sweep_runs WHERE sweep_id=? ORDER BY run_index");
    m.bind(1, sweep_id);
    while (m.step("reading the runs of sweep " + sweep.name))
        sweep.runs.push_back({m.col_int(0), m.col_int(1)});
    return sweep;
}

std::optional<RunStore::SweepMembership> RunStore::sweep_of_run(std::int64_t run_id) {
    sqlite::Stmt s(db_,
                   "SELECT sweep_id, run_index FROM sweep_runs WHERE run_id=? ORDER BY sweep_id LIMIT 1");
    s.bind(1, run_id);
    if (!s.step("finding the sweep of run " + std::to_string(run_id))) return std::nullopt;
    return SweepMembership{s.col_int(0), s.col_int(1)};
}

}  // namespace mpwb
