// Tests of sweep specifications (sessions/sweep_spec.h): grid counts and order, overrides that
// keep the preset's other settings, network variants, random sampling reproducible from its seed
// and inside its ranges, every kind of bad spec refused with a message naming the spec file, the
// field and the problem, plans whose cost is over the limits refused before anything is built,
// and the self-contained spec a sweep's record keeps.
#include "sessions/sweep_spec.h"

#include <QTemporaryDir>
#include <QtTest>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "core/common/error.h"

using namespace mpwb;
using nlohmann::json;

namespace {

const char* kNarrowNetwork =
    R"({"name": "narrow", "loss": "cross_entropy", "layers": [{"type": "Linear", "out": 8}, {"type": "ReLU"},
        {"type": "Linear", "out": 2}]})";

// A network of `layers` layers that fits the spiral's two classes: Linear(2) then ReLUs.
json deep_network(const std::string& name, int layers) {
    json list = json::array({{{"type", "Linear"}, {"out", 2}}});
    for (int i = 1; i < layers; ++i) list.push_back({{"type", "ReLU"}});
    return {{"name", name}, {"loss", "cross_entropy"}, {"layers", list}};
}

json values_1_to(int n) {
    json values = json::array();
    for (int i = 1; i <= n; ++i) values.push_back(i);
    return values;
}

// The message of the ConfigError `f` throws; empty when it throws none.
template <class F>
std::string config_error(F&& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return {};
}

// The size of this process's address space now, in bytes (/proc/self/status).
rlim_t current_address_space() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
    return 0;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the sanitizers reserve terabytes of address space
#else
constexpr bool kSanitized = false;
#endif

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

    // The FP4 recipes and their options are axes like any other setting.
    void fp4RecipeAxes() {
        const SweepSpec spec = parse_sweep_spec(json::parse(R"({"name": "f", "preset": "spiral-mlp",
            "training": {"max_steps": 5},
            "axes": [{"setting": "precision", "values": ["nvfp4", "mxfp4"]},
                     {"setting": "recipe.hadamard_signs", "values": ["random", "fixed"]}]})"),
                                                "test");
        const auto plan = plan_sweep(spec);
        QCOMPARE(plan.size(), std::size_t(4));
        QCOMPARE(plan[3].preset.training.precision, PrecisionKind::MxFp4);
        QCOMPARE(plan[3].preset.training.effective_recipe().recipe, ScaledRecipe::MxFp4);
        QCOMPARE(plan[3].preset.training.recipe.hadamard_signs, HadamardSigns::Fixed);
        QCOMPARE(plan[0].preset.training.recipe.hadamard_signs, HadamardSigns::Random);
        const SweepSpec four = parse_sweep_spec(json::parse(R"({"name": "f", "preset": "spiral-mlp",
            "training": {"max_steps": 5, "precision": "nvfp4"},
            "axes": [{"setting": "recipe.nvfp4_4over6", "values": [false, true]}]})"),
                                                "test");
        QVERIFY(plan_sweep(four)[1].preset.training.recipe.nvfp4_4over6);
        QVERIFY(!plan_sweep(four)[0].preset.training.recipe.nvfp4_4over6);
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

    // Issue 24: two 4,095-layer variants x 5,000 seeds would hold 10,000 copies of a 64 KB network
    // (bad_alloc at 7.6 GB after a minute before). Refused by parse_sweep_spec, before a single
    // network is built or a run planned, with the numbers and the limit.
    void costlyPlansAreRefusedBeforeBuilding() {
        const json spec = {
            {"name", "hostile"},
            {"preset", "spiral-mlp"},
            {"max_runs", 10000},
            {"axes",
             {{{"setting", "network"}, {"values", {deep_network("a", 4095), deep_network("b", 4095)}}},
              {{"setting", "seed"}, {"values", values_1_to(5000)}}}}};
        const std::string message = config_error([&] { (void)parse_sweep_spec(spec, "sweep spec h.json"); });
        QVERIFY2(message.rfind("sweep spec h.json: axes: the plan holds 10,000 runs of up to ", 0) == 0,
                 message.c_str());
        QVERIFY2(message.find("more than the limit of 67,108,864") != std::string::npos, message.c_str());

        json random = spec;
        random["method"] = "random";
        random["samples"] = 10000;
        const std::string drawn = config_error([&] { (void)parse_sweep_spec(random, "sweep spec r.json"); });
        QVERIFY2(drawn.rfind("sweep spec r.json: samples: the plan holds 10,000 runs", 0) == 0,
                 drawn.c_str());

        // Axes beyond any count of settings: refused before the pairwise overlap check.
        json many = {{"name", "axes"}, {"preset", "spiral-mlp"}, {"axes", json::array()}};
        for (int i = 0; i < 20000; ++i)
            many["axes"].push_back({{"setting", "s" + std::to_string(i)}, {"values", {1}}});
        const std::string axes = config_error([&] { (void)parse_sweep_spec(many, "sweep spec a.json"); });
        QVERIFY2(axes.rfind("sweep spec a.json: axes: 20000 axes, more than the limit of 64", 0) == 0,
                 axes.c_str());
    }

    // A realistic sweep well inside the limits still plans: 200-layer variants x 128 seeds; each
    // variant is checked once, whatever the number of runs sharing it.
    void realisticSweepPlans() {
        const json spec = {
            {"name", "fits"},
            {"preset", "spiral-mlp"},
            {"axes",
             {{{"setting", "network"}, {"values", {deep_network("a", 200), deep_network("b", 199)}}},
              {{"setting", "seed"}, {"values", values_1_to(128)}}}}};
        const auto plan = plan_sweep(parse_sweep_spec(spec, "test"));
        QCOMPARE(plan.size(), std::size_t(256));
        QCOMPARE(plan[255].preset.network["layers"].size(), std::size_t(199));
        QCOMPARE(plan[255].preset.training.seed, std::uint64_t(128));
    }

    // dataset.samples = 1e8 cost 11 s and 2.3 GB per planned run when validation generated the
    // set; it is checked by its declared sizes now. Planned in a child process whose address space
    // may grow by 512 MiB only: generating one such set (1.2 GB of points) would fail there.
    void planDoesNotGenerateDatasets() {
        if (kSanitized) QSKIP("the address-space limit does not apply under a sanitizer");
        const json spec = json::parse(R"({"name": "big", "preset": "spiral-mlp",
            "training": {"dataset": {"samples": 100000000}},
            "axes": [{"setting": "seed", "values": [1, 2, 3]}]})");
        const rlim_t limit = current_address_space() + (rlim_t{512} << 20);
        const pid_t child = fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            const rlimit bound{limit, limit};
            setrlimit(RLIMIT_AS, &bound);
            try {
                const auto plan = plan_sweep(parse_sweep_spec(spec, "test"));
                _exit(plan.size() == 3 && plan[2].preset.training.dataset.samples == 100'000'000 ? 0 : 1);
            } catch (...) {
                _exit(2);
            }
        }
        int status = 0;
        QCOMPARE(waitpid(child, &status, 0), child);
        QVERIFY(WIFEXITED(status));
        QCOMPARE(WEXITSTATUS(status), 0);
    }

    // The spec a sweep's record keeps holds a preset file's content: planned from it, the runs are
    // the same, and they stay the same when the file changes afterwards.
    void selfContainedSpecKeepsThePresetFile() {
        const std::string preset = dir_.filePath("base.json").toStdString();
        auto write_preset = [&](int out) {
            std::ofstream(preset) << R"({"network": {"loss": "cross_entropy", "layers": [{"type": "Linear",
                "out": )" << out << R"(}, {"type": "ReLU"}, {"type": "Linear", "out": 2}]},
                "training": {"lr": 0.05, "max_steps": 4}})";
        };
        write_preset(16);
        const SweepSpec spec = read_sweep_spec_file(spec_file(
            R"({"name": "file", "preset": "base.json", "training": {"batch_size": 16},
                "axes": [{"setting": "seed", "values": [1, 2]}]})"));
        const json stored = self_contained_sweep_spec(spec);
        QVERIFY(stored["preset"].is_object());
        QCOMPARE(stored["training"], json::parse(R"({"batch_size": 16})"));
        write_preset(99);  // edited after the sweep started
        const auto planned = plan_sweep(parse_sweep_spec(stored, "sweep 1", "/nonexistent"));
        const auto original = plan_sweep(spec);
        QCOMPARE(planned.size(), std::size_t(2));
        for (std::size_t i = 0; i < planned.size(); ++i) {
            QCOMPARE(planned[i].preset.network, original[i].preset.network);
            QCOMPARE(to_json(planned[i].preset.training), to_json(original[i].preset.training));
            QCOMPARE(planned[i].preset.name, original[i].preset.name);
        }
        QCOMPARE(planned[1].preset.network["layers"][0]["out"].get<int>(), 16);
        QCOMPARE(planned[1].preset.training.lr, 0.05f);
        QCOMPARE(planned[1].preset.training.batch_size, std::int64_t(16));
        // A spec without a preset file is stored as written.
        const SweepSpec named = parse_sweep_spec(
            json::parse(
                R"({"name": "n", "preset": "spiral-mlp", "axes": [{"setting": "lr", "values": [1]}]})"),
            "test");
        QCOMPARE(self_contained_sweep_spec(named), named.source);
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

    // A GPT sweep: a network variant carries its context to its run's dataset (the windows follow
    // the Embedding's position table); a dataset.context axis that disagrees with a variant, or a
    // context longer than the base network's Embedding, is refused naming the variant and both
    // numbers. The text file is not read at plan time.
    void textVariantsCarryTheirContext() {
        auto gpt = [](const std::string& name, int d_model, int context, int blocks) {
            json layers = json::array({{{"type", "Embedding"}, {"d_model", d_model}, {"context", context}}});
            for (int b = 0; b < blocks; ++b) layers.push_back({{"type", "TransformerBlock"}, {"heads", 2}});
            layers.push_back({{"type", "LayerNorm"}});
            layers.push_back({{"type", "Linear"}, {"out", 0}});
            return json{{"name", name}, {"loss", "token_cross_entropy"}, {"layers", layers}};
        };
        json spec = {
            {"name", "gpt"},
            {"network", gpt("small", 16, 16, 1)},
            {"training", {{"dataset", {{"kind", "text"}, {"path", "absent.txt"}, {"context", 16}}}}},
            {"axes",
             json::array({{{"setting", "network"},
                           {"values", json::array({gpt("small", 16, 16, 1), gpt("wide", 32, 48, 2)})}},
                          {{"setting", "lr"}, {"values", {0.01, 0.003}}}})}};
        const auto plan = plan_sweep(parse_sweep_spec(spec, "test"));
        QCOMPARE(plan.size(), std::size_t(4));
        QCOMPARE(plan[0].preset.training.dataset.context, std::int64_t{16});
        QCOMPARE(plan[2].preset.training.dataset.context, std::int64_t{48});
        QCOMPARE(plan[3].preset.training.dataset.context, std::int64_t{48});
        QCOMPARE(plan[3].preset.network["layers"].size(), std::size_t(5));  // two blocks

        json clash = spec;
        clash["axes"][1] = {{"setting", "dataset.context"}, {"values", {16, 32}}};
        const std::string message = config_error([&] { (void)plan_sweep(parse_sweep_spec(clash, "test")); });
        QVERIFY2(message.find("run 1 (network=small dataset.context=32)") != std::string::npos,
                 message.c_str());
        QVERIFY2(message.find("network variant 'small' has context 16") != std::string::npos,
                 message.c_str());
        QVERIFY2(message.find("dataset.context is 32") != std::string::npos, message.c_str());

        json too_long = spec;
        too_long["axes"] = json::array({{{"setting", "dataset.context"}, {"values", {8, 64}}}});
        const std::string longer =
            config_error([&] { (void)plan_sweep(parse_sweep_spec(too_long, "test")); });
        QVERIFY2(longer.find("run 1 (dataset.context=64): dataset.context 64 is longer than the network's "
                             "Embedding context 16") != std::string::npos,
                 longer.c_str());
        too_long["axes"][0]["values"] = {8, 16};
        QCOMPARE(plan_sweep(parse_sweep_spec(too_long, "test"))[0].preset.training.dataset.context,
                 std::int64_t{8});
    }
};

QTEST_GUILESS_MAIN(TestSweepSpec)
#include "test_sweep_spec.moc"
