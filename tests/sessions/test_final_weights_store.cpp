// Tests of a run's final weights in the store (schema 8): the trainer hands them over when a run
// ends FINISHED, STOPPED or FAILED after some steps, and the recorder stores them bit for bit
// with the step and input shape; a resumed run drops them; purge removes them; a schema-7 file
// migrates (and reads without them read-only); bundles carry them, and a bundle whose rows are
// damaged or hostile (a blob that does not fill its shape, a shape past the limits, tensors
// without their run's row, a shape that is not JSON) is refused, naming the table, the run and
// the field, with nothing imported.
#include "core/backend/cpu/cpu_backend.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "sessions/run_bundle.h"
#include "sessions/run_recorder.h"
#include "sessions/run_store.h"
#include "sessions/store_schema.h"
#include "test_support.h"

#include <cstring>
#include <functional>
#include <stdexcept>

using namespace mpwb;
using testsupport::Raw;
using Kind = StoreError::Kind;

namespace {

// Calls `hook` on every step (to stop the run, or to make it fail by throwing).
struct StepHook : TrainingObserver {
    std::function<void(const StepMetrics&)> hook;
    void on_step(const StepMetrics& m) override { hook(m); }
};

struct Setup {
    Preset preset = load_preset("spiral-mlp");
    Dataset data;
    Network net;
    CpuBackend backend;
    explicit Setup(int64_t max_steps) {
        preset.training.max_steps = max_steps;
        preset.training.threads = 1;
        data = load_dataset(preset.training.dataset);
        net = Network::from_json(preset.network);
    }
};

void expect_same_weights(const NetworkWeights& got, const NetworkWeights& want) {
    QCOMPARE(got.step, want.step);
    QCOMPARE(got.input_shape, want.input_shape);
    QCOMPARE(got.tensors.size(), want.tensors.size());
    for (std::size_t i = 0; i < want.tensors.size(); ++i) {
        const auto& g = got.tensors[i];
        const auto& w = want.tensors[i];
        QCOMPARE(g.layer, w.layer);
        QCOMPARE(g.name, w.name);
        QCOMPARE(g.shape, w.shape);
        QCOMPARE(g.values.size(), w.values.size());
        QVERIFY(std::memcmp(g.values.data(), w.values.data(), w.values.size() * sizeof(float)) == 0);
    }
}

NetworkWeights small_weights(std::int64_t step) {
    NetworkWeights w;
    w.step = step;
    w.input_shape = {3};
    w.tensors.push_back({0, "weight", {2, 3}, {1, 2, 3, 4, 5, 6}});
    w.tensors.push_back({0, "bias", {2}, {-1.5f, 0.25f}});
    return w;
}

// A FINISHED run with small_weights(step) in the store at `path`; returns its id.
std::int64_t recorded_run(const std::string& path, std::int64_t step) {
    RunRecorder::Options o;
    o.db_path = path;
    RunRecorder recorder(o);
    recorder.on_run_start(RunStartInfo{});
    recorder.on_final_weights(small_weights(step));
    RunSummary summary;
    summary.status = RunStatus::Finished;
    summary.steps = step;
    recorder.on_run_end(summary);
    return recorder.run_id();
}

}  // namespace

class TestFinalWeightsStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    std::string fresh() { return dir_.filePath(QString("w_%1.sqlite").arg(++n_)).toStdString(); }

    // Trains with the recorder (and `hook` on every step); returns the run id.
    std::int64_t train(const std::string& path, Setup& s,
                       const std::function<void(Trainer&, const StepMetrics&)>& hook, RunStatus expected) {
        Trainer trainer(s.net, s.data, s.preset.training, s.backend);
        StepHook h;
        h.hook = [&](const StepMetrics& m) { hook(trainer, m); };
        RunRecorder::Options o;
        o.db_path = path;
        RunRecorder recorder(o);
        trainer.add_observer(&h);
        trainer.add_observer(&recorder);
        const auto summary = trainer.run();
        [&] {
            QCOMPARE(summary.status, expected);
            QVERIFY(recorder.complete());
        }();
        return recorder.run_id();
    }

    // A copy of a bundle with `sql` run on it.
    std::string damaged_bundle(const std::string& bundle, const std::string& sql) {
        const std::string copy = fresh() + ".mpwb";
        testsupport::write_bytes(copy, testsupport::file_bytes(bundle));
        Raw raw(copy);
        if (raw.exec(sql) != SQLITE_OK) throw std::runtime_error("cannot damage the bundle: " + sql);
        return copy;
    }

private slots:
    void finishedRunStoresTheNetworksWeights() {
        const auto path = fresh();
        Setup s(25);
        const auto id = train(
            path, s, [](Trainer&, const StepMetrics&) {}, RunStatus::Finished);
        RunStore store(path);
        const auto stored = store.final_weights(id);
        QVERIFY(stored);
        expect_same_weights(*stored, network_weights(s.net, 25));
        QCOMPARE(stored->input_shape, Shape{2});
    }

    void stoppedRunStoresThemAtItsLastStep() {
        const auto path = fresh();
        Setup s(0);
        s.preset.training.epochs = 50;
        const auto id = train(
            path, s,
            [](Trainer& t, const StepMetrics& m) {
                if (m.step == 9) t.stop();
            },
            RunStatus::Stopped);
        RunStore store(path);
        const auto stored = store.final_weights(id);
        QVERIFY(stored);
        expect_same_weights(*stored, network_weights(s.net, 9));
    }

    void failedRunAfterStepsStoresThem() {
        const auto path = fresh();
        Setup s(40);
        const auto id = train(
            path, s,
            [](Trainer&, const StepMetrics& m) {
                if (m.step == 6) throw std::runtime_error("observer failure at step 6");
            },
            RunStatus::Failed);
        RunStore store(path);
        QCOMPARE(store.get_run(id).status, RunStatus::Failed);
        const auto stored = store.final_weights(id);
        QVERIFY(stored);
        QCOMPARE(stored->step, std::int64_t{6});
    }

    void resumeAndPurgeDropThem() {
        const auto path = fresh();
        const auto id = recorded_run(path, 12);
        RunStore store(path);
        QVERIFY(store.final_weights(id));
        store.set_status(id, RunStatus::Stopped);
        TrainingCheckpoint c;
        c.step = 10;
        c.state = {1, 2, 3};
        store.save_checkpoint(id, c);
        store.reopen_for_resume(id, 10);
        QVERIFY(!store.final_weights(id));  // the run has not ended any more
        store.set_status(id, RunStatus::Finished);
        const auto other = recorded_run(path, 3);
        store.soft_delete(other);
        QCOMPARE(store.purge().purged, 1);
        QCOMPARE(Raw(path).integer("SELECT count(*) FROM final_weight_tensors"), 0LL);
        QCOMPARE(Raw(path).integer("SELECT count(*) FROM final_weights"), 0LL);
    }

    void migrationFromVersion7() {
        const auto path = fresh();
        {
            Raw raw(path);
            QCOMPARE(raw.exec("PRAGMA journal_mode=WAL"), SQLITE_OK);
            for (int v = 0; v < 7; ++v)
                QCOMPARE(raw.exec(schema_migrations()[static_cast<std::size_t>(v)]), SQLITE_OK);
            QCOMPARE(
                raw.exec(
                    "PRAGMA user_version=7;"
                    "INSERT INTO runs(id, uuid, name, status, created) VALUES(1,'u1','old','FINISHED',1);"),
                SQLITE_OK);
        }
        {
            RunStore::Options read_only;
            read_only.read_only = true;
            read_only.create = false;
            RunStore store(path, read_only);
            QVERIFY(!store.final_weights(1));
        }
        QCOMPARE(Raw(path).integer("PRAGMA user_version"), 7LL);
        RunStore store(path);
        QCOMPARE(store.opened_schema_version(), 7);
        QCOMPARE(Raw(path).integer("PRAGMA user_version"), static_cast<long long>(schema_version()));
        QVERIFY(!store.final_weights(1));
    }

    void bundlesCarryThem() {
        const auto path = fresh();
        const auto id = recorded_run(path, 12);
        const std::string bundle = fresh() + ".mpwb";
        {
            RunStore store(path);
            export_bundle(store, {id}, bundle);
        }
        const auto target = fresh();
        RunStore store(target);
        const auto report = import_bundle(store, bundle);
        QCOMPARE(report.imported.size(), std::size_t(1));
        const auto stored = store.final_weights(report.imported.front().store_id);
        QVERIFY(stored);
        expect_same_weights(*stored, small_weights(12));
    }

    void damagedBundlesAreRefused() {
        const auto path = fresh();
        const auto id = recorded_run(path, 12);
        const std::string bundle = fresh() + ".mpwb";
        {
            RunStore store(path);
            export_bundle(store, {id}, bundle);
        }
        const struct {
            const char* sql;
            const char* needle;
        } cases[] = {
            {"UPDATE final_weight_tensors SET data=x'00000000' WHERE position=0",
             "position 0, data: 4 bytes"},
            {"UPDATE final_weight_tensors SET shape='[65536,65536]' WHERE position=0", "holds more than"},
            {"UPDATE final_weight_tensors SET shape='[2,-3]' WHERE position=0", "not a positive integer"},
            {"UPDATE final_weight_tensors SET shape='[1,1,1,1,1]' WHERE position=0", "1 to 4 dimensions"},
            {"UPDATE final_weight_tensors SET shape='[2,' WHERE position=0", "shape"},
            {"UPDATE final_weight_tensors SET position=5 WHERE position=1", "positions do not run"},
            {"UPDATE final_weight_tensors SET layer=100000 WHERE position=1", "layer 100000 is out of range"},
            {"UPDATE final_weight_tensors SET name='' WHERE position=1", "name"},
            {"DELETE FROM final_weights", "tensors without a row in final_weights"},
            {"UPDATE final_weights SET input_shape='{}'", "input_shape"},
            {"UPDATE final_weights SET step=0", "step 0 is not positive"},
        };
        for (const auto& c : cases) {
            const auto bad = damaged_bundle(bundle, c.sql);
            const auto target = fresh();
            RunStore store(target);
            EXPECT_STORE_ERROR(import_bundle(store, bad), Kind::Invalid, c.needle);
            EXPECT_STORE_ERROR(import_bundle(store, bad), Kind::Invalid, "nothing was imported");
            QVERIFY2(store.list_runs().empty(), c.sql);
        }
    }
};

QTEST_GUILESS_MAIN(TestFinalWeightsStore)
#include "test_final_weights_store.moc"
