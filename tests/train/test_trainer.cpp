// Tests of the Trainer: same seed => bit-identical loss sequence (also across thread counts),
// a different seed differs; the spiral preset trains to >= 95% test accuracy; pause, resume and
// stop from another thread act between steps; max_steps and eval_every are honoured; a network
// whose output does not fit the classes and a dataset holding NaN are refused with clear errors.
// The step engine's loop: an overflow retried runs the same batch again at the lower scale (with
// the statistics of the attempt that counted), and live scaler and learning-rate changes land on
// the next step.
// The engine's headers come before Qt's: core/train/trainer.h declares a member named emit(),
// which Qt's `emit` keyword macro would otherwise erase.
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"

#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

using namespace mpwb;
using namespace std::chrono_literals;

namespace {

class Recorder final : public TrainingObserver {
public:
    void on_run_start(const RunStartInfo& info) override { start = info; }
    void on_step(const StepMetrics& m) override {
        {
            std::lock_guard lock(mutex);
            losses.push_back(m.loss);
            step_numbers.push_back(m.step);
        }
        steps.store(m.step);
        if (step_delay.count() > 0) std::this_thread::sleep_for(step_delay);
    }
    void on_eval(const EvalMetrics& m) override {
        std::lock_guard lock(mutex);
        evals.push_back(m);
    }
    void on_event(const TrainingEvent& e) override {
        std::lock_guard lock(mutex);
        events.push_back(e.kind);
        sources.push_back(e.source);
        if (e.kind == "paused") paused_at.store(e.step);
    }
    void on_run_end(const RunSummary& s) override { ended = s.status; }

    std::mutex mutex;
    std::vector<double> losses;
    std::vector<int64_t> step_numbers;
    std::vector<EvalMetrics> evals;
    std::vector<std::string> events;
    std::vector<std::string> sources;
    std::atomic<int64_t> steps{0};
    std::atomic<int64_t> paused_at{-1};
    std::chrono::microseconds step_delay{0};
    RunStartInfo start;
    RunStatus ended = RunStatus::Running;
};

struct Spiral {
    Preset preset = load_preset("spiral-mlp");
    Dataset data = load_dataset(preset.training.dataset);
};

const Spiral& spiral() {
    static Spiral s;
    return s;
}

RunSummary train(TrainConfig config, Recorder& recorder, const nlohmann::json* network = nullptr) {
    auto backend = make_cpu_backend();
    Network net = Network::from_json(network ? *network : spiral().preset.network);
    Trainer trainer(net, spiral().data, std::move(config), *backend);
    trainer.add_observer(&recorder);
    return trainer.run();
}

// Waits on a state: returns as soon as it holds, so the limit only ends a wait that would never
// return and can be generous enough for a sanitizer build on a loaded machine.
template <class Pred>
bool wait_for(Pred pred, std::chrono::milliseconds limit = 120s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

// Each step's verdict, its gradient statistics and the events with their steps.
class VerdictRecorder final : public TrainingObserver {
public:
    void on_step(const StepMetrics& m) override {
        std::lock_guard lock(mutex);
        steps.push_back(m);
    }
    void on_gradient_stats(const GradientStatsRecord& r) override {
        std::lock_guard lock(mutex);
        stats.push_back(r);
    }
    void on_event(const TrainingEvent& e) override {
        std::lock_guard lock(mutex);
        events.emplace_back(e.step, e.kind);
        if (e.kind == "paused") paused_at.store(e.step);
    }
    std::mutex mutex;
    std::vector<StepMetrics> steps;
    std::vector<GradientStatsRecord> stats;
    std::vector<std::pair<int64_t, std::string>> events;
    std::atomic<int64_t> paused_at{-1};
};

bool bitwise_equal(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

class TestTrainer : public QObject {
    Q_OBJECT

private slots:
    void sameSeedSameRun() {
        TrainConfig c = spiral().preset.training;
        c.max_steps = 200;
        c.threads = 2;
        Recorder a, b, other, one_thread;
        train(c, a);
        train(c, b);
        QCOMPARE(a.losses.size(), size_t{200});
        QVERIFY2(bitwise_equal(a.losses, b.losses), "two runs with the same seed differ");
        // The thread count must not change a single bit either.
        TrainConfig c1 = c;
        c1.threads = 1;
        train(c1, one_thread);
        QVERIFY2(bitwise_equal(a.losses, one_thread.losses), "1 thread and 2 threads give different runs");
        TrainConfig c2 = c;
        c2.seed = 43;
        train(c2, other);
        QCOMPARE(other.losses.size(), size_t{200});
        QVERIFY2(!bitwise_equal(a.losses, other.losses), "a different seed gave the same run");
        // And the loss went down.
        double first = 0, last = 0;
        for (int i = 0; i < 20; ++i) {
            first += a.losses[static_cast<size_t>(i)];
            last += a.losses[a.losses.size() - 1 - static_cast<size_t>(i)];
        }
        QVERIFY2(last < first, qPrintable(QString("loss %1 -> %2").arg(first / 20).arg(last / 20)));
    }

    void spiralReaches95Percent() {
        TrainConfig c = spiral().preset.training;
        Recorder r;
        const auto t0 = std::chrono::steady_clock::now();
        const RunSummary s = train(c, r);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        qInfo("spiral-mlp preset: %lld steps, test accuracy %.4f, %.2f s", static_cast<long long>(s.steps),
              s.test_accuracy, seconds);
        QCOMPARE(s.status, RunStatus::Finished);
        QCOMPARE(s.steps, c.epochs * ((spiral().data.train_size() + c.batch_size - 1) / c.batch_size));
        QCOMPARE(s.epochs_completed, c.epochs);
        QVERIFY2(s.test_accuracy >= 0.95, qPrintable(QString("test accuracy %1").arg(s.test_accuracy)));
        // Evaluated at the end of every epoch (eval_every = 0).
        QCOMPARE(static_cast<int64_t>(r.evals.size()), c.epochs);
        QCOMPARE(r.ended, RunStatus::Finished);
    }

    void pauseResumeStop() {
        TrainConfig c = spiral().preset.training;
        c.epochs = 100000;  // far more than the test lets it run
        Recorder r;
        r.step_delay = 200us;
        RunSummary summary;
        std::thread worker;
        auto backend = make_cpu_backend();
        Network net = Network::from_json(spiral().preset.network);
        Trainer trainer(net, spiral().data, c, *backend);
        trainer.add_observer(&r);
        worker = std::thread([&] { summary = trainer.run(); });

        QVERIFY(wait_for([&] { return r.steps.load() >= 20; }));
        trainer.pause();
        QVERIFY(trainer.paused());
        QVERIFY2(wait_for([&] { return r.paused_at.load() >= 0; }), "no 'paused' event");
        const int64_t at_pause = r.steps.load();
        QCOMPARE(r.paused_at.load(), at_pause);
        std::this_thread::sleep_for(300ms);
        QCOMPARE(r.steps.load(), at_pause);  // no step while paused
        trainer.resume();
        QVERIFY2(wait_for([&] { return r.steps.load() >= at_pause + 20; }), "no progress after resume");

        // Stop while paused ends the run too.
        trainer.pause();
        QVERIFY(wait_for([&] {
            std::lock_guard lock(r.mutex);
            return std::count(r.events.begin(), r.events.end(), "paused") == 2;
        }));
        trainer.stop();
        worker.join();
        QCOMPARE(summary.status, RunStatus::Stopped);
        QVERIFY(summary.steps < c.epochs * trainer.steps_per_epoch());
        QCOMPARE(summary.steps, r.steps.load());
        QCOMPARE(r.ended, RunStatus::Stopped);
        QVERIFY(std::count(r.events.begin(), r.events.end(), "resumed") >= 1);
        QCOMPARE(r.events.back(), std::string("stopped"));
        // Step numbers ran 1, 2, 3, ... without gaps across the pause.
        for (size_t i = 0; i < r.step_numbers.size(); ++i)
            QCOMPARE(r.step_numbers[i], static_cast<int64_t>(i + 1));
    }

    void stopMidRun() {
        TrainConfig c = spiral().preset.training;
        c.epochs = 100000;
        Recorder r;
        r.step_delay = 100us;
        auto backend = make_cpu_backend();
        Network net = Network::from_json(spiral().preset.network);
        Trainer trainer(net, spiral().data, c, *backend);
        trainer.add_observer(&r);
        RunSummary summary;
        std::thread worker([&] { summary = trainer.run(); });
        QVERIFY(wait_for([&] { return r.steps.load() >= 50; }));
        trainer.stop();
        worker.join();
        QCOMPARE(summary.status, RunStatus::Stopped);
        QVERIFY(summary.steps >= 50);
        QVERIFY(summary.steps < c.epochs * trainer.steps_per_epoch());
    }

    // The hold tests use instead of racing a run's end: the run pauses itself right after the
    // given step, at any machine speed; moved and resumed, it holds again at the next one. A
    // hold on the last step of an epoch fires once, not again at the next epoch's start.
    void holdAfterStep() {
        TrainConfig c = spiral().preset.training;  // 25 steps per epoch
        c.epochs = 100000;
        Recorder r;
        auto backend = make_cpu_backend();
        Network net = Network::from_json(spiral().preset.network);
        Trainer trainer(net, spiral().data, c, *backend);
        trainer.add_observer(&r);
        trainer.hold_after_step(25);
        RunSummary summary;
        std::thread worker([&] { summary = trainer.run(); });
        QVERIFY2(wait_for([&] { return r.paused_at.load() == 25; }), "no hold at step 25");
        QVERIFY(trainer.paused());
        QCOMPARE(r.steps.load(), int64_t{25});
        trainer.hold_after_step(40);
        trainer.resume();
        QVERIFY2(wait_for([&] { return r.paused_at.load() == 40; }), "no hold at step 40");
        QCOMPARE(r.steps.load(), int64_t{40});
        trainer.stop();
        worker.join();
        QCOMPARE(summary.status, RunStatus::Stopped);
        QCOMPARE(summary.steps, int64_t{40});
        std::lock_guard lock(r.mutex);
        QCOMPARE(std::count(r.events.begin(), r.events.end(), "paused"), 2);
        for (size_t i = 0; i < r.events.size(); ++i)
            if (r.events[i] == "paused") QCOMPARE(r.sources[i], std::string("hold"));
    }

    void maxStepsHonoured() {
        TrainConfig c = spiral().preset.training;
        c.max_steps = 37;
        Recorder r;
        const RunSummary s = train(c, r);
        QCOMPARE(s.status, RunStatus::Finished);
        QCOMPARE(s.steps, int64_t{37});
        QCOMPARE(r.losses.size(), size_t{37});
        QCOMPARE(r.start.total_steps, int64_t{37});
        QCOMPARE(r.step_numbers.back(), int64_t{37});
        // Beyond one epoch (25 steps of 32 out of 800): max_steps runs into the next epoch.
        c.max_steps = 60;
        Recorder r2;
        QCOMPARE(train(c, r2).steps, int64_t{60});
    }

    void evalEvery() {
        // 800 training samples, batch 32: 25 steps per epoch; 2 epochs = 50 steps.
        TrainConfig c = spiral().preset.training;
        c.epochs = 2;
        c.eval_every = 10;
        Recorder r;
        const RunSummary s = train(c, r);
        QCOMPARE(s.steps, int64_t{50});
        QList<qint64> at;
        for (const auto& e : r.evals) at.push_back(e.step);
        QCOMPARE(at, (QList<qint64>{10, 20, 30, 40, 50}));
        for (const auto& e : r.evals) QVERIFY(e.test_accuracy > 0 && e.test_accuracy <= 1);

        // With max_steps: every 10 steps, and once more at the last step so the summary holds
        // the final weights' accuracy; never at the epoch boundary in between.
        c.max_steps = 45;
        Recorder r2;
        train(c, r2);
        at.clear();
        for (const auto& e : r2.evals) at.push_back(e.step);
        QCOMPARE(at, (QList<qint64>{10, 20, 30, 40, 45}));
    }

    void outputLayerMustFitTheClasses() {
        nlohmann::json net = spiral().preset.network;
        net["layers"].back()["out"] = 3;
        auto backend = make_cpu_backend();
        Network n = Network::from_json(net);
        QString message;
        try {
            Trainer t(n, spiral().data, spiral().preset.training, *backend);
        } catch (const NetworkError& e) {
            message = e.what();
        }
        QVERIFY2(message.contains("2 classes") && message.contains("[3]") && message.contains("\"out\": 2"),
                 qPrintable("message: " + message));
    }

    // Numbers beyond a setting's type are refused by name instead of being converted (undefined
    // for 1e300 into an int) or wrapped (INT64_MAX + 1 into an int64).
    void settingsBeyondTheirTypeAreRefused() {
        for (const char* text :
             {R"({"epochs": 1e300})", R"({"max_steps": 9223372036854775808})",
              R"({"dataset": {"noise": 1e39}})", R"({"dataset": {"classes": 4294967296}})"}) {
            QString message;
            try {
                (void)train_config_from_json(nlohmann::json::parse(text));
            } catch (const ConfigError& e) {
                message = e.what();
            }
            const QString key = QString(text).section('"', -2, -2);
            QVERIFY2(message.contains(key) && message.contains("must be"),
                     qPrintable(QString(text) + " -> " + message));
        }
    }

    // FP16 gradients overflow at a scale of 2^24; with on_overflow Retry the first step runs its
    // batch again at half the scale until it fits, and is applied, not skipped. Its statistics
    // are those of the attempt that counted: one set, at that attempt's scale.
    void retryRunsTheBatchAgainAtTheLowerScale() {
        TrainConfig c = spiral().preset.training;
        c.precision = PrecisionKind::FP16Mixed;
        c.max_steps = 6;
        c.stats_every = 3;
        LossScalerConfig scaler;
        scaler.initial_scale = 0x1p24;
        scaler.on_overflow = OverflowAction::Retry;
        scaler.max_retries = 12;
        c.scaler = scaler;
        auto backend = make_cpu_backend();
        Network net = Network::from_json(spiral().preset.network);
        Trainer trainer(net, spiral().data, c, *backend);
        VerdictRecorder r;
        trainer.add_observer(&r);
        const RunSummary summary = trainer.run();
        QVERIFY2(summary.status == RunStatus::Finished, summary.error.c_str());
        QCOMPARE(r.steps.size(), size_t{6});
        const StepMetrics& first = r.steps.front();
        QVERIFY2(first.retries >= 1, "the first step did not overflow at 2^24");
        QVERIFY(!first.skipped);
        QCOMPARE(first.loss_scale, static_cast<float>(std::ldexp(1.0, 24 - first.retries)));
        int64_t retries = 0;
        for (const auto& m : r.steps) retries += m.retries;
        QCOMPARE(summary.overflow_count, retries);
        QCOMPARE(summary.skipped_steps, int64_t{0});
        std::set<std::string> seen;
        for (const auto& s : r.stats) {
            if (s.step != 1) continue;
            QCOMPARE(s.loss_scale, first.loss_scale);
            QVERIFY2(
                seen.insert(s.layer_label + " " + s.parameter + " " + std::to_string(int(s.kind))).second,
                "a retried step reported its statistics twice");
        }
        QVERIFY(!seen.empty());
    }

    // A scaler configuration and a learning rate requested while the run is held after step 5
    // apply from step 6 on, each recorded as an event of step 6.
    void liveChangesLandOnTheNextStep() {
        TrainConfig c = spiral().preset.training;
        c.epochs = 100000;
        auto backend = make_cpu_backend();
        Network net = Network::from_json(spiral().preset.network);
        Trainer trainer(net, spiral().data, c, *backend);
        VerdictRecorder r;
        trainer.add_observer(&r);
        trainer.hold_after_step(5);
        std::thread worker([&] { trainer.run(); });
        QVERIFY2(wait_for([&] { return r.paused_at.load() == 5; }), "no hold at step 5");
        LossScalerConfig scaler;
        scaler.mode = ScalerMode::Static;
        scaler.initial_scale = 1024;
        trainer.request_scaler_config(scaler);
        trainer.request_learning_rate(0.0123f);
        trainer.hold_after_step(8);
        trainer.resume();
        const bool held = wait_for([&] { return r.paused_at.load() == 8; });
        trainer.stop();
        worker.join();
        QVERIFY2(held, "no hold at step 8");
        std::lock_guard lock(r.mutex);
        QCOMPARE(r.steps.size(), size_t{8});
        QVERIFY(r.steps[4].loss_scale != 1024.0f);
        for (size_t i = 5; i < 8; ++i) {
            QCOMPARE(r.steps[i].loss_scale, 1024.0f);
            QVERIFY2(std::abs(r.steps[i].lr - 0.0123f) < 1e-6f, qPrintable(QString::number(r.steps[i].lr)));
        }
        const auto at = [&](const std::string& kind) {
            for (const auto& [step, k] : r.events)
                if (k == kind) return step;
            return int64_t{-1};
        };
        QCOMPARE(at("config_changed"), int64_t{6});
        QCOMPARE(at("lr_changed"), int64_t{6});
    }

    void nanInDataIsRefused() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/table.csv";
        std::ofstream out(path);
        out << "a,b,label\n";
        for (int i = 0; i < 20; ++i)
            out << i * 0.5 << "," << (i == 13 ? std::string("nan") : std::to_string(i)) << "," << i % 2
                << "\n";
        out.close();
        DatasetSpec spec;
        spec.kind = "csv";
        spec.path = path;
        QString message;
        try {
            load_dataset(spec);
        } catch (const DataError& e) {
            message = e.what();
        } catch (const std::exception& e) {
            message = QString("wrong exception: ") + e.what();
        }
        QVERIFY2(message.contains("NaN") && message.contains("table.csv"), qPrintable("message: " + message));
    }
};

QTEST_APPLESS_MAIN(TestTrainer)
#include "test_trainer.moc"
