// Tests of the one queue of live changes (core/train/live_changes.h): changes come out in the
// order they were requested; a change that is not valid is refused to the caller with a message
// naming the setting and leaves nothing queued; requests from another thread while the queue is
// drained all arrive, in order; a change requested during step k lands at the boundary before step
// k + 1, in request order (a loss scale then a static configuration ends at the configuration's
// scale, the reverse at the requested one), with its events; a change before the start becomes the
// starting setting.
// The engine's headers come before Qt's, as in test_trainer.
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/train/dataset_source.h"
#include "core/train/live_changes.h"
#include "core/train/trainer.h"
#include "resources/presets.h"

#include <QtTest/QtTest>

#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace mpwb;

namespace {

const PrecisionPolicy kFp16 = PrecisionPolicy::make(PrecisionKind::FP16Mixed);
const PrecisionPolicy kFp8 = PrecisionPolicy::make(PrecisionKind::Fp8Delayed);

LossScalerConfig static_scaler(double scale) {
    LossScalerConfig c;
    c.mode = ScalerMode::Static;
    c.initial_scale = scale;
    return c;
}

// The message of the ConfigError that request throws; empty when it does not throw.
std::string refusal(LiveChanges& queue, LiveChange change) {
    try {
        queue.request(std::move(change));
    } catch (const ConfigError& e) {
        return e.what();
    }
    return {};
}

// Each step's loss scale and learning rate, and every event with its step, in order.
class Tape final : public TrainingObserver {
public:
    void on_step(const StepMetrics& m) override {
        scales.push_back(m.loss_scale);
        rates.push_back(m.lr);
        if (hook) hook(m.step);
    }
    void on_event(const TrainingEvent& e) override { events.emplace_back(e.step, e.kind); }

    std::function<void(int64_t)> hook;
    std::vector<float> scales, rates;
    std::vector<std::pair<int64_t, std::string>> events;
};

// Six steps of the spiral under fp16-mixed (a dynamic scaler from 2^16); `at_step3` requests
// changes from the observer as step 3 is reported.
void run_spiral(Tape& tape, const std::function<void(Trainer&)>& at_step3) {
    static const Preset preset = load_preset("spiral-mlp");
    static const Dataset data = load_dataset(preset.training.dataset);
    TrainConfig c = preset.training;
    c.precision = PrecisionKind::FP16Mixed;
    c.max_steps = 6;
    auto backend = make_cpu_backend();
    Network net = Network::from_json(preset.network);
    Trainer trainer(net, data, c, *backend);
    tape.hook = [&](int64_t step) {
        if (step == 3) at_step3(trainer);
    };
    trainer.add_observer(&tape);
    QCOMPARE(trainer.run().status, RunStatus::Finished);
}

}  // namespace

class TestLiveChanges : public QObject {
    Q_OBJECT
private slots:
    void changesComeOutInRequestOrder() {
        LiveChanges queue(kFp8);
        ScaledRecipeConfig recipe;
        recipe.margin = 3;
        queue.request(LossScaleChange{256});
        queue.request(LearningRateChange{0.01f});
        queue.request(recipe);
        queue.request(static_scaler(1024));
        queue.request(LearningRateChange{0.02f});
        const std::vector<LiveChange> taken = queue.take();
        QCOMPARE(taken.size(), size_t{5});
        QCOMPARE(std::get<LossScaleChange>(taken[0]).scale, 256.0);
        QCOMPARE(std::get<LearningRateChange>(taken[1]).lr, 0.01f);
        QCOMPARE(std::get<ScaledRecipeConfig>(taken[2]).margin, 3);
        QCOMPARE(std::get<ScaledRecipeConfig>(taken[2]).recipe, ScaledRecipe::Fp8Delayed);  // the run's
        QCOMPARE(std::get<LossScalerConfig>(taken[3]), static_scaler(1024));
        QCOMPARE(std::get<LearningRateChange>(taken[4]).lr, 0.02f);
        QVERIFY(queue.take().empty());  // taken once
    }

    void anInvalidChangeIsRefusedWithItsMessage_data() {
        QTest::addColumn<int>("precision");
        QTest::addColumn<int>("kind");  // LiveChange's alternative
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("message");
        const int fp16 = int(PrecisionKind::FP16Mixed), bf16 = int(PrecisionKind::BF16Mixed),
                  fp8 = int(PrecisionKind::Fp8Delayed);
        QTest::newRow("lr 0") << fp16 << 0 << 0.0 << "lr must be above 0 and at most 1e+30, gets 0";
        QTest::newRow("lr nan") << fp16 << 0 << double(NAN) << "lr must be above 0";
        QTest::newRow("lr inf") << fp16 << 0 << double(INFINITY) << "gets inf";
        QTest::newRow("backoff 1.5")
            << fp16 << 1 << 1.5 << "loss scaler: backoff_factor must be a finite number in (0, 1) (got 1.5)";
        QTest::newRow("scale -2") << fp16 << 2 << -2.0 << "requested scale must be positive (got -2)";
        QTest::newRow("scale 1e39") << fp16 << 2 << 1e39 << "exceeds the largest FP32 value";
        QTest::newRow("history 0") << fp8 << 3 << 0.0
                                   << "recipe: amax_history_len must be in [1, 65536] (got 0)";
        QTest::newRow("recipe without one")
            << bf16 << 3 << 16.0
            << "recipe settings need a scaled precision (fp8-delayed, fp8-current, "
               "fp8-block, mxfp8, nvfp4 or mxfp4), not bf16-mixed";
    }

    void anInvalidChangeIsRefusedWithItsMessage() {
        QFETCH(int, precision);
        QFETCH(int, kind);
        QFETCH(double, value);
        QFETCH(QString, message);
        LossScalerConfig scaler;
        scaler.backoff_factor = value;
        ScaledRecipeConfig recipe;
        recipe.amax_history_len = static_cast<int64_t>(value);
        const LiveChange changes[] = {LearningRateChange{static_cast<float>(value)}, scaler,
                                      LossScaleChange{value}, recipe};
        LiveChanges queue(PrecisionPolicy::make(PrecisionKind(precision)));
        const std::string got = refusal(queue, changes[kind]);
        QVERIFY2(QString::fromStdString(got).contains(message), got.c_str());
        QVERIFY(queue.take().empty());
    }

    // The refused setting comes as data too, for a form to mark its field.
    void aRefusedSettingNamesItsField() {
        LiveChanges queue(kFp8);
        LossScalerConfig scaler;
        scaler.hysteresis = 0;
        try {
            queue.request(scaler);
            QFAIL("hysteresis 0 was accepted");
        } catch (const ScalerConfigError& e) {
            QCOMPARE(e.issue(), scaler.issues().front());
        }
        ScaledRecipeConfig recipe;
        recipe.margin = 99;
        try {
            queue.request(recipe);
            QFAIL("margin 99 was accepted");
        } catch (const RecipeConfigError& e) {
            QCOMPARE(e.issue().field, std::string("margin"));
        }
        QVERIFY(queue.take().empty());
    }

    void aRefusedChangeLeavesNothingPending() {
        LiveChanges queue(kFp16);
        queue.request(LearningRateChange{0.5f});
        LossScalerConfig bad;
        bad.growth_factor = 1.0;
        QVERIFY(!refusal(queue, bad).empty());
        QVERIFY(!refusal(queue, LossScaleChange{0.0}).empty());
        const auto taken = queue.take();
        QCOMPARE(taken.size(), size_t{1});  // the valid change before them, alone
        QCOMPARE(std::get<LearningRateChange>(taken[0]).lr, 0.5f);
    }

    // A GUI thread requests while the training thread drains: every change arrives once, in order.
    void requestsFromAnotherThreadArriveInOrder() {
        LiveChanges queue(kFp16);
        constexpr int kRequests = 2000;
        std::thread gui([&] {
            for (int i = 1; i <= kRequests; ++i) queue.request(LearningRateChange{static_cast<float>(i)});
        });
        std::vector<float> seen;
        while (seen.size() < size_t{kRequests})
            for (const LiveChange& c : queue.take()) seen.push_back(std::get<LearningRateChange>(c).lr);
        gui.join();
        for (int i = 0; i < kRequests; ++i) QCOMPARE(seen[size_t(i)], static_cast<float>(i + 1));
        QVERIFY(queue.take().empty());
    }

    // Requested as step 3 is reported: step 3 ran without them, step 4 runs with them, and each
    // is an event of step 4 in request order. The later of a scale and a static configuration wins.
    void aChangeLandsAtTheNextStepBoundaryInRequestOrder() {
        Tape scale_first;
        run_spiral(scale_first, [](Trainer& t) {
            t.request_loss_scale(256);
            t.request_scaler_config(static_scaler(1024));
            t.request_learning_rate(0.0123f);
        });
        QCOMPARE(scale_first.scales.size(), size_t{6});
        QCOMPARE(scale_first.scales[2], 65536.0f);  // step 3: before the changes
        for (size_t i = 3; i < 6; ++i) QCOMPARE(scale_first.scales[i], 1024.0f);
        // The rate of step 4 is the one asked for (the schedule goes on from there).
        QVERIFY2(std::abs(scale_first.rates[3] - 0.0123f) < 1e-6f,
                 qPrintable(QString::number(scale_first.rates[3])));
        QVERIFY(std::abs(scale_first.rates[2] - 0.0123f) > 1e-6f);
        const std::vector<std::pair<int64_t, std::string>> expected{
            {4, "user_set_scale"}, {4, "config_changed"}, {4, "lr_changed"}};
        QCOMPARE(scale_first.events, expected);

        Tape config_first;
        run_spiral(config_first, [](Trainer& t) {
            t.request_scaler_config(static_scaler(1024));
            t.request_loss_scale(256);
        });
        for (size_t i = 3; i < 6; ++i) QCOMPARE(config_first.scales[i], 256.0f);
        const std::vector<std::pair<int64_t, std::string>> reversed{{4, "config_changed"},
                                                                    {4, "user_set_scale"}};
        QCOMPARE(config_first.events, reversed);
    }

    void aChangeBeforeTheStartIsTheStartingSetting() {
        TrainConfig c;
        c.precision = PrecisionKind::Fp8Delayed;
        apply_before_start(c, LearningRateChange{0.25f});
        QCOMPARE(c.lr, 0.25f);
        apply_before_start(c, static_scaler(64));
        QCOMPARE(c.effective_scaler(), static_scaler(64));
        ScaledRecipeConfig recipe;
        recipe.margin = 2;
        apply_before_start(c, recipe);
        QCOMPARE(c.effective_recipe().margin, 2);
        const TrainConfig before = c;
        apply_before_start(c, LossScaleChange{8});  // no scale to replace yet
        QCOMPARE(to_json(c), to_json(before));
        QVERIFY_THROWS_EXCEPTION(ConfigError, apply_before_start(c, LearningRateChange{-1.0f}));
        QCOMPARE(c.lr, 0.25f);
    }
};

QTEST_GUILESS_MAIN(TestLiveChanges)
#include "test_live_changes.moc"
