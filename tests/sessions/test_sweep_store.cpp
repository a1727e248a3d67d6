// Tests of the store's sweeps (schema 7): creation by uuid (a second create finds the first),
// runs at their planned indices, listing, the sweep of a run, refusals naming the sweep, and
// sweeps travelling in bundles and in plain run-store imports, merged by uuid; hostile task
// databases (a schema of their own, impossible counts, another plan for the same uuid, 0 bytes)
// refused by name with nothing imported and no temporary copy left.
#include "sessions/run_bundle.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "test_support.h"

#include <filesystem>
#include <functional>

using namespace mpwb;
using Kind = StoreError::Kind;

namespace {

std::int64_t finished_run(RunStore& store, const std::string& name, RunStatus status = RunStatus::Finished) {
    RunInfo info;
    info.name = name;
    const auto id = store.create_run(info);
    if (status != RunStatus::Running) store.set_status(id, status, store_now());
    return id;
}

SweepRecord sweep_named(const std::string& name, const std::string& uuid, std::int64_t runs) {
    SweepRecord s;
    s.name = name;
    s.uuid = uuid;
    s.spec_json = R"({"name":")" + name + R"(","preset":"spiral-mlp"})";
    s.run_count = runs;
    return s;
}

}  // namespace

class TestSweepStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QTemporaryDir tmp_;  // $TMPDIR of this test: where import_run_store makes its copies
    std::string p(const char* name) { return dir_.filePath(name).toStdString(); }

    int scratch_dirs_left() const {
        int n = 0;
        for (const auto& entry : std::filesystem::directory_iterator(tmp_.path().toStdString()))
            n += entry.path().filename().string().rfind("mpwb-import-", 0) == 0;
        return n;
    }

private slots:
    void initTestCase() { qputenv("TMPDIR", tmp_.path().toUtf8()); }

    void createFindAndList() {
        RunStore store(p("create.sqlite"));
        const auto id = store.create_sweep(sweep_named("lr sweep", "u-1", 3));
        QCOMPARE(store.create_sweep(sweep_named("other name", "u-1", 9)), id);  // found, not changed
        QCOMPARE(store.find_sweep_by_uuid("u-1"), std::optional<std::int64_t>(id));
        QVERIFY(!store.find_sweep_by_uuid("u-2"));
        const auto generated = store.create_sweep(sweep_named("fresh", "", 2));
        QVERIFY(generated != id);
        const SweepRecord fresh = store.get_sweep(generated);
        QCOMPARE(fresh.uuid.size(), std::size_t(36));
        QCOMPARE(fresh.uuid[14], '4');
        QVERIFY(store.create_sweep(sweep_named("fresh too", "", 2)) != generated);  // a new uuid each time

        const auto sweeps = store.list_sweeps();
        QCOMPARE(sweeps.size(), std::size_t(3));
        QCOMPARE(sweeps[0].name, std::string("lr sweep"));
        QCOMPARE(sweeps[0].run_count, std::int64_t(3));
        QCOMPARE(sweeps[0].spec_json, sweep_named("lr sweep", "", 0).spec_json);
        QVERIFY(sweeps[0].created > 0);
    }

    void runsAtTheirIndices() {
        RunStore store(p("runs.sqlite"));
        const auto sweep = store.create_sweep(sweep_named("s", "u-runs", 3));
        const auto a = finished_run(store, "a"), b = finished_run(store, "b"), c = finished_run(store, "c");
        const auto outside = finished_run(store, "outside");
        store.add_sweep_run(sweep, 2, a);
        store.add_sweep_run(sweep, 0, b);
        store.add_sweep_run(sweep, 0, c);  // a retried index replaces the earlier run
        const SweepRecord s = store.get_sweep(sweep);
        QCOMPARE(s.runs.size(), std::size_t(2));
        QCOMPARE(s.runs[0].index, std::int64_t(0));
        QCOMPARE(s.runs[0].run_id, c);
        QCOMPARE(s.runs[1].index, std::int64_t(2));
        QCOMPARE(s.runs[1].run_id, a);
        const auto membership = store.sweep_of_run(a);
        QVERIFY(membership);
        QCOMPARE(membership->sweep_id, sweep);
        QCOMPARE(membership->index, std::int64_t(2));
        QVERIFY(!store.sweep_of_run(outside));
        QVERIFY(!store.sweep_of_run(b));
    }

    void refusals() {
        RunStore store(p("refusals.sqlite"));
        const auto sweep = store.create_sweep(sweep_named("small", "u-small", 2));
        const auto run = finished_run(store, "r");
        try {
            store.add_sweep_run(sweep, 2, run);
            QFAIL("an index beyond the plan was accepted");
        } catch (const StoreError& e) {
            QCOMPARE(e.kind(), Kind::Invalid);
            QVERIFY2(std::string(e.what()).find("'small'") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("index 2") != std::string::npos, e.what());
        }
        QVERIFY_THROWS_EXCEPTION(StoreError, store.add_sweep_run(sweep, 0, run + 100));
        try {
            store.get_sweep(sweep + 7);
            QFAIL("an unknown sweep was returned");
        } catch (const StoreError& e) {
            QCOMPARE(e.kind(), Kind::NotFound);
        }
        QVERIFY_THROWS_EXCEPTION(StoreError, store.create_sweep(sweep_named("", "u-x", 1)));
        QVERIFY(store.get_sweep(sweep).runs.empty());
    }

    void bundleRoundTripMergesByUuid() {
        const auto src_path = p("bundle_src.sqlite");
        std::int64_t a = 0, b = 0;
        {
            RunStore src(src_path);
            const auto sweep = src.create_sweep(sweep_named("bundled", "u-bundle", 4));
            a = finished_run(src, "a");
            b = finished_run(src, "b");
            finished_run(src, "padding");
            src.add_sweep_run(sweep, 1, a);
            src.add_sweep_run(sweep, 3, b);
            export_bundle(src, {a}, p("first.mpwb"));
            export_bundle(src, {b}, p("second.mpwb"));
        }
        RunStore dst(p("bundle_dst.sqlite"));
        finished_run(dst, "already here");  // so ids differ from the source's
        const auto first = import_bundle(dst, p("first.mpwb"));
        QCOMPARE(first.sweeps.size(), std::size_t(1));
        const auto second = import_bundle(dst, p("second.mpwb"));
        QCOMPARE(second.sweeps, first.sweeps);  // the same sweep, found by uuid
        const auto sweeps = dst.list_sweeps();
        QCOMPARE(sweeps.size(), std::size_t(1));
        const SweepRecord s = sweeps[0];
        QCOMPARE(s.uuid, std::string("u-bundle"));
        QCOMPARE(s.run_count, std::int64_t(4));
        QCOMPARE(s.spec_json, sweep_named("bundled", "", 0).spec_json);
        QCOMPARE(s.runs.size(), std::size_t(2));
        QCOMPARE(s.runs[0].index, std::int64_t(1));
        QCOMPARE(dst.get_run(s.runs[0].run_id).name, std::string("a"));
        QCOMPARE(s.runs[1].index, std::int64_t(3));
        QCOMPARE(dst.get_run(s.runs[1].run_id).name, std::string("b"));
        const auto again = import_bundle(dst, p("second.mpwb"));
        QVERIFY(again.imported.empty());
        QVERIFY(again.sweeps.empty());
        QCOMPARE(dst.get_sweep(s.id).runs.size(), std::size_t(2));
    }

    // A task's database is no bundle: import_run_store reads it without changing a byte, leaves
    // unfinished runs for a later import and merges its sweep by uuid.
    void plainStoreImportLeavesTheFileAlone() {
        const auto task_path = p("task_0.sqlite");
        {
            RunStore task(task_path);
            const auto sweep = task.create_sweep(sweep_named("task sweep", "u-task", 3));
            task.add_sweep_run(sweep, 0, finished_run(task, "done"));
            task.add_sweep_run(sweep, 1, finished_run(task, "still running", RunStatus::Running));
            task.add_sweep_run(sweep, 2, finished_run(task, "preempted", RunStatus::Interrupted));
        }
        QVERIFY(!is_run_bundle(task_path));
        const auto before = testsupport::file_bytes(task_path);
        const auto wal_before = std::filesystem::exists(task_path + "-wal");
        RunStore dst(p("collected.sqlite"));
        const auto report = import_run_store(dst, task_path);
        QCOMPARE(report.imported.size(), std::size_t(1));
        QCOMPARE(report.unfinished.size(), std::size_t(2));
        QVERIFY(testsupport::file_bytes(task_path) == before);
        QCOMPARE(std::filesystem::exists(task_path + "-wal"), wal_before);
        const auto sweep = dst.get_sweep(*dst.find_sweep_by_uuid("u-task"));
        QCOMPARE(sweep.runs.size(), std::size_t(1));
        QCOMPARE(dst.get_run(sweep.runs[0].run_id).name, std::string("done"));
        QVERIFY(import_run_store(dst, task_path).imported.empty());
        try {
            import_run_store(dst, p("missing.sqlite"));
            QFAIL("a missing file was imported");
        } catch (const StoreError& e) {
            QVERIFY2(std::string(e.what()).find("missing.sqlite") != std::string::npos, e.what());
        }
    }

    // A task database is data, not code (issue 24): one whose schema is not the store's is refused
    // by name before anything of it is read or copied, and no temporary copy is left behind. The
    // trigger used to spin forever in the copy's DELETE of unfinished runs.
    void hostileTaskDatabasesAreRefused_data() {
        QTest::addColumn<QString>("sql");
        QTest::addColumn<QString>("needle");
        QTest::newRow("endless trigger")
            << "CREATE TRIGGER spin BEFORE DELETE ON runs BEGIN SELECT count(*) FROM (WITH RECURSIVE "
               "c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c); END"
            << "trigger 'spin' on table 'runs'";
        QTest::newRow("endless view")
            << "CREATE VIEW forever AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT x FROM c"
            << "view 'forever'";
        QTest::newRow("extra table") << "CREATE TABLE extra(x)"
                                     << "table 'extra'";
        QTest::newRow("extra index") << "CREATE INDEX by_value ON metrics(value)"
                                     << "index 'by_value'";
        QTest::newRow("missing index") << "DROP INDEX sweep_runs_run"
                                       << "lacks the index 'sweep_runs_run'";
    }
    void hostileTaskDatabasesAreRefused() {
        QFETCH(QString, sql);
        QFETCH(QString, needle);
        const std::string task_path = p("hostile_task.sqlite");
        std::filesystem::remove(task_path);
        {
            RunStore task(task_path);
            const auto sweep = task.create_sweep(sweep_named("hostile", "u-hostile", 2));
            task.add_sweep_run(sweep, 0, finished_run(task, "done"));
            task.add_sweep_run(sweep, 1, finished_run(task, "running", RunStatus::Running));
        }
        QCOMPARE(testsupport::Raw(task_path).exec(sql.toStdString()), SQLITE_OK);
        const auto before = testsupport::file_bytes(task_path);
        RunStore dst(p("hostile_dst.sqlite"));
        EXPECT_STORE_ERROR(import_run_store(dst, task_path), Kind::Invalid, needle.toStdString());
        EXPECT_STORE_ERROR(import_run_store(dst, task_path), Kind::Invalid, task_path);
        QVERIFY(dst.list_runs().empty());
        QVERIFY(testsupport::file_bytes(task_path) == before);
        QCOMPARE(scratch_dirs_left(), 0);
    }

    // Counts from a task database are checked before they size anything: a planned run count of
    // 1e11 imported and then made every collect of the sweep allocate until std::bad_alloc.
    void sweepCountsFromATaskDatabaseAreChecked_data() {
        QTest::addColumn<QString>("sql");
        QTest::addColumn<QString>("needle");
        QTest::newRow("huge count") << "UPDATE sweeps SET run_count = 100000000000"
                                    << "run_count: 100000000000";
        QTest::newRow("negative count") << "UPDATE sweeps SET run_count = -3"
                                        << "run_count: -3";
        QTest::newRow("text count") << "UPDATE sweeps SET run_count = 'many'"
                                    << "run_count: many";
        QTest::newRow("index past the plan") << "UPDATE sweep_runs SET run_index = 7"
                                             << "run_index: 7";
        QTest::newRow("negative index") << "UPDATE sweep_runs SET run_index = -1"
                                        << "run_index: -1";
    }
    void sweepCountsFromATaskDatabaseAreChecked() {
        QFETCH(QString, sql);
        QFETCH(QString, needle);
        const std::string task_path = p("counted_task.sqlite");
        std::filesystem::remove(task_path);
        {
            RunStore task(task_path);
            const auto sweep = task.create_sweep(sweep_named("counted", "u-counted", 3));
            task.add_sweep_run(sweep, 1, finished_run(task, "done"));
        }
        QCOMPARE(testsupport::Raw(task_path).exec(sql.toStdString()), SQLITE_OK);
        RunStore dst(p("counted_dst.sqlite"));
        EXPECT_STORE_ERROR(import_run_store(dst, task_path), Kind::Invalid, needle.toStdString());
        EXPECT_STORE_ERROR(import_run_store(dst, task_path), Kind::Invalid, "nothing was imported");
        QVERIFY(dst.list_runs().empty());
        QVERIFY(dst.list_sweeps().empty());
    }

    // Runs join the store's sweep at their indices: a task database whose sweep of the same uuid
    // plans another number of runs is refused rather than filling indices the store's sweep lacks.
    void sweepOfAnotherPlanIsRefused() {
        RunStore dst(p("plan_dst.sqlite"));
        dst.create_sweep(sweep_named("planned", "u-plan", 3));
        const std::string task_path = p("plan_task.sqlite");
        {
            RunStore task(task_path);
            const auto sweep = task.create_sweep(sweep_named("planned", "u-plan", 5));
            task.add_sweep_run(sweep, 4, finished_run(task, "fifth"));
        }
        EXPECT_STORE_ERROR(import_run_store(dst, task_path), Kind::Invalid, "plans 5 runs");
        QVERIFY(dst.list_runs().empty());
        QCOMPARE(dst.get_sweep(*dst.find_sweep_by_uuid("u-plan")).run_count, std::int64_t(3));
    }

    // The store takes no sweep larger than a spec may plan, whoever asks.
    void createSweepBoundsTheCount() {
        RunStore store(p("bound.sqlite"));
        EXPECT_STORE_ERROR(store.create_sweep(sweep_named("big", "u-big", 10001)), Kind::Invalid, "10001");
        EXPECT_STORE_ERROR(store.create_sweep(sweep_named("negative", "u-neg", -3)), Kind::Invalid, "-3");
        QVERIFY(store.list_sweeps().empty());
    }

    // A 0-byte task database (a task that died before its first write) is empty, not an old
    // store that "open it once for writing to upgrade it" would mend.
    void emptyTaskDatabaseIsSaidToBeEmpty() {
        const std::string empty = p("task_empty.sqlite");
        testsupport::write_bytes(empty, {});
        RunStore::Options ro;
        ro.read_only = true;
        for (const auto& attempt :
             {std::function<void()>([&] { RunStore(empty, ro); }), std::function<void()>([&] {
                  RunStore dst(p("empty_dst.sqlite"));
                  import_run_store(dst, empty);
              })}) {
            try {
                attempt();
                QFAIL("an empty file was read as a run store");
            } catch (const StoreError& e) {
                QVERIFY2(std::string(e.what()).find("is empty") != std::string::npos, e.what());
                QVERIFY2(std::string(e.what()).find("upgrade") == std::string::npos, e.what());
            }
        }
        QCOMPARE(std::filesystem::file_size(empty), std::uintmax_t(0));
    }
};

QTEST_GUILESS_MAIN(TestSweepStore)
#include "test_sweep_store.moc"
