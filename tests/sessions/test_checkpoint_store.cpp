// Tests of checkpoints in the run store (schema 7): save keeps a run's newest two and
// latest_checkpoint reads the newest back byte for byte; the RunWriter commits them with the rows
// before them; reopen_for_resume trims what a run recorded after the checkpoint's step and leaves
// latest_metrics and metric_blocks exactly as a run that never went past that step (checked
// against a recomputation from the raw metrics, and against an uninterrupted run after the
// resumed steps are written again); it refuses FINISHED and FAILED runs, live writers, unknown
// runs and missing checkpoints; purge removes checkpoints; a schema-6 file migrates; the recorder
// stores checkpoints, ends a run INTERRUPTED and continues it.
#include "sessions/run_recorder.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "sessions/store_schema.h"
#include "test_support.h"

#include <cmath>
#include <limits>

using namespace mpwb;
using testsupport::Raw;
using Kind = StoreError::Kind;

namespace {

TrainingCheckpoint checkpoint_at(std::int64_t step) {
    TrainingCheckpoint c;
    c.step = step;
    c.epoch = step / 10;
    c.batch = step % 10;
    c.wall_seconds = 0.5 * static_cast<double>(step);
    for (std::int64_t i = 0; i < 64 + step; ++i) c.state.push_back(static_cast<std::uint8_t>(i * 7 + step));
    return c;
}

void expect_same_checkpoint(const TrainingCheckpoint& got, const TrainingCheckpoint& want) {
    QCOMPARE(got.step, want.step);
    QCOMPARE(got.epoch, want.epoch);
    QCOMPARE(got.batch, want.batch);
    QCOMPARE(got.wall_seconds, want.wall_seconds);
    QVERIFY(got.state == want.state);
}

// The rows of every step in [first, last] that a run logs: a dense series, one with NaN values,
// one logged every 10 steps (an evaluation), one only at steps 81..90; a histogram and a scaling
// statistics row every 20 steps; an event every 30.
void log_steps(RunWriter& w, std::int64_t first, std::int64_t last) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::int64_t s = first; s <= last; ++s) {
        const double t = 1000.0 + static_cast<double>(s);
        w.log_metric("loss", s, t, 1.0 / static_cast<double>(s) + static_cast<double>(s % 7));
        w.log_metric("noisy", s, t, s % 5 == 0 ? nan : static_cast<double>((s * 37) % 11));
        if (s % 10 == 0) w.log_metric("test", s, t, static_cast<double>(s % 13));
        if (s > 80 && s <= 90) w.log_metric("late", s, t, static_cast<double>(s));
        if (s % 20 == 0) w.log_histogram(s, "1 Linear", "activation_grad", {1, 2, 3});
        if (s % 20 == 0) {
            ScalingStatsRecord r;
            r.step = s;
            r.layer_label = "1 Linear";
            r.stats.operand = "x";
            r.stats.element = Format::E4M3;
            w.log_scaling_stats(r);
        }
        if (s % 30 == 0) w.log_event(s, t, "note", "{}");
    }
}

// latest_metrics and metric_blocks of the run, as text rows, for whole-table comparisons.
std::string summaries(const std::string& path, std::int64_t run) {
    Raw raw(path);
    const std::string id = std::to_string(run);
    return raw.text(
               "SELECT group_concat(r, '|') FROM (SELECT key || ',' || step || ',' || wall_time || ',' || "
               "coalesce(value, 'null') || ',' || coalesce(min, 'null') || ',' || coalesce(max, 'null') || "
               "',' || count AS r FROM latest_metrics WHERE run_id=" +
               id + " ORDER BY key)") +
           "#" +
           raw.text(
               "SELECT group_concat(r, '|') FROM (SELECT key || ',' || block || ',' || first_step || ',' || "
               "coalesce(first_value, 'null') || ',' || last_step || ',' || coalesce(last_value, 'null') || "
               "',' || coalesce(min, 'null') || ',' || coalesce(max, 'null') || ',' || count AS r "
               "FROM metric_blocks WHERE run_id=" +
               id + " ORDER BY key, block)");
}

// The same summaries recomputed from the run's raw metrics (as migrations 2 and 3 build them).
std::string recomputed_summaries(const std::string& path, std::int64_t run) {
    const std::string id = std::to_string(run);
    const std::string copy = path + ".recomputed";
    {
        Raw raw(path);
        raw.exec("ATTACH DATABASE '" + copy + "' AS r");
        raw.exec("CREATE TABLE r.latest_metrics AS SELECT * FROM main.latest_metrics WHERE 0");
        raw.exec("CREATE TABLE r.metric_blocks AS SELECT * FROM main.metric_blocks WHERE 0");
        raw.exec(
            "INSERT INTO r.latest_metrics(run_id, key, step, wall_time, value, min, max, count) "
            "SELECT a.run_id, a.key, a.ms, (SELECT wall_time FROM metrics m WHERE m.run_id=a.run_id AND "
            "m.key=a.key AND m.step=a.ms ORDER BY rowid DESC LIMIT 1), (SELECT value FROM metrics m WHERE "
            "m.run_id=a.run_id AND m.key=a.key AND m.step=a.ms ORDER BY rowid DESC LIMIT 1), a.mn, a.mx, a.n "
            "FROM (SELECT run_id, key, max(step) ms, min(value) mn, max(value) mx, count(*) n FROM metrics "
            "WHERE run_id=" +
            id + " GROUP BY key) a");
        raw.exec(
            "INSERT INTO r.metric_blocks(run_id, key, block, first_step, last_step, min, max, count) "
            "SELECT run_id, key, step >> 5, min(step), max(step), min(value), max(value), count(*) "
            "FROM metrics WHERE run_id=" +
            id + " GROUP BY key, step >> 5");
        raw.exec(
            "UPDATE r.metric_blocks SET first_value=(SELECT value FROM metrics m WHERE m.run_id="
            "metric_blocks.run_id AND m.key=metric_blocks.key AND m.step=metric_blocks.first_step ORDER BY "
            "rowid LIMIT 1), last_value=(SELECT value FROM metrics m WHERE m.run_id=metric_blocks.run_id "
            "AND m.key=metric_blocks.key AND m.step=metric_blocks.last_step ORDER BY rowid DESC LIMIT 1)");
    }
    const std::string result = summaries(copy, run);
    std::remove(copy.c_str());
    return result;
}

long long count(const std::string& path, const std::string& table, std::int64_t run,
                const std::string& where = "1") {
    return Raw(path).integer("SELECT count(*) FROM " + table + " WHERE run_id=" + std::to_string(run) +
                             " AND " + where);
}

}  // namespace

class TestCheckpointStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    std::string fresh(const char* stem) {
        return dir_.filePath(QString("%1_%2.sqlite").arg(stem).arg(++n_)).toStdString();
    }

    // A run of steps 1..100 with checkpoints at 40, 70 and 90, ended with `status`.
    std::int64_t recorded_run(const std::string& path, RunStatus status) {
        RunStore store(path);
        const auto run = store.create_run(RunInfo{});
        RunWriter w(path, run);
        log_steps(w, 1, 70);
        w.log_checkpoint(checkpoint_at(40));
        w.log_checkpoint(checkpoint_at(70));
        log_steps(w, 71, 90);
        w.log_checkpoint(checkpoint_at(90));
        log_steps(w, 91, 100);
        w.log_event(100, 2000, "summary", "{}");
        if (!w.finish(status)) qFatal("finish failed: %s", w.last_error().value_or("").c_str());
        store.set_boundary(run, 100, {9, 9, 9});
        return run;
    }

private slots:
    void saveKeepsTheNewestTwo() {
        const auto path = fresh("keep");
        RunStore store(path);
        const auto run = store.create_run(RunInfo{});
        const auto other = store.create_run(RunInfo{});
        QVERIFY(!store.latest_checkpoint(run));
        for (std::int64_t step : {10, 30, 20}) store.save_checkpoint(run, checkpoint_at(step));
        store.save_checkpoint(other, checkpoint_at(5));
        // Newest by step, whatever the order of saving: 30 and 20 stay.
        QCOMPARE(count(path, "checkpoints", run), 2LL);
        QCOMPARE(count(path, "checkpoints", run, "step=10"), 0LL);
        expect_same_checkpoint(*store.latest_checkpoint(run), checkpoint_at(30));
        expect_same_checkpoint(*store.latest_checkpoint(other), checkpoint_at(5));
        store.save_checkpoint(run, checkpoint_at(40), 1);
        QCOMPARE(count(path, "checkpoints", run), 1LL);
        EXPECT_STORE_ERROR(store.save_checkpoint(run, checkpoint_at(50), 0), Kind::Invalid, "at least 1");
        EXPECT_STORE_ERROR(store.save_checkpoint(run + 99, checkpoint_at(50)), Kind::NotFound,
                           "does not exist");
        auto bad = checkpoint_at(60);
        bad.wall_seconds = std::numeric_limits<double>::quiet_NaN();
        EXPECT_STORE_ERROR(store.save_checkpoint(run, bad), Kind::Invalid, "impossible");
        expect_same_checkpoint(*store.latest_checkpoint(run), checkpoint_at(40));
    }

    void damagedPositionIsCorruptByName() {
        const auto path = fresh("damaged");
        RunStore store(path);
        const auto run = store.create_run(RunInfo{});
        store.save_checkpoint(run, checkpoint_at(10));
        QCOMPARE(Raw(path).exec("UPDATE checkpoints SET batch=-3"), SQLITE_OK);
        EXPECT_STORE_ERROR(store.latest_checkpoint(run), Kind::Corrupt, "table checkpoints, row");
    }

    void writerCommitsCheckpointsWithTheirRows() {
        const auto path = fresh("writer");
        const auto run = recorded_run(path, RunStatus::Interrupted);
        RunStore store(path);
        QCOMPARE(count(path, "checkpoints", run), 2LL);
        expect_same_checkpoint(*store.latest_checkpoint(run), checkpoint_at(90));
        QCOMPARE(store.get_run(run).status, RunStatus::Interrupted);
    }

    void reopenTrimsAfterTheStep() {
        const auto path = fresh("trim");
        const auto run = recorded_run(path, RunStatus::Interrupted);
        const auto before = Raw(path).integer(
            "SELECT count(*) FROM metrics WHERE run_id=" + std::to_string(run) + " AND step<=70");
        RunStore store(path);
        store.reopen_for_resume(run, 70);
        const Run r = store.get_run(run);
        QCOMPARE(r.status, RunStatus::Running);
        QCOMPARE(Raw(path).integer("SELECT owner_pid FROM runs WHERE id=" + std::to_string(run)),
                 static_cast<long long>(getpid()));
        QVERIFY(Raw(path).integer("SELECT ended IS NULL FROM runs WHERE id=" + std::to_string(run)) == 1);
        // Everything up to the step stays; nothing after it.
        QCOMPARE(count(path, "metrics", run), before);
        QCOMPARE(count(path, "metrics", run, "step>70"), 0LL);
        QCOMPARE(count(path, "histograms", run), 3LL);  // 20, 40, 60
        QCOMPARE(count(path, "scaling_stats", run), 3LL);
        QCOMPARE(count(path, "events", run, "kind='note'"), 2LL);  // 30, 60
        QCOMPARE(count(path, "events", run, "kind='summary'"), 0LL);
        QCOMPARE(count(path, "boundaries", run), 0LL);
        QCOMPARE(count(path, "checkpoints", run), 1LL);
        expect_same_checkpoint(*store.latest_checkpoint(run), checkpoint_at(70));
        QCOMPARE(count(path, "latest_metrics", run, "key='late'"), 0LL);
        QCOMPARE(Raw(path).integer("SELECT step FROM latest_metrics WHERE key='test' AND run_id=" +
                                   std::to_string(run)),
                 70LL);
        QCOMPARE(summaries(path, run), recomputed_summaries(path, run));
    }

    // Trimmed at 70 and written again from 71, the summaries equal an uninterrupted run's.
    void resumedRowsMatchAnUninterruptedRun() {
        const auto path = fresh("again");
        const auto run = recorded_run(path, RunStatus::Stopped);
        std::int64_t straight = 0;
        {
            RunStore store(path);
            store.reopen_for_resume(run, 70);
            straight = store.create_run(RunInfo{});
        }
        {
            RunWriter w(path, run);
            log_steps(w, 71, 100);
            QVERIFY(w.finish(RunStatus::Finished));
        }
        {
            RunWriter w(path, straight);
            log_steps(w, 1, 100);
            QVERIFY(w.finish(RunStatus::Finished));
        }
        QCOMPARE(summaries(path, run), summaries(path, straight));
        QCOMPARE(count(path, "metrics", run), count(path, "metrics", straight));
        QCOMPARE(Raw(path).integer("SELECT count(*) FROM (SELECT key, step FROM metrics WHERE run_id=" +
                                   std::to_string(run) + " GROUP BY key, step HAVING count(*) > 1)"),
                 0LL);
    }

    void reopenRefuses() {
        const auto path = fresh("refuse");
        const auto finished = recorded_run(path, RunStatus::Finished);
        const auto failed = recorded_run(path, RunStatus::Failed);
        const auto interrupted = recorded_run(path, RunStatus::Interrupted);
        RunStore store(path);
        EXPECT_STORE_ERROR(store.reopen_for_resume(finished, 90), Kind::Invalid, "is FINISHED");
        EXPECT_STORE_ERROR(store.reopen_for_resume(failed, 90), Kind::Invalid, "is FAILED");
        EXPECT_STORE_ERROR(store.reopen_for_resume(interrupted + 50, 90), Kind::NotFound, "does not exist");
        EXPECT_STORE_ERROR(store.reopen_for_resume(interrupted, 80), Kind::NotFound,
                           "no checkpoint at step 80");
        // A run this (live) process writes.
        const auto live = store.create_run(RunInfo{});
        store.save_checkpoint(live, checkpoint_at(10));
        EXPECT_STORE_ERROR(store.reopen_for_resume(live, 10), Kind::InUse, "still running");
        // Refusals change nothing.
        QCOMPARE(store.get_run(finished).status, RunStatus::Finished);
        QCOMPARE(count(path, "metrics", interrupted, "step>90"), 10 * 2LL + 1);
        store.soft_delete(interrupted);
        EXPECT_STORE_ERROR(store.reopen_for_resume(interrupted, 90), Kind::Invalid, "trash");
    }

    // A RUNNING run whose process died is taken as interrupted and can be resumed.
    void deadWriterCanBeResumed() {
        const auto path = fresh("dead");
        const auto run = recorded_run(path, RunStatus::Interrupted);
        QCOMPARE(Raw(path).exec("UPDATE runs SET status='RUNNING', owner_start=NULL, owner_pid=" +
                                std::to_string(testsupport::dead_pid()) + ", owner_host='" +
                                testsupport::host() + "'"),
                 SQLITE_OK);
        RunStore::Options o;
        o.detect_interrupted = false;  // reopen_for_resume must find it by itself
        RunStore store(path, o);
        store.reopen_for_resume(run, 90);
        QCOMPARE(store.get_run(run).status, RunStatus::Running);
    }

    void purgeRemovesCheckpoints() {
        const auto path = fresh("purge");
        const auto run = recorded_run(path, RunStatus::Finished);
        RunStore store(path);
        store.soft_delete(run);
        QCOMPARE(count(path, "checkpoints", run), 2LL);
        store.restore(run);
        store.soft_delete(run);
        QCOMPARE(store.purge().purged, 1);
        QCOMPARE(Raw(path).integer("SELECT count(*) FROM checkpoints"), 0LL);
    }

    void migrationFromVersion6() {
        const auto path = fresh("v6");
        {
            Raw raw(path);
            QCOMPARE(raw.exec("PRAGMA journal_mode=WAL"), SQLITE_OK);
            for (int v = 0; v < 6; ++v)
                QCOMPARE(raw.exec(schema_migrations()[static_cast<std::size_t>(v)]), SQLITE_OK);
            QCOMPARE(
                raw.exec(
                    "PRAGMA user_version=6;"
                    "INSERT INTO runs(id, uuid, name, status, created) VALUES(1,'u1','old','STOPPED',1);"
                    "INSERT INTO metrics(run_id, key, step, wall_time, value) VALUES(1,'loss',3,1,0.5);"),
                SQLITE_OK);
        }
        {
            RunStore::Options read_only;
            read_only.read_only = true;
            read_only.create = false;
            RunStore store(path, read_only);
            QVERIFY(!store.latest_checkpoint(1));
        }
        QCOMPARE(Raw(path).integer("PRAGMA user_version"), 6LL);
        RunStore store(path);
        QCOMPARE(store.opened_schema_version(), 6);
        QCOMPARE(Raw(path).integer("PRAGMA user_version"), static_cast<long long>(schema_version()));
        EXPECT_STORE_ERROR(store.reopen_for_resume(1, 3), Kind::NotFound, "no checkpoint");
        store.save_checkpoint(1, checkpoint_at(3));
        store.reopen_for_resume(1, 3);
        QCOMPARE(store.series(1, "loss").size(), std::size_t(1));
    }

    // The recorder: checkpoints through its writer, INTERRUPTED from the summary, and a second
    // recorder that continues the run from the checkpoint instead of creating one.
    void recorderInterruptsAndContinues() {
        const auto path = fresh("recorder");
        std::int64_t run = 0;
        {
            RunRecorder::Options o;
            o.db_path = path;
            RunRecorder recorder(o);
            recorder.on_run_start(RunStartInfo{});
            for (std::int64_t s = 1; s <= 12; ++s) {
                StepMetrics m;
                m.step = s;
                recorder.on_step(m);
                if (s == 10) recorder.on_checkpoint(checkpoint_at(10));
            }
            RunSummary summary;
            summary.status = RunStatus::Interrupted;
            summary.steps = 12;
            recorder.on_run_end(summary);
            QVERIFY2(recorder.complete(), recorder.error().c_str());
            run = recorder.run_id();
        }
        {
            RunStore store(path);
            QCOMPARE(store.get_run(run).status, RunStatus::Interrupted);
            expect_same_checkpoint(*store.latest_checkpoint(run), checkpoint_at(10));
        }
        RunRecorder::Options o;
        o.db_path = path;
        o.resume_run_id = run;
        RunRecorder recorder(o);
        RunStartInfo info;
        info.resumed_from_step = 10;
        recorder.on_run_start(info);
        QVERIFY2(recorder.error().empty(), recorder.error().c_str());
        QCOMPARE(recorder.run_id(), run);
        QCOMPARE(count(path, "metrics", run, "step>10"), 0LL);
        for (std::int64_t s = 11; s <= 20; ++s) {
            StepMetrics m;
            m.step = s;
            recorder.on_step(m);
        }
        RunSummary summary;
        summary.status = RunStatus::Finished;
        summary.steps = 20;
        recorder.on_run_end(summary);
        QVERIFY2(recorder.complete(), recorder.error().c_str());
        RunStore store(path);
        QCOMPARE(store.list_runs().size(), std::size_t(1));
        QCOMPARE(store.get_run(run).status, RunStatus::Finished);
        const auto loss = store.series(run, "train_loss");
        QCOMPARE(loss.size(), std::size_t(20));
        for (std::size_t i = 0; i < loss.size(); ++i)
            QCOMPARE(loss[i].step, static_cast<std::int64_t>(i + 1));
    }

    void recorderWithoutARunToContinueFails() {
        RunRecorder::Options o;
        o.db_path = fresh("no_target");
        RunRecorder recorder(o);
        RunStartInfo info;
        info.resumed_from_step = 10;
        recorder.on_run_start(info);
        QCOMPARE(recorder.run_id(), std::int64_t{0});
        QVERIFY(recorder.error().find("no run to continue") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestCheckpointStore)
#include "test_checkpoint_store.moc"
