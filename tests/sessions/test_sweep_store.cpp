// Tests of the store's sweeps (schema 7): creation by uuid (a second create finds the first),
// runs at their planned indices, listing, the sweep of a run, refusals naming the sweep, and
// sweeps travelling in bundles and in plain run-store imports, merged by uuid.
#include "sessions/run_bundle.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "test_support.h"

#include <filesystem>

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
    std::string p(const char* name) { return dir_.filePath(name).toStdString(); }

private slots:
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
};

QTEST_GUILESS_MAIN(TestSweepStore)
#include "test_sweep_store.moc"
