// Scaled recipes through the whole step loop: every recipe trains the spiral preset and its
// operands really are quantized (the loss differs from bf16-mixed, and the recorded statistics
// show the element format's values); statistics arrive on the statistics cadence for every
// quantized operand of every GEMM layer; a live recipe change lands on the next step as a
// "recipe_changed" event and is refused for a policy without a recipe; evaluation leaves the
// delayed-scaling history alone; the same seed repeats a run bit for bit, stochastic rounding
// included; the recipe settings survive the configuration's JSON (mxfp4, 4 over 6 and the
// Hadamard signs too, and the JSON of runs made before them reads as before). mxfp4 trains the
// spiral without NaN; nvfp4 with 4 over 6 and fixed Hadamard signs trains and reports blocks
// scaled to 4.
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"

#include <QtTest/QtTest>

#include <cstring>
#include <map>
#include <set>
#include <thread>

using namespace mpwb;

namespace {

class Recorder final : public TrainingObserver {
public:
    void on_step(const StepMetrics& m) override { losses.push_back(m.loss); }
    void on_scaling_stats(const ScalingStatsRecord& r) override { scaling.push_back(r); }
    void on_event(const TrainingEvent& e) override { events.push_back(e); }
    std::vector<double> losses;
    std::vector<ScalingStatsRecord> scaling;
    std::vector<TrainingEvent> events;
};

const Preset& spiral() {
    static const Preset p = load_preset("spiral-mlp");
    return p;
}
const Dataset& spiral_data() {
    static const Dataset d = load_dataset(spiral().training.dataset);
    return d;
}

TrainConfig config_for(PrecisionKind kind, int64_t steps = 40) {
    TrainConfig c = spiral().training;
    c.precision = kind;
    c.max_steps = steps;
    c.stats_every = 10;
    c.threads = 1;
    return c;
}

struct Outcome {
    RunSummary summary;
    Recorder recorder;
};

void run_into(Outcome& out, const TrainConfig& config, int64_t change_at = 0,
              const ScaledRecipeConfig* change = nullptr) {
    auto backend = make_cpu_backend();
    Network net = Network::from_json(spiral().network);
    Trainer trainer(net, spiral_data(), config, *backend);
    trainer.add_observer(&out.recorder);
    if (change) trainer.hold_after_step(change_at);
    if (!change) {
        out.summary = trainer.run();
        return;
    }
    std::thread worker([&] { out.summary = trainer.run(); });
    while (!trainer.paused()) std::this_thread::yield();
    trainer.request_recipe_config(*change);
    trainer.resume();
    worker.join();
}

const PrecisionKind kRecipes[] = {PrecisionKind::Fp8Delayed, PrecisionKind::Fp8Current,
                                  PrecisionKind::Fp8Block,   PrecisionKind::MxFp8,
                                  PrecisionKind::NvFp4,      PrecisionKind::MxFp4};

}  // namespace

class TestScaledRecipes : public QObject {
    Q_OBJECT

private slots:
    void everyRecipeQuantizesAndReports_data() {
        QTest::addColumn<int>("kind_index");
        for (auto k : kRecipes) QTest::newRow(precision_name(k).c_str()) << int(k);
    }
    void everyRecipeQuantizesAndReports() {
        QFETCH(int, kind_index);
        const auto kind = static_cast<PrecisionKind>(kind_index);
        Outcome bf16, scaled;
        run_into(bf16, config_for(PrecisionKind::BF16Mixed));
        run_into(scaled, config_for(kind));
        QCOMPARE(scaled.summary.status, RunStatus::Finished);
        QCOMPARE(scaled.recorder.losses.size(), size_t(40));
        QVERIFY2(scaled.recorder.losses != bf16.recorder.losses, "the recipe changed nothing");
        for (double l : scaled.recorder.losses) QVERIFY(std::isfinite(l));
        // Statistics on steps 1, 10, 20, 30, 40 for x, w and dy of each of the preset's Linear layers.
        std::set<int64_t> steps;
        std::set<std::pair<size_t, std::string>> operands;
        for (const auto& r : scaled.recorder.scaling) {
            steps.insert(r.step);
            operands.insert({r.layer, r.stats.operand});
            QVERIFY(r.layer_label.find("Linear") != std::string::npos);
            QVERIFY2(r.stats.values > 0, r.stats.operand.c_str());
            QVERIFY2(r.stats.sqnr_db > 0, r.stats.operand.c_str());
            QVERIFY(r.stats.underflow_fraction >= 0 && r.stats.underflow_fraction <= 1);
            QVERIFY(r.stats.saturate_fraction >= 0 && r.stats.saturate_fraction <= 1);
        }
        QCOMPARE(steps, (std::set<int64_t>{1, 10, 20, 30, 40}));
        int64_t linear_layers = 0;
        for (const auto& l : spiral().network["layers"])
            if (l["type"] == "Linear") ++linear_layers;
        std::map<size_t, std::set<std::string>> by_layer;
        for (const auto& [layer, operand] : operands) by_layer[layer].insert(operand);
        QCOMPARE(int64_t(by_layer.size()), linear_layers);
        for (const auto& [layer, names] : by_layer) {
            QVERIFY(names.count("x") && names.count("w"));
            // The first Linear computes no input gradient, but its weight gradient still reads dy.
            QVERIFY(names.count("dy") || names.count("dy (wgrad)"));
        }
    }

    void sameSeedRepeatsBitForBit_data() { everyRecipeQuantizesAndReports_data(); }
    void sameSeedRepeatsBitForBit() {
        QFETCH(int, kind_index);
        const auto kind = static_cast<PrecisionKind>(kind_index);
        Outcome a, b;
        run_into(a, config_for(kind, 25));
        TrainConfig two_threads = config_for(kind, 25);
        two_threads.threads = 2;
        run_into(b, two_threads);
        QCOMPARE(a.recorder.losses.size(), b.recorder.losses.size());
        QVERIFY(std::memcmp(a.recorder.losses.data(), b.recorder.losses.data(),
                            a.recorder.losses.size() * sizeof(double)) == 0);
    }

    void liveChangeLandsOnTheNextStep() {
        TrainConfig c = config_for(PrecisionKind::MxFp8, 30);
        Outcome out;
        ScaledRecipeConfig floor = c.recipe;
        floor.mx_scale_rounding = MxScaleRounding::Floor;
        run_into(out, c, 12, &floor);
        QCOMPARE(out.summary.status, RunStatus::Finished);
        const TrainingEvent* change = nullptr;
        for (const auto& e : out.recorder.events)
            if (e.kind == "recipe_changed") change = &e;
        QVERIFY(change);
        QCOMPARE(change->step, int64_t(13));
        QCOMPARE(change->source, std::string("user"));
        QCOMPARE(change->detail["mx_scale_rounding"]["from"].get<std::string>(), std::string("rceil"));
        QCOMPARE(change->detail["mx_scale_rounding"]["to"].get<std::string>(), std::string("floor"));
        // The same run without the change differs only from step 13 on.
        Outcome plain;
        run_into(plain, c);
        for (size_t i = 0; i < 12; ++i) QCOMPARE(out.recorder.losses[i], plain.recorder.losses[i]);
        QVERIFY(std::vector<double>(out.recorder.losses.begin() + 12, out.recorder.losses.end()) !=
                std::vector<double>(plain.recorder.losses.begin() + 12, plain.recorder.losses.end()));
    }

    void fourOverSixAndFixedHadamardTrain() {
        TrainConfig c = config_for(PrecisionKind::NvFp4, 30);
        Outcome plain, options;
        run_into(plain, c);
        c.recipe.nvfp4_4over6 = true;
        c.recipe.hadamard_signs = HadamardSigns::Fixed;
        run_into(options, c);
        QCOMPARE(options.summary.status, RunStatus::Finished);
        for (double l : options.recorder.losses) QVERIFY(std::isfinite(l));
        QVERIFY(options.recorder.losses != plain.recorder.losses);
        int64_t to_four = 0, blocks = 0;
        for (const auto& r : options.recorder.scaling) {
            to_four += r.stats.blocks_scaled_to_4;
            blocks += r.stats.blocks;
        }
        QVERIFY2(to_four > 0 && to_four < blocks, qPrintable(QString("%1 of %2").arg(to_four).arg(blocks)));
        for (const auto& r : plain.recorder.scaling) QCOMPARE(r.stats.blocks_scaled_to_4, int64_t{0});
    }

    void recipeRequestsAreValidated() {
        auto backend = make_cpu_backend();
        Network net = Network::from_json(spiral().network);
        Trainer bf16(net, spiral_data(), config_for(PrecisionKind::BF16Mixed), *backend);
        QVERIFY_THROWS_EXCEPTION(ConfigError, bf16.request_recipe_config({}));
        Network net2 = Network::from_json(spiral().network);
        Trainer fp8(net2, spiral_data(), config_for(PrecisionKind::Fp8Delayed), *backend);
        ScaledRecipeConfig bad;
        bad.amax_history_len = 0;
        try {
            fp8.request_recipe_config(bad);
            QFAIL("a history of 0 was accepted");
        } catch (const RecipeConfigError& e) {
            QCOMPARE(e.issue().field, std::string("amax_history_len"));
        }
    }

    void evaluationLeavesTheHistoryAlone() {
        TrainConfig c = config_for(PrecisionKind::Fp8Delayed, 20);
        c.eval_every = 5;
        Outcome with_eval, without;
        run_into(with_eval, c);
        c.eval_every = 0;  // only at the end of an epoch, as in the other run
        run_into(without, c);
        QCOMPARE(with_eval.recorder.losses, without.recorder.losses);
    }

    void recipeSettingsRoundTripThroughJson() {
        TrainConfig c = config_for(PrecisionKind::Fp8Delayed);
        c.recipe.amax_history_len = 16;
        c.recipe.amax_algorithm = AmaxAlgorithm::MostRecent;
        c.recipe.margin = 2;
        const nlohmann::json j = to_json(c);
        QCOMPARE(j["recipe"]["amax_history_len"].get<int64_t>(), int64_t(16));
        QVERIFY(!j["recipe"].contains("mx_scale_rounding"));  // not an fp8-delayed setting
        const TrainConfig back = train_config_from_json(j);
        QCOMPARE(back.effective_recipe(), c.effective_recipe());
        QVERIFY(!to_json(config_for(PrecisionKind::BF16Mixed)).contains("recipe"));
        // The FP4 options, and a run's JSON from before them: "hadamard": true keeps random signs.
        TrainConfig fp4 = config_for(PrecisionKind::NvFp4);
        fp4.recipe.nvfp4_4over6 = true;
        fp4.recipe.nvfp4_4over6_error = FourOverSixError::Mae;
        fp4.recipe.hadamard_signs = HadamardSigns::Fixed;
        const nlohmann::json fp4_json = to_json(fp4);
        QCOMPARE(fp4_json["recipe"]["nvfp4_4over6"].get<bool>(), true);
        QCOMPARE(fp4_json["recipe"]["nvfp4_4over6_error"].get<std::string>(), std::string("mae"));
        QCOMPARE(fp4_json["recipe"]["hadamard_signs"].get<std::string>(), std::string("fixed"));
        QCOMPARE(train_config_from_json(fp4_json).effective_recipe(), fp4.effective_recipe());
        nlohmann::json old = to_json(config_for(PrecisionKind::NvFp4));
        for (const char* key : {"hadamard_signs", "nvfp4_4over6", "nvfp4_4over6_error"})
            old["recipe"].erase(key);
        QCOMPARE(old["recipe"]["hadamard"].get<bool>(), true);
        const ScaledRecipeConfig old_recipe = train_config_from_json(old).effective_recipe();
        QCOMPARE(old_recipe.hadamard_signs, HadamardSigns::Random);
        QVERIFY(!old_recipe.nvfp4_4over6);
        TrainConfig mx4 = config_for(PrecisionKind::MxFp4);
        mx4.recipe.mx_scale_rounding = MxScaleRounding::Floor;
        mx4.recipe.stochastic_rounding = false;
        const nlohmann::json mx4_json = to_json(mx4);
        QCOMPARE(mx4_json["precision"].get<std::string>(), std::string("mxfp4"));
        QCOMPARE(mx4_json["recipe"]["mx_scale_rounding"].get<std::string>(), std::string("floor"));
        QVERIFY(!mx4_json["recipe"].contains("mx_element"));    // E2M1, always
        QVERIFY(!mx4_json["recipe"].contains("nvfp4_4over6"));  // an nvfp4 setting
        QCOMPARE(train_config_from_json(mx4_json).effective_recipe(), mx4.effective_recipe());
        try {
            (void)train_config_from_json(nlohmann::json{{"recipe", {{"hadamard_signs", "sometimes"}}}});
            QFAIL("hadamard_signs 'sometimes' was accepted");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("recipe.hadamard_signs") != std::string::npos, e.what());
        }
        // An MX element format cannot store weight gradients without its block scale.
        TrainConfig fp4_grads = config_for(PrecisionKind::BF16Mixed);
        fp4_grads.weight_grad_format = Format::E2M1;
        QVERIFY_THROWS_EXCEPTION(ConfigError, fp4_grads.validate());
        fp4_grads.weight_grad_format = Format::E5M2;
        fp4_grads.validate();
        try {
            (void)train_config_from_json(nlohmann::json{{"recipe", {{"margin", -1}}}});
            QFAIL("margin -1 was accepted");
        } catch (const ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("recipe.margin") != std::string::npos, e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestScaledRecipes)
#include "test_scaled_recipes.moc"
