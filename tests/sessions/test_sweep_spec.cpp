// Tests of sweep specifications (sessions/sweep_spec.h): grid counts and order, overrides that
// keep the preset's other settings, network variants, random sampling reproducible from its seed
// and inside its ranges, and every kind of bad spec refused with a message naming the spec file,
// the field and the problem.
#include "sessions/sweep_spec.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "core/common/error.h"

using namespace mpwb;
using nlohmann::json;

namespace {

const char* kNarrowNetwork =
    R"({"name": "narrow", "loss": "cross_entropy", "layers": [{"type": "Linear", "out": 8}, {"type": "ReLU"},
        {"type": "Linear", "out": 2}]})";

}  // namespace

class TestSweepSpec : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int files_ = 0;

    // Writes the text to a fresh spec file and returns its path.
    std::string spec_file(const std::string& text) {
        const std::string path = dir_.filePath(QString("spec_%1.json").arg(++files_)).toStdString();
        std::ofstream(path) << text;
        return path;
    }

    // The spec must be refused with a message naming the file, the field (unless empty: JSON that
    // does not parse has none) and the problem.
    void expect_refused(const std::string& text, const std::string& field, const std::string& problem) {
        const std::string path = spec_file(text);
        try {
            const SweepSpec spec = read_sweep_spec_file(path);
            (void)plan_sweep(spec);
            QFAIL(("accepted: " + text).c_str());
        } catch (const ConfigError& e) {
            const std::string message = e.what();
            QVERIFY2(message.find(path) != std::string::npos, message.c_str());
            QVERIFY2(field.empty() || message.find(field + ":") != std::string::npos, message.c_str());
            QVERIFY2(message.find(problem) != std::string::npos, message.c_str());
        }
    }

private slots:
    void gridCountAndOrder() {
        const SweepSpec spec = parse_sweep_spec(json::parse(R"({"name": "g", "preset": "spiral-mlp",
            "training": {"max_steps": 5},
            "axes": [{"setting": "lr", "values": [0.1, 0.01]},
                     {"setting": "precision", "values": ["fp32", "fp16-mixed", "bf16-mixed"]}]})"),
                                                "test");
        QCOMPARE(sweep_run_count(spec), std::int64_t(6));
        const auto plan = plan_sweep(spec);
        QCOMPARE(plan.size(), std::size_t(6));
        // The last axis varies fastest.
        QCOMPARE(sweep_settings_text(plan[0]), std::string("lr=0.1 precision=fp32"));
        QCOMPARE(sweep_settings_text(plan[1]), std::string("lr=0.1 precision=fp16-mixed"));
        QCOMPARE(sweep_settings_text(plan[5]), std::string("lr=0.01 precision=bf16-mixed"));
        QCOMPARE(plan[4].index, std::int64_t(4));
        QCOMPARE(plan[4].preset.training.lr, 0.01f);
        QCOMPARE(plan[4].preset.training.precision, PrecisionKind::FP16Mixed);
        QCOMPARE(plan[4].preset.training.max_steps, std::int64_t(5));
        QCOMPARE(plan[4].preset.training.epochs, std::int64_t(150));  // the preset's, untouched
        QCOMPARE(plan_sweep_run(spec, 4).preset.training.lr, 0.01f);
        QVERIFY_THROWS_EXCEPTION(ConfigError, plan_sweep_run(spec, 6));
    }

    // A partial nested override keeps the preset's other values in that object.
    void nestedSettingsKeepTheRest() {
        const SweepSpec spec = parse_sweep_spec(json::parse(R"({"name": "n", "preset": "spiral-mlp",
            "training": {"schedule": {"warmup_steps": 7}, "precision": "fp16-mixed"},
            "axes": [{"setting": "optimizer.beta1", "values": [0.8, 0.95]},
                     {"setting": "scaler.growth_interval", "values": [100]},
                     {"setting": "dataset.noise", "values": [0.3]}]})"),
                                                "test");
        const auto plan = plan_sweep(spec);
        QCOMPARE(plan.size(), std::size_t(2));
        const TrainConfig& c = plan[1].preset.training;
        QCOMPARE(c.optimizer.kind, std::string("adam"));
        QCOMPARE(c.optimizer.beta1, 0.95f);
        QCOMPARE(c.schedule.kind, std::string("cosine"));
        QCOMPARE(c.schedule.warmup_steps, std::int64_t(7));
        QVERIFY(c.scaler);
        QCOMPARE(c.scaler->growth_interval, std::int64_t(100));
        QCOMPARE(c.scaler->mode, ScalerMode::Dynamic);
        QCOMPARE(c.dataset.noise, 0.3f);
        QCOMPARE(c.dataset.samples, std::int64_t(1000));
    }

    void networkVariants() {
        const SweepSpec spec = parse_sweep_spec(
            json::parse(
                std::string(R"({"name": "nets", "preset": "spiral-mlp", "axes": [{"setting": "network",
                "values": ["spiral-mlp", )") +
                kNarrowNetwork + "]}]}"),
            "test");
        const auto plan = plan_sweep(spec);
        QCOMPARE(plan.size(), std::size_t(2));
        QCOMPARE(sweep_settings_text(plan[1]), std::string("network=narrow"));
        QCOMPARE(plan[1].preset.network["layers"][0]["out"].get<int>(), 8);
        QCOMPARE(plan[0].preset.network["layers"][0]["out"].get<int>(), 64);
    }

    void randomIsReproducibleAndInRange() {
        auto spec_text = [](int seed) {
            return R"({"name": "r", "preset": "spiral-mlp", "method": "random", "samples": 40, "seed": )" +
                   std::to_string(seed) + R"(,
                "axes": [{"setting": "lr", "values": {"min": 0.0001, "max": 0.1, "log": true}},
                         {"setting": "batch_size", "values": {"min": 8, "max": 64}},
                         {"setting": "precision", "values": ["fp32", "bf16-mixed"]}]})";
        };
        const SweepSpec spec = parse_sweep_spec(json::parse(spec_text(3)), "test");
        const auto plan = plan_sweep(spec);
        const auto again = plan_sweep(parse_sweep_spec(json::parse(spec_text(3)), "test"));
        const auto other = plan_sweep(parse_sweep_spec(json::parse(spec_text(4)), "test"));
        QCOMPARE(plan.size(), std::size_t(40));
        bool differs = false, below_1e3 = false, above_1e2 = false, both_precisions = false;
        for (std::size_t i = 0; i < plan.size(); ++i) {
            QCOMPARE(sweep_settings_text(plan[i]), sweep_settings_text(again[i]));
            differs = differs || sweep_settings_text(plan[i]) != sweep_settings_text(other[i]);
            const float lr = plan[i].preset.training.lr;
            QVERIFY(lr >= 0.0001f && lr <= 0.1f);
            below_1e3 = below_1e3 || lr < 1e-3f;  // log-uniform: a decade below 1e-3 gets a third
            above_1e2 = above_1e2 || lr > 1e-2f;
            QVERIFY(plan[i].settings[1].value.is_number_integer());
            const auto batch = plan[i].preset.training.batch_size;
            QVERIFY(batch >= 8 && batch <= 64);
            both_precisions = both_precisions || plan[i].settings[2].value != plan[0].settings[2].value;
        }
        QVERIFY(differs);
        QVERIFY(below_1e3 && above_1e2);
        QVERIFY(both_precisions);
        // A task plans only its own index, and gets what the whole plan gave it.
        QCOMPARE(sweep_settings_text(plan_sweep_run(spec, 17)), sweep_settings_text(plan[17]));
    }

    void networkAndTrainingBase() {
        const SweepSpec spec =
            parse_sweep_spec(json::parse(std::string(R"({"name": "own", "network": )") + kNarrowNetwork + R"(,
                "training": {"dataset": {"kind": "moons"}, "max_steps": 3},
                "axes": [{"setting": "seed", "values": [1, 2, 3]}]})"),
                             "test");
        const auto plan = plan_sweep(spec);
        QCOMPARE(plan.size(), std::size_t(3));
        QCOMPARE(plan[2].preset.training.seed, std::uint64_t(3));
        QCOMPARE(plan[2].preset.training.dataset.kind, std::string("moons"));
        QCOMPARE(plan[2].preset.name, std::string("narrow"));
    }

    void planJson() {
        const SweepSpec spec = parse_sweep_spec(
            json::parse(
                R"({"name": "j", "preset": "spiral-mlp", "axes": [{"setting": "lr", "values": [0.5, 0.25]}]})"),
            "test");
        const json j = sweep_plan_to_json(spec, plan_sweep(spec));
        QCOMPARE(j["runs"].get<int>(), 2);
        QCOMPARE(j["plan"][1]["settings"]["lr"].get<double>(), 0.25);
        QCOMPARE(j["plan"][1]["training"]["lr"].get<double>(), 0.25);
    }

    // Issue 24: training settings in a spec are held to the CLI's ranges (TrainConfig::validate),
    // in "training" and on an axis.
    void trainingSettingsObeyTheCliRanges() {
        const std::string head = R"({"name": "bad", "preset": "spiral-mlp", )";
        expect_refused(
            head + R"("training": {"threads": 100000}, "axes": [{"setting": "lr", "values": [1]}]})",
            "training", "threads must be from 0 to 4096, gets 100000");
        expect_refused(head + R"("axes": [{"setting": "epochs", "values": [5, 400000000000000000]}]})",
                       "axes[0].values[1]", "epochs must be from 1 to 1000000000, gets 400000000000000000");
        expect_refused(head + R"("axes": [{"setting": "batch_size", "values": [1073741824]}]})",
                       "axes[0].values[0]", "batch_size must be from 1 to 16777216");
        expect_refused(head + R"("axes": [{"setting": "lr", "values": [-1]}]})", "axes[0].values[0]",
                       "lr must be above 0");
        expect_refused(head + R"("method": "random", "samples": 2,
                           "axes": [{"setting": "threads", "values": {"min": 1, "max": 100000}}]})",
                       "axes[0].values.max", "threads must be from 0 to 4096");
    }

    void errorsNameFileFieldAndProblem() {
        const std::string head = R"({"name": "bad", "preset": "spiral-mlp", )";
        expect_refused(head + R"("axes": [{"setting": "optimizer.betaa", "values": [0.9]}]})",
                       "axes[0].setting", "unknown setting 'betaa'");
        expect_refused(head + R"("axes": [{"setting": "learning_rate", "values": [0.9]}]})",
                       "axes[0].setting", "unknown setting 'learning_rate'");
        expect_refused(head + R"("axes": [{"setting": "lr", "values": []}]})", "axes[0].values",
                       "has no values");
        expect_refused(head + R"("axes": [{"setting": "lr", "values": [0.1, -1]}]})", "axes[0].values[1]",
                       "lr must be above 0");
        expect_refused(head + R"("axes": [{"setting": "batch_size", "values": ["big"]}]})",
                       "axes[0].values[0]", "must be an integer");
        expect_refused(head + R"("axes": [{"setting": "precision", "values": ["fp17"]}]})",
                       "axes[0].values[0]", "fp17");
        expect_refused(head + R"("max_runs": 3, "axes": [{"setting": "lr", "values": [1, 2]},
                           {"setting": "seed", "values": [1, 2]}]})",
                       "axes", "the grid has 4 runs (2 x 2), more than max_runs 3");
        expect_refused(head + R"("max_runs": 20000, "axes": [{"setting": "lr", "values": [1]}]})", "max_runs",
                       "10000");
        expect_refused(
            head + R"("method": "random", "samples": 300, "axes": [{"setting": "lr", "values": [1]}]})",
            "samples", "more than max_runs 256");
        expect_refused(
            R"({"name": "bad", "preset": "no-such-preset", "axes": [{"setting": "lr", "values": [1]}]})",
            "preset", "unknown preset 'no-such-preset'");
        expect_refused(
            head + R"("axes": [{"setting": "lr", "values": [1]}, {"setting": "lr", "values": [2]}]})",
            "axes[1].setting", "duplicate axis");
        expect_refused(head + R"("axes": [{"setting": "optimizer", "values": [{"kind": "sgd"}]},
                           {"setting": "optimizer.beta1", "values": [0.9]}]})",
                       "axes[1].setting", "duplicate axis");
        expect_refused(head + R"("axes": [{"setting": "lr", "values": {"min": 0.1, "max": 1}}]})",
                       "axes[0].values", "\"method\": \"random\"");
        expect_refused(head + R"("method": "random", "samples": 2,
                           "axes": [{"setting": "lr", "values": {"min": 1, "max": 0.1}}]})",
                       "axes[0].values", "above max");
        expect_refused(head + R"("method": "random", "samples": 2,
                           "axes": [{"setting": "lr", "values": {"min": 0, "max": 0.1, "log": true}}]})",
                       "axes[0].values.min", "log range needs min > 0");
        expect_refused(head + R"("method": "random", "axes": [{"setting": "lr", "values": [1]}]})", "samples",
                       "needs \"samples\"");
        expect_refused(head + R"("axes": []})", "axes", "a sweep needs \"axes\"");
        expect_refused(head + R"("axis": []})", "(top level)", "unknown setting 'axis'");
        expect_refused(R"({"preset": "spiral-mlp", "axes": [{"setting": "lr", "values": [1]}]})", "name",
                       "needs a \"name\"");
        expect_refused(head + R"("axes": [{"setting": "network", "values": [{"layers": []}]}]})",
                       "axes[0].values[0]", "needs a \"name\"");
        // Each value is fine alone; the run that combines them is not (3 outputs, 2 spiral classes).
        expect_refused(
            head + R"("axes": [{"setting": "network", "values": [{"name": "three", "loss": "cross_entropy",
                           "layers": [{"type": "Linear", "out": 3}]}]}]})",
            "run 0 (network=three)", "2 classes");
        // Hostile input: deep setting paths, integer bounds past 2^53, a network named by a number.
        std::string deep = "lr";
        for (int i = 0; i < 5000; ++i) deep += ".x";
        expect_refused(head + R"("axes": [{"setting": ")" + deep + R"(", "values": [1]}]})",
                       "axes[0].setting", "unknown setting (too deep)");
        expect_refused(head + R"("method": "random", "samples": 2,
                           "axes": [{"setting": "seed", "values": {"min": 0, "max": 18446744073709551615}}]})",
                       "axes[0].values", "2^53");
        expect_refused(R"({"name": "bad", "network": {"name": 7, "layers": [{"type": "Linear", "out": 2}],
                           "loss": "cross_entropy"}, "axes": [{"setting": "lr", "values": [2, "x"]}]})",
                       "network", "\"name\" must be a string");
        expect_refused(R"({"name": "bad", "preset": "spiral-mlp", "axes": [)", "", "not valid JSON");
        expect_refused(std::string(200, '[') + std::string(200, ']'), "", "nest");
    }
};

QTEST_GUILESS_MAIN(TestSweepSpec)
#include "test_sweep_spec.moc"
