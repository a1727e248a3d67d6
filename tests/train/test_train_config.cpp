// Tests of TrainConfig's one validation (core/train/train_config.h, issue 24 item 7): every
// setting out of the CLI's range (TrainLimits) is refused by its JSON path with the value, the
// step count derived from epochs is computed with checked arithmetic against the step limit, and
// the sources that are not the CLI (a preset file, a network file carrying training settings, the
// trainer itself as the last gate) go through the same validation. Nothing here trains.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <string>

#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/data/synthetic.h"
#include "core/train/train_config.h"
#include "core/train/trainer.h"
#include "resources/presets.h"

using namespace mpwb;
using nlohmann::json;

namespace {

// The message validation gives for `settings` read over the defaults; empty when accepted.
std::string refusal(const json& settings) {
    try {
        train_config_from_json(settings).validate();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return {};
}

}  // namespace

class TestTrainConfig : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

private slots:
    void outOfRangeSettingsAreRefusedByName() {
        struct Case {
            const char* settings;
            const char* field;
            const char* value;
        };
        const Case cases[] = {
            {R"({"threads": 100000})", "threads", "100000"},
            {R"({"threads": -1})", "threads", "-1"},
            {R"({"epochs": 400000000000000000})", "epochs", "400000000000000000"},
            {R"({"epochs": -3, "max_steps": 10})", "epochs", "-3"},
            {R"({"max_steps": 2000000000000000})", "max_steps", "2000000000000000"},
            {R"({"batch_size": 1073741824})", "batch_size", "1073741824"},
            {R"({"eval_batch": 1073741824})", "eval_batch", "1073741824"},
            {R"({"lr": -1})", "lr", "-1"},
            {R"({"lr": 0})", "lr", "0"},
            {R"({"lr": 1e35})", "lr", "1e+35"},
            {R"({"clip_norm": -0.5})", "clip_norm", "-0.5"},
            {R"({"eval_every": 2000000000000000})", "eval_every", "2000000000000000"},
            {R"({"stats_every": -1})", "stats_every", "-1"},
            {R"({"schedule": {"kind": "cosine", "warmup_steps": 2000000000000000}})", "schedule.warmup_steps",
             "2000000000000000"},
            {R"({"schedule": {"kind": "step", "step_size": 2000000000000000}})", "schedule.step_size",
             "2000000000000000"},
            {R"({"optimizer": {"kind": "sgd", "weight_decay": 1e35}})", "optimizer.weight_decay", "1e+35"},
            {R"({"dataset": {"kind": "spiral", "samples": 1000000000}})", "samples", "1000000000"},
            {R"({"dataset": {"kind": "no-such-set"}})", "dataset.kind", "no-such-set"},
        };
        for (const Case& c : cases) {
            const std::string message = refusal(json::parse(c.settings));
            QVERIFY2(message.find(c.field) != std::string::npos && message.find(c.value) != std::string::npos,
                     (std::string(c.settings) + " -> '" + message + "'").c_str());
        }
        // The limits themselves are accepted.
        QCOMPARE(refusal(json{{"threads", TrainLimits::kMaxThreads},
                              {"epochs", TrainLimits::kMaxEpochs},
                              {"batch_size", TrainLimits::kMaxBatch},
                              {"lr", 1e30},
                              {"max_steps", TrainLimits::kMaxSteps}}),
                 std::string());
    }

    // Epochs times steps per epoch, checked: never a wrapped (negative) count.
    void derivedStepCountIsChecked() {
        TrainConfig c;
        c.epochs = 3;
        c.batch_size = 128;
        QCOMPARE(training_steps(c, 1000), std::int64_t(24));  // 8 steps per epoch, the last one short
        c.max_steps = 5;
        QCOMPARE(training_steps(c, 1000), std::int64_t(5));
        c.max_steps = 0;
        c.epochs = TrainLimits::kMaxEpochs;
        c.batch_size = 1;
        try {
            (void)training_steps(c, kMaxSyntheticSamples);
            QFAIL("1e9 epochs of 1e8 steps accepted");
        } catch (const ConfigError& e) {
            const std::string message = e.what();
            QVERIFY2(message.find("100,000,000,000,000,000 steps") != std::string::npos &&
                         message.find("1,000,000,000,000,000") != std::string::npos,
                     message.c_str());
        }
    }

    // A preset file (and a network file with training settings, read the same way) is validated
    // where it is read: the message names the file and the setting.
    void presetFileIsValidated() {
        const std::string path = dir_.filePath("threads.json").toStdString();
        std::ofstream(path) << R"({"name": "p", "network": {"layers": [{"type": "Linear", "out": 2}]},
                                   "training": {"threads": 100000}})";
        try {
            (void)load_preset_file(path);
            QFAIL("a preset with 100000 threads accepted");
        } catch (const ConfigError& e) {
            const std::string message = e.what();
            QVERIFY2(message.find(path) != std::string::npos &&
                         message.find("threads") != std::string::npos &&
                         message.find("100000") != std::string::npos,
                     message.c_str());
        }
        for (const std::string& name : preset_names()) (void)load_preset(name);  // the shipped ones pass
    }

    // The trainer validates whatever it is given (a caller that skipped the source's check).
    void trainerRefusesBeforeStarting() {
        const Preset preset = load_preset("spiral-mlp");
        TrainConfig c = preset.training;
        c.dataset.samples = 100;
        const Dataset data = load_dataset_for_test(c);
        Network network = Network::from_json(preset.network);
        auto backend = make_cpu_backend();
        c.threads = 100000;
        QVERIFY_THROWS_EXCEPTION(ConfigError, Trainer(network, data, c, *backend));
        c.threads = 0;
        c.epochs = TrainLimits::kMaxEpochs;
        c.batch_size = 1;
        c.max_steps = 0;
        Network again = Network::from_json(preset.network);
        // 1e9 epochs of 80 steps is within the step limit: accepted (nothing runs until run()).
        Trainer accepted(again, data, c, *backend);
        QCOMPARE(accepted.steps_per_epoch(), std::int64_t(80));
    }

private:
    static Dataset load_dataset_for_test(const TrainConfig& c) {
        return make_synthetic({.kind = SyntheticKind::Spiral, .samples = c.dataset.samples, .seed = 1});
    }
};

QTEST_GUILESS_MAIN(TestTrainConfig)
#include "test_train_config.moc"
