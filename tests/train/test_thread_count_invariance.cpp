// The reproducibility rule of the CPU engine (issue 28): a run's result does not depend on the
// thread count. Every preset the app ships for training (spiral-mlp, fashion-mlp, fashion-cnn,
// fortunes-gpt), in FP32 and in a block-scaled recipe (mxfp8: quantized GEMM and convolution
// operands), trains 50 steps with 1, 2 and 3 threads; the final weights, each step's loss and the
// final optimizer step must be the same bits. Three threads cut the work unevenly, as a 6- or
// 12-core laptop does. Fashion-MNIST presets train on the first 1,000 images (what is checked is
// the arithmetic, not the learning), and SKIP when Debian's dataset-fashion-mnist is missing.
// The engine's headers come before Qt's (core/train/trainer.h declares a member named emit()).
#include "core/backend/backend.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "tests/train/first_rows.h"

#include <QtTest/QtTest>

#include <cstring>
#include <map>

using namespace mpwb;
using mpwb::test::first_rows;

namespace {

constexpr int64_t kSteps = 50;
constexpr int64_t kFashionImages = 1000;
constexpr int64_t kTestSamples = 64;

class LossRecorder final : public TrainingObserver {
public:
    void on_step(const StepMetrics& m) override { losses.push_back(m.loss); }
    std::vector<double> losses;
};

struct Outcome {
    std::vector<double> losses;
    std::vector<std::vector<float>> weights;  // every parameter, in the network's order
};

Outcome train(const Preset& preset, const Dataset& data, PrecisionKind policy, int threads) {
    TrainConfig config = preset.training;
    config.precision = policy;
    config.max_steps = kSteps;
    config.threads = threads;
    config.eval_every = 0;  // at the end of an epoch: never for the GPT within 50 steps
    // The GPT preset warms up for 100 steps: a fifth of the run here, so the schedule is valid.
    config.schedule.warmup_steps = std::min<int64_t>(config.schedule.warmup_steps, kSteps / 5);
    // Four windows of the GPT (its preset takes 12): 256 token rows still cut every product into
    // several blocks, at a third of the time (the suite also runs under ASan).
    if (preset.training.dataset.kind == "fortunes") config.batch_size = 4;
    config.samples.enabled = false;  // the GPT's 200-token sample after its final evaluation
    auto backend = make_cpu_backend();
    Network network = Network::from_json(preset.network);
    Trainer trainer(network, data, config, *backend);
    LossRecorder recorder;
    trainer.add_observer(&recorder);
    const RunSummary summary = trainer.run();
    if (summary.status != RunStatus::Finished) throw std::runtime_error("run ended: " + summary.error);
    Outcome out{std::move(recorder.losses), {}};
    for (const Parameter* p : network.parameters())
        out.weights.emplace_back(p->value.data(), p->value.data() + p->value.numel());
    return out;
}

// Where two outcomes first differ, in words; empty when every bit is the same.
QString first_difference(const Outcome& a, const Outcome& b) {
    if (a.losses.size() != b.losses.size())
        return QString("%1 steps against %2").arg(a.losses.size()).arg(b.losses.size());
    for (size_t i = 0; i < a.losses.size(); ++i)
        if (std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)) != 0)
            return QString("loss of step %1: %2 against %3")
                .arg(i + 1)
                .arg(a.losses[i], 0, 'g', 17)
                .arg(b.losses[i], 0, 'g', 17);
    for (size_t p = 0; p < a.weights.size(); ++p)
        for (size_t i = 0; i < a.weights[p].size(); ++i)
            if (std::memcmp(&a.weights[p][i], &b.weights[p][i], sizeof(float)) != 0)
                return QString("parameter %1, element %2: %3 against %4")
                    .arg(p)
                    .arg(i)
                    .arg(double(a.weights[p][i]), 0, 'g', 9)
                    .arg(double(b.weights[p][i]), 0, 'g', 9);
    return {};
}

}  // namespace

class TestThreadCountInvariance : public QObject {
    Q_OBJECT

private slots:
    void sameBitsForAnyThreadCount_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("policy");
        for (const char* preset : {"spiral-mlp", "fashion-mlp", "fashion-cnn", "fortunes-gpt"})
            for (PrecisionKind p : {PrecisionKind::FP32, PrecisionKind::MxFp8})
                QTest::newRow((std::string(preset) + "/" + precision_name(p)).c_str())
                    << QString(preset) << int(p);
    }

    void sameBitsForAnyThreadCount() {
        QFETCH(QString, preset);
        QFETCH(int, policy);
        const Preset loaded = load_preset(preset.toStdString());
        if (loaded.training.dataset.kind == "fashion-mnist" && !QFileInfo::exists(kDefaultFashionMnistPath))
            QSKIP(
                "Fashion-MNIST is not installed at /usr/share/datasets/fashion-mnist (Debian package "
                "dataset-fashion-mnist)");
        const Dataset& data = dataset_for(loaded);
        const Outcome one = train(loaded, data, PrecisionKind(policy), 1);
        QCOMPARE(one.losses.size(), size_t(kSteps));
        for (int threads : {2, 3}) {
            const Outcome other = train(loaded, data, PrecisionKind(policy), threads);
            const QString difference = first_difference(one, other);
            QVERIFY2(difference.isEmpty(),
                     qPrintable(QString("1 thread against %1: %2").arg(threads).arg(difference)));
        }
    }

private:
    const Dataset& dataset_for(const Preset& preset) {
        const std::string key = preset.training.dataset.kind;
        auto [it, fresh] = datasets_.try_emplace(key);
        if (fresh) {
            Dataset data = load_dataset(preset.training.dataset);
            if (key == "fashion-mnist") {
                data.train_x = first_rows(data.train_x, kFashionImages);
                data.train_y = first_rows(data.train_y, kFashionImages);
            }
            // The run's final evaluation reads the whole test split: the GPT's is 2,000 windows.
            data.test_x = first_rows(data.test_x, kTestSamples);
            data.test_y = first_rows(data.test_y, kTestSamples);
            it->second = std::move(data);
        }
        return it->second;
    }

    std::map<std::string, Dataset> datasets_;
};

QTEST_GUILESS_MAIN(TestThreadCountInvariance)
#include "test_thread_count_invariance.moc"
