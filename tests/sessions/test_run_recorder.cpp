// Tests of RunRecorder: a short spiral run recorded next to an independent observer that keeps
// everything the trainer reported, so the database can be checked against what really happened:
// status FINISHED, one row per step for every step metric, each evaluation, each event (a scaler
// configuration change requested mid-run shows up with its step), gradient histograms that decode
// to the observer's histograms, the summary. A stopped run is STOPPED with exactly its steps. A
// database that cannot be written (corrupt, newer schema, locked) fails the constructor, before
// any training. A disk that fills mid-run (full_disk_vfs.h) is said through on_failure at the
// next step, and the run is left INTERRUPTED with what was committed. Rows are read back with raw
// SQL where the recorder's own store code could hide a mistake.
#include "sessions/run_recorder.h"
#include "sessions/run_store.h"
#include "sessions/run_vocabulary.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "full_disk_vfs.h"
#include "test_support.h"
#include "tests/common/test_support.h"

#include <chrono>
#include <map>
#include <set>
#include <thread>

using namespace mpwb;
using testsupport::Raw;
using Kind = StoreError::Kind;

namespace {

// Everything the trainer told its observers, kept independently of the recorder.
class Tape final : public TrainingObserver {
public:
    std::vector<StepMetrics> steps;
    std::vector<EvalMetrics> evals;
    std::vector<TrainingEvent> events;
    std::vector<GradientStatsRecord> stats;
    RunSummary summary;
    std::function<void(const StepMetrics&)> hook;
    std::function<void()> end_hook;

    void on_step(const StepMetrics& m) override {
        steps.push_back(m);
        if (hook) hook(m);
    }
    void on_eval(const EvalMetrics& m) override { evals.push_back(m); }
    void on_event(const TrainingEvent& e) override { events.push_back(e); }
    void on_gradient_stats(const GradientStatsRecord& r) override { stats.push_back(r); }
    void on_run_end(const RunSummary& s) override {
        summary = s;
        if (end_hook) end_hook();
    }
};

// Runs `step_hook` after the observers before it (the recorder) have seen each step.
class After final : public TrainingObserver {
public:
    std::function<void(const StepMetrics&)> step_hook;
    void on_step(const StepMetrics& m) override { step_hook(m); }
};

struct Setup {
    Preset preset = load_preset("spiral-mlp");
    Dataset data;
    Network net;
    CpuBackend backend;
    Setup(int64_t max_steps, int64_t stats_every, int64_t eval_every) {
        preset.training.precision = PrecisionKind::FP16Mixed;
        preset.training.max_steps = max_steps;
        preset.training.stats_every = stats_every;
        preset.training.eval_every = eval_every;
        preset.training.threads = 1;
        data = load_dataset(preset.training.dataset);
        net = Network::from_json(preset.network);
    }
};

}  // namespace

class TestRunRecorder : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    std::string fresh() { return dir_.filePath(QString("r_%1.sqlite").arg(++n_)).toStdString(); }

private slots:
    void finishedRunHasEverything() {
        const auto path = fresh();
        const int64_t steps = 60, stats_every = 10, change_at = 30;
        Setup s(steps, stats_every, 20);
        Trainer trainer(s.net, s.data, s.preset.training, s.backend);
        Tape tape;
        LossScalerConfig changed = s.preset.training.effective_scaler();
        changed.growth_interval = 7;  // differs from the preset's default
        tape.hook = [&](const StepMetrics& m) {
            if (m.step == change_at) trainer.request_scaler_config(changed);
        };
        std::int64_t created_id = 0;
        RunRecorder::Options o;
        o.db_path = path;
        o.name = "recorded spiral";
        o.tags = {{"suite", "recorder"}};
        o.on_created = [&](std::int64_t id) { created_id = id; };
        const auto group = RunRecorder::create_group(path, "pair");
        o.group_id = group;
        RunRecorder recorder(o);
        trainer.add_observer(&tape);
        trainer.add_observer(&recorder);
        const double before = store_now();
        const auto summary = trainer.run();
        const double after = store_now();
        QCOMPARE(summary.status, RunStatus::Finished);
        QVERIFY(recorder.complete());
        QCOMPARE(recorder.error(), std::string());
        QVERIFY(recorder.run_id() > 0);
        QCOMPARE(created_id, recorder.run_id());
        const auto id = recorder.run_id();

        RunStore store(path);
        const Run run = store.get_run(id);
        QCOMPARE(run.status, RunStatus::Finished);
        QCOMPARE(run.name, std::string("recorded spiral"));
        QCOMPARE(run.precision, std::string("fp16-mixed"));
        QCOMPARE(run.dataset, s.data.name);
        QCOMPARE(run.backend, std::string("cpu"));
        QVERIFY(run.seed && *run.seed == static_cast<std::int64_t>(s.preset.training.seed));
        QCOMPARE(run.tags.at("suite"), std::string("recorder"));
        QVERIFY(run.ended && *run.ended >= before && *run.ended <= after + 1);
        const auto versions = nlohmann::json::parse(run.versions_json);
        QCOMPARE(versions.at("sqlite").get<std::string>(), std::string(sqlite3_libversion()));
        QVERIFY(!versions.at("openblas_core").get<std::string>().empty());
        QVERIFY(!versions.at("machine").at("cpu").get<std::string>().empty());
        QCOMPARE(nlohmann::json::parse(run.config_json).at("max_steps").get<int64_t>(), steps);
        QCOMPARE(nlohmann::json::parse(run.network_json), s.net.to_json());
        bool in_group = false;
        for (const auto& g : store.list_groups())
            if (g.id == group) in_group = g.run_ids == std::vector<std::int64_t>{id};
        QVERIFY(in_group);

        // One row per step for every per-step key, values equal to what the trainer reported.
        Raw raw(path);
        const std::string where = " WHERE run_id=" + std::to_string(id);
        QCOMPARE(static_cast<int64_t>(tape.steps.size()), steps);
        for (const char* key : {"train_loss", "train_accuracy", "samples_per_second", "step_seconds", "lr",
                                "loss_scale", "skipped", "overflow_count", "skipped_count"}) {
            QCOMPARE(raw.integer("SELECT count(*) FROM metrics" + where + " AND key='" + key + "'"), steps);
            QCOMPARE(raw.integer("SELECT count(DISTINCT step) FROM metrics" + where + " AND key='" + key +
                                 "' AND step BETWEEN 1 AND " + std::to_string(steps)),
                     steps);
        }
        // A classifier has no tokens: the language model's figures are not logged for it.
        QCOMPARE(raw.integer("SELECT count(*) FROM metrics" + where +
                             " AND key IN ('tokens_per_second', 'test_bits_per_token')"),
                 int64_t{0});
        const auto loss = store.series(id, "train_loss");
        const auto scale = store.series(id, "loss_scale");
        const auto skipped = store.series(id, "skipped");
        QCOMPARE(static_cast<int64_t>(loss.size()), steps);
        for (std::size_t i = 0; i < loss.size(); ++i) {
            QCOMPARE(loss[i].step, tape.steps[i].step);
            QCOMPARE(loss[i].value, tape.steps[i].loss);
            QCOMPARE(scale[i].value, static_cast<double>(tape.steps[i].loss_scale));
            QCOMPARE(skipped[i].value, tape.steps[i].skipped ? 1.0 : 0.0);
            QVERIFY(loss[i].wall_time >= before - 1e-3 && loss[i].wall_time <= after + 1e-3);
            if (i) QVERIFY(loss[i].wall_time >= loss[i - 1].wall_time);
        }

        // Evaluations: exactly the ones the trainer ran, at their steps.
        QVERIFY(!tape.evals.empty());
        const auto acc = store.series(id, "test_accuracy");
        QCOMPARE(acc.size(), tape.evals.size());
        for (std::size_t i = 0; i < acc.size(); ++i) {
            QCOMPARE(acc[i].step, tape.evals[i].step);
            QCOMPARE(acc[i].value, tape.evals[i].test_accuracy);
        }
        QCOMPARE(store.series(id, "epoch_train_loss").size(), tape.evals.size());
        QCOMPARE(store.series(id, "test_loss").back().value, tape.evals.back().test_loss);

        // Every trainer event, plus run_start and the summary; the requested change among them.
        const auto events = store.events(id);
        std::multiset<std::string> want{"run_start", "summary"}, got;
        for (const auto& e : tape.events) want.insert(e.kind);
        for (const auto& e : events) got.insert(e.kind);
        QCOMPARE(got, want);
        const auto changes = store.events(id, "config_changed");
        QCOMPARE(changes.size(), std::size_t(1));
        QVERIFY2(changes[0].step == change_at || changes[0].step == change_at + 1,
                 std::to_string(changes[0].step).c_str());
        const auto detail = nlohmann::json::parse(changes[0].json);
        QCOMPARE(detail.at("source").get<std::string>(), std::string("user"));
        const auto summary_events = store.events(id, "summary");
        QCOMPARE(summary_events.size(), std::size_t(1));
        const auto stored_summary = nlohmann::json::parse(summary_events[0].json);
        QCOMPARE(stored_summary.at("steps").get<int64_t>(), steps);
        QCOMPARE(stored_summary.at("status").get<std::string>(), std::string("FINISHED"));
        QCOMPARE(stored_summary.at("test_accuracy").get<double>(), summary.test_accuracy);

        // Gradient statistics: steps 1, 10, ..., 60, a histogram per record that decodes to the
        // observer's histogram, and the fraction metrics under the documented keys.
        QVERIFY(!tape.stats.empty());
        std::set<int64_t> stat_steps;
        for (const auto& r : tape.stats) stat_steps.insert(r.step);
        std::set<int64_t> expected_steps{1};
        for (int64_t k = stats_every; k <= steps; k += stats_every) expected_steps.insert(k);
        QCOMPARE(stat_steps, expected_steps);
        const auto hists = store.histograms(id);
        QCOMPARE(hists.size(), tape.stats.size());
        std::map<std::tuple<int64_t, std::string, std::string>, const GradientStatsRecord*> by_key;
        for (const auto& r : tape.stats) {
            const std::string kind =
                r.kind == GradientKind::Activation ? "activation_grad" : "weight_grad:" + r.parameter;
            by_key[{r.step, r.layer_label, kind}] = &r;
        }
        QCOMPARE(by_key.size(), tape.stats.size());
        bool saw_weight = false;
        for (const auto& h : hists) {
            const auto it = by_key.find({h.step, h.layer, h.kind});
            QVERIFY2(it != by_key.end(), (h.layer + " " + h.kind).c_str());
            const auto decoded = ExponentHistogram::from_blob(h.blob);
            QCOMPARE(decoded.to_blob(), it->second->histogram.to_blob());
            saw_weight = saw_weight || h.kind.rfind("weight_grad:", 0) == 0;
        }
        QVERIFY(saw_weight);
        const auto& first = tape.stats.front();
        const std::string kind0 =
            first.kind == GradientKind::Activation ? "activation_grad" : "weight_grad:" + first.parameter;
        const auto under = store.series(id, "underflow/" + first.layer_label + "/" + kind0);
        QCOMPARE(under.size(), expected_steps.size());
        QCOMPARE(under.front().value, first.stats.underflow_fraction);
    }

    void stoppedRunIsStopped() {
        const auto path = fresh();
        Setup s(0, 0, 0);
        s.preset.training.epochs = 50;
        Trainer trainer(s.net, s.data, s.preset.training, s.backend);
        Tape tape;
        tape.hook = [&](const StepMetrics& m) {
            if (m.step == 15) trainer.stop();
        };
        RunRecorder::Options o;
        o.db_path = path;
        RunRecorder recorder(o);
        trainer.add_observer(&tape);
        trainer.add_observer(&recorder);
        const auto summary = trainer.run();
        QCOMPARE(summary.status, RunStatus::Stopped);
        QVERIFY(recorder.complete());
        RunStore store(path);
        const Run run = store.get_run(recorder.run_id());
        QCOMPARE(run.status, RunStatus::Stopped);
        QCOMPARE(run.name, s.data.name + " fp16-mixed");  // the default name
        QCOMPARE(store.series(run.id, "train_loss").size(), std::size_t(15));
        QCOMPARE(store.events(run.id, "stopped").size(), std::size_t(1));
        QCOMPARE(store.histograms(run.id).size(), std::size_t(0));  // stats_every = 0
    }

    // A text run's vocabulary is stored with it and read back as it was (issue 26): sampling and
    // export map ids to text by it. A run on another dataset has none.
    void textRunKeepsItsVocabulary() {
        const auto path = fresh();
        const Vocabulary vocabulary = Vocabulary::characters_of("to be, or not to be\n\u00e9", "test text");
        std::int64_t text_run = 0, other_run = 0;
        for (const bool text : {true, false}) {
            RunRecorder::Options o;
            o.db_path = path;
            RunRecorder recorder(o);
            RunStartInfo info;
            if (text) info.vocabulary = vocabulary.to_json();
            recorder.on_run_start(info);
            QVERIFY2(recorder.error().empty(), recorder.error().c_str());
            (text ? text_run : other_run) = recorder.run_id();
            RunSummary summary;
            summary.status = RunStatus::Finished;
            recorder.on_run_end(summary);
        }
        RunStore store(path);
        const std::optional<Vocabulary> stored = run_vocabulary(store.get_run(text_run));
        QVERIFY(stored.has_value());
        QVERIFY(*stored == vocabulary);
        QCOMPARE(stored->decode(stored->encode("be or not")), std::string("be or not"));
        QVERIFY(!run_vocabulary(store.get_run(other_run)).has_value());
        Run broken = store.get_run(text_run);
        broken.versions_json = R"({"vocabulary": {"tokenizer": "char", "tokens": ["b", "a"]}})";
        const QString msg = mpwb::test::error_text<ConfigError>([&] { (void)run_vocabulary(broken); });
        QVERIFY2(msg.contains("vocabulary.tokens[1]") && msg.contains("out of order"), qPrintable(msg));
    }

    // Issue 24: on a full disk training went on to FINISHED, then waited 30 s for the last commit
    // before saying anything. Now the step after the writer stopped says so, naming the step, the
    // file and the cause, and the run is left INTERRUPTED (resumable once there is room).
    void fullDiskIsSaidAtOnce() {
        testsupport::full_disk::Filler disk;
        const auto path = fresh();
        Setup s(0, 0, 0);
        s.preset.training.epochs = 50;  // far more steps than the run gets to
        Trainer trainer(s.net, s.data, s.preset.training, s.backend);
        Tape tape;
        tape.end_hook = [&] { disk.free(); };  // before the recorder's end: its status fits again
        RunRecorder::Options o;
        o.db_path = path;
        o.writer.commit_interval = std::chrono::milliseconds(10);
        std::vector<std::pair<int64_t, std::string>> failures;  // (step the trainer was at, message)
        o.on_failure = [&](const std::string& m) {
            failures.emplace_back(tape.steps.back().step, m);
            trainer.stop();  // as mpwb-cli does
        };
        RunRecorder recorder(o);
        After filler;
        // Waits for the writer's state, not for time (the limit only ends a hang).
        const auto wait_until_nothing_pending = [&] {
            for (int i = 0; i < 60000 && recorder.pending_rows() != 0; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
        };
        filler.step_hook = [&](const StepMetrics& m) {
            if (m.step == 10) {
                wait_until_nothing_pending();  // steps 1-10 committed
                disk.fill();
            }
            // Step 11's rows were logged onto the full disk: they leave the writer only by its
            // stopping.
            if (m.step == 11) wait_until_nothing_pending();
        };
        trainer.add_observer(&tape);
        trainer.add_observer(&recorder);
        trainer.add_observer(&filler);
        const auto summary = trainer.run();
        QCOMPARE(failures.size(), std::size_t(1));
        QCOMPARE(failures[0].first, int64_t(12));
        const std::string& message = failures[0].second;
        const std::string id = std::to_string(recorder.run_id());
        const std::vector<std::string> needles = {
            "recording of run " + id + " stopped at step 12: ", "the disk holding " + path + " is full",
            "(the database holds the run up to step 10)"};
        for (const std::string& needle : needles)
            QVERIFY2(message.find(needle) != std::string::npos, message.c_str());
        QCOMPARE(summary.status, RunStatus::Stopped);
        QCOMPARE(summary.steps, int64_t(12));
        QVERIFY(!recorder.complete());
        QCOMPARE(recorder.error(), message);
        RunStore store(path);
        const Run run = store.get_run(recorder.run_id());
        QCOMPARE(run.status, RunStatus::Interrupted);
        const auto losses = store.series(run.id, "train_loss");
        QCOMPARE(losses.size(), std::size_t(10));  // what was committed before the disk filled
        QCOMPARE(losses.back().step, int64_t(10));
    }

    void unwritableDatabaseFailsBeforeTraining() {
        // Not a database at all: the file must survive untouched.
        const auto junk = fresh();
        testsupport::write_bytes(junk, std::vector<char>(4096, 'x'));
        RunRecorder::Options o;
        o.db_path = junk;
        bool threw = false;
        try {
            RunRecorder r(o);
        } catch (const StoreError& e) {
            threw = true;
            QVERIFY2(e.kind() == Kind::Corrupt || e.kind() == Kind::Invalid, e.what());
            QVERIFY2(std::string(e.what()).find(junk) != std::string::npos, e.what());
        }
        QVERIFY(threw);
        QCOMPARE(testsupport::file_bytes(junk), std::vector<char>(4096, 'x'));

        // Written by a newer build.
        const auto newer = fresh();
        { RunStore store(newer); }
        { Raw(newer).exec("PRAGMA user_version=999"); }
        o.db_path = newer;
        EXPECT_STORE_ERROR(RunRecorder r(o), Kind::NewerSchema, "newer");

        // Locked by another process's write transaction.
        const auto locked = fresh();
        { RunStore store(locked); }
        Raw holder(locked);
        QCOMPARE(holder.exec("BEGIN IMMEDIATE"), SQLITE_OK);
        o.db_path = locked;
        o.writer.busy_timeout_ms = 100;
        EXPECT_STORE_ERROR(RunRecorder r(o), Kind::Locked, locked);
        holder.exec("ROLLBACK");
        RunRecorder ok(o);  // and fine once the lock is gone
        QCOMPARE(ok.run_id(), std::int64_t(0));

        // A comparison group that does not exist.
        o.group_id = 12345;
        EXPECT_STORE_ERROR(RunRecorder r(o), Kind::NotFound, "12345");
    }
};

QTEST_APPLESS_MAIN(TestRunRecorder)
#include "test_run_recorder.moc"
