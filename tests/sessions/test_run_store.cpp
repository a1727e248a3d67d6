// Tests of RunStore opening and mutations: schema creation and version, forward migration from a
// hand-made version-1 file, refusal of newer, locked, read-only and corrupt files (with the file
// left byte-for-byte untouched), crash detection, tags/notes/rename/delete/purge and groups,
// text that is not UTF-8 refused at every entry, the holder of a lock named, and the work limit
// of a connection to a file from elsewhere.
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "sessions/store_schema.h"
#include "core/common/rng.h"
#include "test_support.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

using namespace mpwb;
using testsupport::Raw;
using Kind = StoreError::Kind;

class TestRunStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    std::string fresh(const char* stem) {
        return dir_.filePath(QString("%1_%2.sqlite").arg(stem).arg(++n_)).toStdString();
    }

private slots:
    void schemaCreated() {
        const auto path = fresh("schema");
        { RunStore store(path); }
        QVERIFY(std::filesystem::exists(path));
        Raw raw(path);
        QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        QCOMPARE(schema_version(), 9);
        QCOMPARE(raw.text("PRAGMA journal_mode"), std::string("wal"));
        for (const char* t :
             {"runs", "metrics", "latest_metrics", "metric_blocks", "histograms", "events", "tags", "notes",
              "comparison_groups", "comparison_members", "boundaries", "scaling_stats"}) {
            QVERIFY2(raw.integer(std::string("SELECT count(*) FROM sqlite_master WHERE type='table' "
                                             "AND name='") +
                                 t + "'") == 1,
                     t);
        }
        QCOMPARE(raw.integer("SELECT count(*) FROM sqlite_master WHERE type='index' AND "
                             "name='metrics_series'"),
                 1LL);
        // Reopening an up-to-date file changes nothing.
        RunStore again(path);
        QCOMPARE(again.opened_schema_version(), 9);
    }

    void defaultPathFollowsXdg() {
        const std::string xdg = dir_.filePath("xdg").toStdString();
        const std::string home = dir_.filePath("home").toStdString();
        const char* old_xdg = std::getenv("XDG_DATA_HOME");
        const char* old_home = std::getenv("HOME");
        const std::string saved_xdg = old_xdg ? old_xdg : "", saved_home = old_home ? old_home : "";
        setenv("XDG_DATA_HOME", xdg.c_str(), 1);
        QCOMPARE(default_database_path(), xdg + "/mpwb/runs.sqlite");
        QVERIFY(std::filesystem::is_directory(xdg + "/mpwb"));
        setenv("HOME", home.c_str(), 1);
        setenv("XDG_DATA_HOME", "relative/not/allowed", 1);
        QCOMPARE(default_database_path(), home + "/.local/share/mpwb/runs.sqlite");
        unsetenv("XDG_DATA_HOME");
        QCOMPARE(default_database_path(), home + "/.local/share/mpwb/runs.sqlite");
        QVERIFY(std::filesystem::is_directory(home + "/.local/share/mpwb"));
        if (old_xdg) setenv("XDG_DATA_HOME", saved_xdg.c_str(), 1);
        if (old_home) setenv("HOME", saved_home.c_str(), 1);
    }

    void migrationFromVersion1() {
        const auto path = fresh("v1");
        std::vector<double> values;
        {
            // The version-1 schema as released, written by hand (not through the migration list).
            Raw raw(path);
            QCOMPARE(raw.exec(R"(
CREATE TABLE runs(id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, name TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT 'RUNNING' CHECK(status IN ('RUNNING','FINISHED','FAILED','STOPPED','INTERRUPTED')),
  config_json TEXT NOT NULL DEFAULT '{}', network_json TEXT NOT NULL DEFAULT '{}', dataset TEXT NOT NULL DEFAULT '',
  precision TEXT NOT NULL DEFAULT '', backend TEXT NOT NULL DEFAULT '', device TEXT NOT NULL DEFAULT '',
  versions_json TEXT NOT NULL DEFAULT '{}', machine TEXT NOT NULL DEFAULT '', seed INTEGER, created REAL NOT NULL,
  started REAL, ended REAL, deleted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE metrics(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, key TEXT NOT NULL,
  step INTEGER NOT NULL, wall_time REAL NOT NULL, value REAL);
CREATE INDEX metrics_run_key_step ON metrics(run_id, key, step);
CREATE TABLE events(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL, time REAL NOT NULL, kind TEXT NOT NULL, json TEXT NOT NULL DEFAULT '{}');
CREATE INDEX events_run_step ON events(run_id, step);
CREATE TABLE tags(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, key TEXT NOT NULL,
  value TEXT NOT NULL DEFAULT '', PRIMARY KEY(run_id, key)) WITHOUT ROWID;
CREATE TABLE notes(run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, text TEXT NOT NULL,
  updated REAL NOT NULL);
INSERT INTO runs(id, uuid, name, status, precision, created) VALUES(7, 'old-uuid', 'old run', 'FINISHED', 'fp16-mixed', 1000);
INSERT INTO tags VALUES(7, 'paper', 'fig3');
PRAGMA user_version=1;
)"),
                     SQLITE_OK);
            Rng rng(11);
            QCOMPARE(raw.exec("BEGIN"), SQLITE_OK);
            for (int step = 0; step < 300; ++step) {
                const double v = rng.uniform(-5.f, 5.f);
                values.push_back(v);
                raw.exec("INSERT INTO metrics VALUES(7,'loss'," + std::to_string(step) + "," +
                         std::to_string(1000 + step) + "," + QString::number(v, 'g', 17).toStdString() + ")");
            }
            QCOMPARE(raw.exec("COMMIT"), SQLITE_OK);
        }
        RunStore store(path);
        QCOMPARE(store.opened_schema_version(), 1);
        {
            Raw raw(path);
            QCOMPARE(raw.integer("PRAGMA user_version"), 9LL);
        }
        const Run r = store.get_run(7);
        QCOMPARE(r.name, std::string("old run"));
        QCOMPARE(r.status, RunStatus::Finished);
        QCOMPARE(r.tags.at("paper"), std::string("fig3"));
        QVERIFY(!r.owner_pid.has_value());
        // latest_metrics was backfilled from the series.
        const auto& lm = r.latest.at("loss");
        QCOMPARE(lm.count, 300LL);
        QCOMPARE(lm.step, 299LL);
        QCOMPARE(lm.value, values.back());
        QCOMPARE(lm.min, *std::min_element(values.begin(), values.end()));
        QCOMPARE(lm.max, *std::max_element(values.begin(), values.end()));
        // metric_blocks was backfilled: one bucket per 10 steps matches a direct computation.
        const auto b = store.downsample(7, "loss", 30);
        QCOMPARE(b.size(), std::size_t(30));
        for (int i = 0; i < 30; ++i) {
            const auto first = values.begin() + i * 10, last = first + 10;
            QCOMPARE(b[i].count, 10LL);
            QCOMPARE(b[i].first, *first);
            QCOMPARE(b[i].last, *(last - 1));
            QCOMPARE(b[i].min, *std::min_element(first, last));
            QCOMPARE(b[i].max, *std::max_element(first, last));
        }
    }

    void newerSchemaRefusedUntouched() {
        const auto path = fresh("newer");
        {
            Raw raw(path);
            QCOMPARE(raw.exec("CREATE TABLE runs(id INTEGER PRIMARY KEY, future_column BLOB); "
                              "INSERT INTO runs VALUES(1, x'0102'); PRAGMA user_version=10"),
                     SQLITE_OK);
        }
        const auto before = testsupport::file_bytes(path);
        EXPECT_STORE_ERROR(RunStore store(path), Kind::NewerSchema,
                           "database schema version 10 is newer than this build supports (" +
                               std::to_string(schema_version()) + "); upgrade MP Workbench");
        RunStore::Options ro;
        ro.read_only = true;
        EXPECT_STORE_ERROR(RunStore store(path, ro), Kind::NewerSchema, "version 10 is newer");
        QCOMPARE(testsupport::file_bytes(path), before);
        QVERIFY(!std::filesystem::exists(path + "-wal") || std::filesystem::file_size(path + "-wal") == 0);
    }

    void foreignDatabaseRefused() {
        const auto path = fresh("foreign");
        {
            Raw raw(path);
            raw.exec("CREATE TABLE photos(id INTEGER)");
        }
        const auto before = testsupport::file_bytes(path);
        EXPECT_STORE_ERROR(RunStore store(path), Kind::Invalid, "is not an MP Workbench run store");
        QCOMPARE(testsupport::file_bytes(path), before);
    }

    void lockedByWriterInWal() {
        const auto path = fresh("locked");
        std::int64_t id;
        {
            RunStore store(path);
            id = store.create_run(RunInfo{});
            store.set_status(id, RunStatus::Finished);
        }
        Raw other(path);
        QCOMPARE(
            other.exec("BEGIN EXCLUSIVE; INSERT INTO tags VALUES(" + std::to_string(id) + ", 'theirs', '1')"),
            SQLITE_OK);
        RunStore::Options o;
        o.busy_timeout_ms = 150;
        RunStore store(path, o);  // readers are not blocked in WAL mode
        QCOMPARE(store.get_run(id).status, RunStatus::Finished);
        EXPECT_STORE_ERROR(store.set_tag(id, "mine", "2"), Kind::Locked,
                           "database " + path + " is locked by another process");
        QCOMPARE(other.exec("COMMIT"), SQLITE_OK);
        store.set_tag(id, "mine", "2");
        const auto tags = store.get_run(id).tags;
        QCOMPARE(tags.size(), std::size_t(2));
        QCOMPARE(tags.at("theirs"), std::string("1"));
        QCOMPARE(tags.at("mine"), std::string("2"));
    }

    void lockedOnOpen() {
        // A rollback-journal file whose exclusive lock also blocks readers: the open itself fails.
        const auto path = fresh("locked_open");
        std::int64_t id;
        {
            RunStore store(path);
            id = store.create_run(RunInfo{});
        }
        Raw other(path);
        QCOMPARE(other.text("PRAGMA journal_mode=DELETE"), std::string("delete"));
        QCOMPARE(other.exec("BEGIN EXCLUSIVE; UPDATE runs SET name='renamed by other'"), SQLITE_OK);
        RunStore::Options o;
        o.busy_timeout_ms = 150;
        EXPECT_STORE_ERROR(RunStore store(path, o), Kind::Locked,
                           "database " + path + " is locked by another process");
        QCOMPARE(other.exec("COMMIT"), SQLITE_OK);
        RunStore store(path, o);
        QCOMPARE(store.get_run(id).name, std::string("renamed by other"));
    }

    void readOnlyMode() {
        const auto path = fresh("ro");
        std::int64_t id;
        {
            RunStore store(path);
            RunInfo info;
            info.name = "keep me";
            id = store.create_run(info);
            store.set_status(id, RunStatus::Finished);
        }
        const auto before = testsupport::file_bytes(path);
        RunStore::Options ro;
        ro.read_only = true;
        RunStore store(path, ro);
        QVERIFY(store.read_only());
        QCOMPARE(store.list_runs().size(), std::size_t(1));
        QCOMPARE(store.get_run(id).name, std::string("keep me"));
        const std::string msg = "database " + path + " is read-only";
        EXPECT_STORE_ERROR(store.rename(id, "x"), Kind::ReadOnly, msg);
        EXPECT_STORE_ERROR(store.set_tag(id, "k", "v"), Kind::ReadOnly, msg);
        EXPECT_STORE_ERROR(store.create_run(RunInfo{}), Kind::ReadOnly, msg);
        EXPECT_STORE_ERROR(store.purge(), Kind::ReadOnly, msg);
        QCOMPARE(store.get_run(id).name, std::string("keep me"));
        QCOMPARE(testsupport::file_bytes(path), before);

        RunStore::Options ro2 = ro;
        EXPECT_STORE_ERROR(RunStore missing(fresh("missing"), ro2), Kind::NotFound, "does not exist");

        // File permissions: only meaningful when not root (root writes through 0444).
        if (geteuid() != 0) {
            const auto p2 = fresh("ro_perm");
            { RunStore s(p2); }
            std::filesystem::permissions(p2, std::filesystem::perms::owner_read |
                                                 std::filesystem::perms::group_read |
                                                 std::filesystem::perms::others_read);
            EXPECT_STORE_ERROR(RunStore s(p2), Kind::ReadOnly, "database " + p2 + " is read-only");
            RunStore s(p2, ro);
            QCOMPARE(s.list_runs().size(), std::size_t(0));
        }
    }

    void corruptGarbage() {
        const auto path = fresh("garbage");
        std::vector<char> junk(10000);
        Rng rng(3);
        for (auto& c : junk) c = static_cast<char>(rng.below(256));
        testsupport::write_bytes(path, junk);
        EXPECT_STORE_ERROR(RunStore store(path), Kind::Corrupt, "database " + path + " is corrupt: ");
        RunStore::Options ro;
        ro.read_only = true;
        EXPECT_STORE_ERROR(RunStore store(path, ro), Kind::Corrupt, "is corrupt");
        QCOMPARE(testsupport::file_bytes(path), junk);
    }

    void corruptTruncated() {
        const auto path = fresh("truncated");
        {
            RunStore store(path);
            const auto id = store.create_run(RunInfo{});
            RunWriter w(path, id);
            for (int i = 0; i < 20000; ++i) w.log_metric("loss", i, i, i * 0.5);
            QVERIFY(w.finish(RunStatus::Finished));
        }
        auto bytes = testsupport::file_bytes(path);
        QVERIFY(bytes.size() > 100000);
        bytes.resize(bytes.size() / 3);
        testsupport::write_bytes(path, bytes);
        bool corrupt = false;
        try {
            RunStore store(path);
            store.list_runs();
            store.series(1, "loss");
            store.downsample(1, "loss", 100);
            store.check_integrity();
        } catch (const StoreError& e) {
            corrupt = true;
            QVERIFY2(e.kind() == Kind::Corrupt, e.what());
            QVERIFY2(std::string(e.what()).find("database " + path + " is corrupt: ") == 0, e.what());
        }
        QVERIFY(corrupt);
        QCOMPARE(testsupport::file_bytes(path), bytes);
    }

    void interruptedOnReopen() {
        const auto path = fresh("crash");
        std::int64_t crashed, alive, elsewhere, finished;
        double last_wall = 0;
        {
            RunStore store(path);
            crashed = store.create_run(RunInfo{});
            alive = store.create_run(RunInfo{});
            elsewhere = store.create_run(RunInfo{});
            finished = store.create_run(RunInfo{});
            store.set_status(finished, RunStatus::Finished, 5.0);
            RunWriter w(path, crashed);
            for (int i = 0; i < 100; ++i) {
                const double wall = 2000.0 + i * 0.25 + (i % 7);  // not monotone in step
                w.log_metric(i % 2 ? "loss" : "acc", i, wall, i);
            }
            // The newest wall time of each key's latest step is the last sign of life.
            last_wall = std::max(2000.0 + 99 * 0.25 + (99 % 7), 2000.0 + 98 * 0.25 + (98 % 7));
            QVERIFY(w.flush());
        }
        const auto dead = testsupport::dead_pid();
        {
            Raw raw(path);
            raw.exec("UPDATE runs SET owner_pid=" + std::to_string(dead) + " WHERE id IN (" +
                     std::to_string(crashed) + "," + std::to_string(elsewhere) + "," +
                     std::to_string(finished) + ")");
            raw.exec("UPDATE runs SET owner_host='another-machine' WHERE id=" + std::to_string(elsewhere));
        }
        RunStore store(path);
        QCOMPARE(store.interrupted_on_open(), std::vector<std::int64_t>{crashed});
        const Run r = store.get_run(crashed);
        QCOMPARE(r.status, RunStatus::Interrupted);
        QVERIFY(r.ended.has_value());
        QCOMPARE(*r.ended, last_wall);
        QCOMPARE(store.series(crashed, "loss").size(), std::size_t(50));
        QCOMPARE(store.get_run(alive).status, RunStatus::Running);      // our own pid lives
        QCOMPARE(store.get_run(elsewhere).status, RunStatus::Running);  // cannot judge other hosts
        QCOMPARE(store.get_run(finished).status, RunStatus::Finished);
        QCOMPARE(*store.get_run(finished).ended, 5.0);
    }

    void mutations() {
        const auto path = fresh("mut");
        RunStore store(path);
        RunInfo info;
        info.name = "first";
        info.seed = 42;
        const auto a = store.create_run(info);
        const auto b = store.create_run(RunInfo{});
        QVERIFY(a != b);
        QVERIFY(store.get_run(a).uuid != store.get_run(b).uuid);
        QCOMPARE(store.get_run(a).uuid.size(), std::size_t(36));
        QCOMPARE(*store.get_run(a).seed, 42LL);
        QCOMPARE(store.get_run(a).owner_pid.value_or(0), static_cast<std::int64_t>(getpid()));

        store.rename(a, "renamed");
        QCOMPARE(store.get_run(a).name, std::string("renamed"));
        store.set_tag(a, "k", "1");
        store.set_tag(a, "k", "2");
        store.set_tag(a, "flag");
        auto tags = store.get_run(a).tags;
        QCOMPARE(tags.size(), std::size_t(2));
        QCOMPARE(tags.at("k"), std::string("2"));
        store.remove_tag(a, "k");
        QCOMPARE(store.get_run(a).tags.count("k"), std::size_t(0));
        store.set_note(a, "diverged at step 900");
        QCOMPARE(store.get_run(a).note, std::string("diverged at step 900"));
        store.set_note(a, "");
        QCOMPARE(store.get_run(a).note, std::string());

        EXPECT_STORE_ERROR(store.rename(999, "x"), Kind::NotFound, "run 999 does not exist");
        EXPECT_STORE_ERROR(store.set_tag(999, "k", "v"), Kind::NotFound, "run 999 does not exist");
        EXPECT_STORE_ERROR(store.get_run(999), Kind::NotFound, "run 999 does not exist");
        EXPECT_STORE_ERROR(store.set_tag(a, "", "v"), Kind::Invalid, "tag key is empty");
        RunInfo dup;
        dup.uuid = store.get_run(a).uuid;
        EXPECT_STORE_ERROR(store.create_run(dup), Kind::Invalid, "already exists");

        {
            RunWriter w(path, b);
            for (int i = 0; i < 100; ++i) w.log_metric("loss", i, i, i);
            w.log_event(1, 1, "scaler", "{}");
            w.log_histogram(1, "fc1", "grad", {1, 2, 3});
            QVERIFY(w.flush());
        }
        store.set_tag(b, "t");
        store.set_note(b, "bye");
        // The decision boundary: stored, replaced by a later one, read back, and purged with the run.
        QVERIFY(!store.boundary(b));
        store.set_boundary(b, 10, {1, 2, 3});
        store.set_boundary(b, 20, {4, 5});
        const auto boundary = store.boundary(b);
        QVERIFY(boundary.has_value());
        QCOMPARE(boundary->first, std::int64_t{20});
        QCOMPARE(boundary->second, (std::vector<std::uint8_t>{4, 5}));
        QVERIFY(!store.boundary(a));
        EXPECT_STORE_ERROR(store.set_boundary(9999, 1, {1}), Kind::NotFound, "9999");
        const auto g = store.create_group("fp32 vs fp16", {a, b});
        store.set_status(b, RunStatus::Finished);  // a RUNNING run with a live writer cannot be deleted
        store.soft_delete(b);
        QCOMPARE(store.list_runs().size(), std::size_t(1));
        RunFilter trash;
        trash.deleted_only = true;
        QCOMPARE(store.list_runs(trash).size(), std::size_t(1));
        QVERIFY(store.get_run(b).deleted);
        store.restore(b);
        QCOMPARE(store.list_runs().size(), std::size_t(2));
        store.soft_delete(b);
        QCOMPARE(store.purge().purged, 1);
        EXPECT_STORE_ERROR(store.get_run(b), Kind::NotFound, "does not exist");
        Raw raw(path);
        for (const char* t : {"metrics", "latest_metrics", "metric_blocks", "events", "histograms", "tags",
                              "notes", "comparison_members", "boundaries"}) {
            QVERIFY2(raw.integer(std::string("SELECT count(*) FROM ") + t +
                                 " WHERE run_id=" + std::to_string(b)) == 0,
                     t);
        }
        QCOMPARE(store.list_groups().front().run_ids, std::vector<std::int64_t>{a});
        QCOMPARE(store.purge().purged, 0);
        store.delete_group(g);
        QVERIFY(store.list_groups().empty());
    }

    void groups() {
        RunStore store(fresh("groups"));
        const auto a = store.create_run(RunInfo{}), b = store.create_run(RunInfo{}),
                   c = store.create_run(RunInfo{});
        const auto g1 = store.create_group("one", {a, b});
        const auto g2 = store.create_group("two", {c});
        store.add_to_group(g2, {a, c});
        const auto groups = store.list_groups();
        QCOMPARE(groups.size(), std::size_t(2));
        QCOMPARE(groups[0].id, g1);
        QCOMPARE(groups[0].name, std::string("one"));
        QCOMPARE(groups[0].run_ids, (std::vector<std::int64_t>{a, b}));
        QCOMPARE(groups[1].run_ids, (std::vector<std::int64_t>{a, c}));
        EXPECT_STORE_ERROR(store.create_group("bad", {a, 77}), Kind::NotFound, "run 77 does not exist");
        QCOMPARE(store.list_groups().size(), std::size_t(2));  // nothing half-created
        EXPECT_STORE_ERROR(store.create_group("", {a}), Kind::Invalid, "name is empty");
        EXPECT_STORE_ERROR(store.add_to_group(99, {a}), Kind::NotFound, "comparison group 99");
        EXPECT_STORE_ERROR(store.delete_group(99), Kind::NotFound, "comparison group 99");
    }

    // Issue 12, 3.3: ids are never reused, not even the highest one after a purge; a file from
    // schema 4 is migrated (rows, child rows and their cascade kept) and then obeys the same rule.
    // Found by fuzz_bundle_import: a block summary whose ends are out of order (a hand-made or
    // damaged bundle) was trusted, and a series ending near INT64_MAX overflowed the last
    // block's end (UBSan). The rows themselves are the truth in both cases.
    void damagedBlockSummariesAreNotTrusted() {
        const auto path = fresh("damaged_blocks");
        std::int64_t id = 0;
        {
            RunStore store(path);
            id = store.create_run(RunInfo{});
            RunWriter w(path, id);
            for (int i = 0; i < 32; ++i) w.log_metric("loss", i, i, 1.0 + i);
            const std::int64_t top = std::numeric_limits<std::int64_t>::max();
            for (std::int64_t step : {top - 2, top - 1, top}) w.log_metric("far", step, 0, double(step % 7));
            QVERIFY(w.finish(RunStatus::Finished));
        }
        {
            Raw raw(path);
            QCOMPARE(raw.exec("UPDATE metric_blocks SET first_step=10, last_step=5, min=-1000, max=1000 "
                              "WHERE key='loss' AND block=0"),
                     SQLITE_OK);
        }
        RunStore store(path);
        const auto loss = store.downsample(id, "loss", 1);
        QCOMPARE(loss.size(), std::size_t(1));
        QCOMPARE(loss[0].min, 1.0);
        QCOMPARE(loss[0].max, 32.0);
        QCOMPARE(loss[0].count, 32LL);
        const auto far = store.downsample(id, "far", 10);
        QCOMPARE(far.size(), std::size_t(3));
        QCOMPARE(far.back().last_step, std::numeric_limits<std::int64_t>::max());
    }

    // Found by fuzz_bundle_import (session 8): a block summary whose count was INT64_MIN
    // overflowed `count - 1` (UBSan); one whose count exceeds the steps it spans was added as is.
    // The rows are the truth there too.
    void blockCountsThatCannotBeAreNotTrusted() {
        const auto path = fresh("damaged_counts");
        std::int64_t id = 0;
        {
            RunStore store(path);
            id = store.create_run(RunInfo{});
            RunWriter w(path, id);
            for (int i = 0; i < 64; ++i) w.log_metric("loss", i, i, 1.0 + i);
            QVERIFY(w.finish(RunStatus::Finished));
        }
        {
            Raw raw(path);
            QCOMPARE(
                raw.exec("UPDATE metric_blocks SET count=-9223372036854775808 WHERE key='loss' AND block=0; "
                         "UPDATE metric_blocks SET count=1000 WHERE key='loss' AND block=1"),
                SQLITE_OK);
        }
        RunStore store(path);
        const auto loss = store.downsample(id, "loss", 1);
        QCOMPARE(loss.size(), std::size_t(1));
        QCOMPARE(loss[0].count, 64LL);
        QCOMPARE(loss[0].min, 1.0);
        QCOMPARE(loss[0].max, 64.0);
    }

    void runIdsNeverReused() {
        const auto path = fresh("ids");
        RunStore store(path);
        const auto a = store.create_run(RunInfo{});
        const auto b = store.create_run(RunInfo{});
        store.set_status(b, RunStatus::Finished);
        store.soft_delete(b);
        QCOMPARE(store.purge().purged, 1);
        const auto c = store.create_run(RunInfo{});
        QVERIFY2(c > b, qPrintable(QString("run %1 reused the id of purged run %2").arg(c).arg(b)));
        QVERIFY(c != a);
    }

    void migrationFromVersion4KeepsRowsAndStopsIdReuse() {
        const auto path = fresh("v4");
        {
            Raw raw(path);
            QCOMPARE(raw.exec("PRAGMA journal_mode=WAL"), SQLITE_OK);
            for (int v = 0; v < 4; ++v) {
                QCOMPARE(raw.exec(schema_migrations()[static_cast<std::size_t>(v)]), SQLITE_OK);
            }
            QCOMPARE(raw.exec("PRAGMA user_version=4"), SQLITE_OK);
            QCOMPARE(raw.exec("INSERT INTO runs(id, uuid, name, status, created) VALUES"
                              "(1,'u1','kept','FINISHED',1),(2,'u2','deleted','FINISHED',2),"
                              "(3,'u3','last','FINISHED',3);"
                              "INSERT INTO metrics(run_id, key, step, wall_time, value) "
                              "VALUES(1,'loss',0,1,0.5),(3,'loss',0,1,0.25);"
                              "INSERT INTO tags(run_id, key, value) VALUES(1,'k','v'),(3,'k','w');"
                              "UPDATE runs SET deleted=1 WHERE id=3;"),
                     SQLITE_OK);
        }
        RunStore store(path);
        QCOMPARE(store.opened_schema_version(), 4);
        QCOMPARE(store.get_run(1).name, std::string("kept"));
        QCOMPARE(store.get_run(1).tags.at("k"), std::string("v"));
        QCOMPARE(store.series(1, "loss").size(), std::size_t(1));
        QCOMPARE(store.purge().purged, 1);  // run 3 and, through the cascade, its rows
        Raw raw(path);
        QCOMPARE(raw.integer("SELECT count(*) FROM metrics WHERE run_id=3"), 0LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM tags WHERE run_id=3"), 0LL);
        QCOMPARE(raw.integer("PRAGMA foreign_key_check"), -1LL);  // no row: nothing dangles
        QVERIFY(store.create_run(RunInfo{}) > 3);
    }

    // Issue 12, 3.3: a RUNNING run whose writer is alive cannot be deleted or purged; one whose
    // writer died becomes INTERRUPTED and can; one written on another machine cannot be judged
    // from here and is refused with the host named.
    void runningRunCannotBeDeleted() {
        const auto path = fresh("running");
        RunStore store(path);
        const auto live = store.create_run(RunInfo{});
        const auto dead = store.create_run(RunInfo{});
        const auto remote = store.create_run(RunInfo{});
        {
            Raw raw(path);
            raw.exec("UPDATE runs SET owner_pid=" + std::to_string(testsupport::dead_pid()) +
                     " WHERE id=" + std::to_string(dead));
            raw.exec("UPDATE runs SET owner_host='another-machine' WHERE id=" + std::to_string(remote));
        }
        EXPECT_STORE_ERROR(store.soft_delete(live), Kind::InUse,
                           "run " + std::to_string(live) + " is still running (process " +
                               std::to_string(getpid()) + " on " + testsupport::host() + ")");
        QVERIFY(!store.get_run(live).deleted);
        EXPECT_STORE_ERROR(store.soft_delete(remote), Kind::InUse, "another-machine");
        store.soft_delete(dead);
        QCOMPARE(store.get_run(dead).status, RunStatus::Interrupted);
        QVERIFY(store.get_run(dead).deleted);

        // A live run marked deleted behind the store's back (an older build) survives a purge.
        Raw(path).exec("UPDATE runs SET deleted=1 WHERE id=" + std::to_string(live));
        const auto report = store.purge();
        QCOMPARE(report.purged, 1);
        QCOMPARE(report.still_running, std::vector<std::int64_t>{live});
        QCOMPARE(store.get_run(live).status, RunStatus::Running);
        store.set_status(live, RunStatus::Finished);
        QCOMPARE(store.purge().purged, 1);
    }

    // A pid that now belongs to another process is not the run's writer: the start time
    // recorded with the run tells them apart, so the run is INTERRUPTED on the next open.
    void reusedPidIsNotTheWriter() {
        const auto path = fresh("pidreuse");
        std::int64_t id;
        {
            RunStore store(path);
            id = store.create_run(RunInfo{});
        }
        QVERIFY(!Raw(path).text("SELECT owner_start FROM runs WHERE id=" + std::to_string(id)).empty());
        Raw(path).exec("UPDATE runs SET owner_pid=" + std::to_string(getppid()) +
                       " WHERE id=" + std::to_string(id));
        RunStore store(path);
        QCOMPARE(store.interrupted_on_open(), std::vector<std::int64_t>{id});
        QCOMPARE(store.get_run(id).status, RunStatus::Interrupted);
    }

    // Issue 12, 3.7: a file whose quick_check fails is refused for writing, untouched, naming the
    // file; it can still be read.
    void corruptRefusedForWriting() {
        const auto path = fresh("quickcheck");
        std::int64_t id;
        {
            RunStore store(path);
            id = store.create_run(RunInfo{});
            RunWriter w(path, id);
            for (int i = 0; i < 3000; ++i) w.log_metric("loss", i, i, i * 0.5);
            QVERIFY(w.finish(RunStatus::Finished));
        }
        QVERIFY(testsupport::damage_page_of(path, "metrics_series") > 0);
        const auto before = testsupport::file_bytes(path);
        EXPECT_STORE_ERROR(RunStore store(path), Kind::Corrupt, "database " + path + " is corrupt");
        QCOMPARE(testsupport::file_bytes(path), before);
        RunStore::Options ro;
        ro.read_only = true;
        RunStore reader(path, ro);
        QCOMPARE(reader.get_run(id).status, RunStatus::Finished);
    }

    // Issue 12, 3.8: when SQLite cannot create or grow the -shm beside a WAL database (a
    // read-only folder, a full disk), a read-only open still reads the file. Here the -shm is a
    // link to /dev/full, which opens but cannot be sized: that fails for root too.
    void readOnlyOpenWithoutShm() {
        const auto path = fresh("noshm");
        std::int64_t id;
        {
            RunStore store(path);
            RunInfo info;
            info.name = "readable";
            id = store.create_run(info);
            store.set_status(id, RunStatus::Finished);
        }
        QVERIFY(!std::filesystem::exists(path + "-shm"));
        std::filesystem::create_symlink("/dev/full", path + "-shm");
        RunStore::Options ro;
        ro.read_only = true;
        RunStore store(path, ro);
        QCOMPARE(store.get_run(id).name, std::string("readable"));
        QCOMPARE(store.list_runs().size(), std::size_t(1));
    }

    // Issue 12, 3.8: a full disk is said in one sentence naming the file.
    void diskFullMessage() {
        const auto path = fresh("full");
        RunStore store(path);
        const auto pages = store.db().query_int("PRAGMA page_count");
        store.db().exec("PRAGMA max_page_count=" + std::to_string(pages));
        RunInfo big;
        big.config_json = "{\"pad\":\"" + std::string(200000, 'x') + "\"}";
        EXPECT_STORE_ERROR(store.create_run(big), Kind::DiskFull, "the disk holding " + path + " is full");
    }

    void statusText() {
        QCOMPARE(parse_run_status("finished"), RunStatus::Finished);
        QCOMPARE(std::string(to_string(RunStatus::Interrupted)), std::string("INTERRUPTED"));
        EXPECT_STORE_ERROR(parse_run_status("DONE"), Kind::Invalid, "unknown run status 'DONE'");
        RunFilter f;
        EXPECT_STORE_ERROR(set_tag_filter(f, "=x"), Kind::Invalid, "empty key");
    }

    // Text that is not UTF-8 is refused where it enters the store (issue 24): one such run name
    // made `runs list --json` fail for the whole store.
    void nonUtf8TextRefusedAtEntry() {
        const auto path = fresh("utf8");
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        const std::string bad = "name \xFF";
        EXPECT_STORE_ERROR(store.rename(id, bad), Kind::Invalid, "byte 0xFF at offset 5 is not valid UTF-8");
        EXPECT_STORE_ERROR(store.set_tag(id, bad, "v"), Kind::Invalid, "tag key");
        EXPECT_STORE_ERROR(store.set_tag(id, "k", "\xC0\xAF"), Kind::Invalid, "tag value");
        EXPECT_STORE_ERROR(store.set_note(id, "\xE2\x82"), Kind::Invalid, "note");
        EXPECT_STORE_ERROR(store.create_group(bad, {id}), Kind::Invalid, "comparison group name");
        RunInfo info;
        info.name = bad;
        EXPECT_STORE_ERROR(store.create_run(info), Kind::Invalid, "run name");
        SweepRecord sweep;
        sweep.name = bad;
        sweep.spec_json = "{}";
        sweep.run_count = 1;
        EXPECT_STORE_ERROR(store.create_sweep(sweep), Kind::Invalid, "sweep name");
        QCOMPARE(store.list_runs().size(), std::size_t(1));
        QCOMPARE(store.get_run(id).name, std::string());
        QVERIFY(store.get_run(id).tags.empty());
        store.rename(id, "caf\xC3\xA9 \xF0\x9F\x98\x80");  // well-formed text is taken as it is
        QCOMPARE(store.get_run(id).name, std::string("caf\xC3\xA9 \xF0\x9F\x98\x80"));
    }

    // When the write lock stays taken for the whole wait, the error says which process holds it
    // (issue 24): "locked by another process" alone left the user guessing.
    void lockErrorNamesTheHolder() {
        const auto path = fresh("held");
        { RunStore(path).create_run(RunInfo{}); }
        int ready[2], release[2];
        QCOMPARE(pipe(ready), 0);
        QCOMPARE(pipe(release), 0);
        const pid_t child = fork();
        if (child == 0) {
            close(ready[0]);
            close(release[1]);
            sqlite3* db = nullptr;
            char byte = 0;
            const bool held = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
                              sqlite3_exec(db, "BEGIN IMMEDIATE; UPDATE runs SET name='held'", nullptr,
                                           nullptr, nullptr) == SQLITE_OK;
            byte = held ? 1 : 0;
            if (write(ready[1], &byte, 1) != 1) _exit(2);
            while (read(release[0], &byte, 1) > 0) {}  // until the parent closes its end
            _exit(held ? 0 : 1);
        }
        close(ready[1]);
        close(release[0]);
        // However the checks below end, the child is let go and reaped.
        struct Release {
            int fd;
            pid_t child;
            ~Release() {
                close(fd);
                waitpid(child, nullptr, 0);
            }
        } const release_child{release[1], child};
        char held = 0;
        QCOMPARE(read(ready[0], &held, 1), ssize_t(1));
        close(ready[0]);
        QCOMPARE(held, char(1));
        RunStore::Options o;
        o.busy_timeout_ms = 100;
        o.detect_interrupted = false;
        RunStore store(path, o);
        EXPECT_STORE_ERROR(store.set_tag(1, "k"), Kind::Locked,
                           "its write lock is held by process " + std::to_string(child));
    }

    // A connection that reads a file from elsewhere has its work bounded by steps, not by time:
    // an endless recursive query stops with an error naming what was being read.
    void workLimitStopsEndlessQueries() {
        sqlite::Db db(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MEMORY);
        db.limit_work(1000000, "bundle hostile.mpwb");
        EXPECT_STORE_ERROR(db.query_int("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                                        "SELECT count(*) FROM c"),
                           Kind::Invalid, "bundle hostile.mpwb: stopped after 1000000 steps");
        db.clear_work_limit();
        QCOMPARE(
            db.query_int("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) "
                         "SELECT count(*) FROM c"),
            std::int64_t(300000));
        QVERIFY(sqlite::work_steps_for_file("/nonexistent/file") > 1000000);
    }
};

QTEST_APPLESS_MAIN(TestRunStore)
#include "test_run_store.moc"
