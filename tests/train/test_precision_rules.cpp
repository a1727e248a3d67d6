// Precision per GEMM and pass, and what-if statistics (issue 27, DESIGN.md "Precision per layer
// and what-if statistics"): the rules' JSON and command-line forms and their errors; their
// resolution on a 4-block GPT, every GEMM and pass; a run with "first and last in BF16" records
// BF16 statistics for exactly those GEMMs and recipe statistics for the others; what-if
// statistics of the recipes without history equal the statistics of a run in that recipe for
// the same operands, bit for bit; a what-if delayed recipe keeps its own history, of statistics
// steps only; the rules and what-if recipes survive the settings' JSON.
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/nn/gemm_precision_plan.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "tests/common/test_support.h"

#include <QtTest/QtTest>

#include <map>
#include <set>

using namespace mpwb;
using json = nlohmann::json;
using test::error_text;

namespace {

class Recorder final : public TrainingObserver {
public:
    void on_scaling_stats(const ScalingStatsRecord& r) override { scaling.push_back(r); }
    void on_event(const TrainingEvent& e) override { events.push_back(e); }
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

TrainConfig spiral_config(PrecisionKind kind, int64_t steps, int64_t stats_every) {
    TrainConfig c = spiral().training;
    c.precision = kind;
    c.max_steps = steps;
    c.stats_every = stats_every;
    c.threads = 1;
    return c;
}

// Trains the spiral preset; the network stays for inspection.
struct SpiralRun {
    Network net = Network::from_json(spiral().network);
    Recorder recorder;
    RunSummary summary;
    explicit SpiralRun(const TrainConfig& config) {
        auto backend = make_cpu_backend();
        Trainer trainer(net, spiral_data(), config, *backend);
        trainer.add_observer(&recorder);
        summary = trainer.run();
    }
};

Network gpt(int blocks) {
    json layers = json::array({{{"type", "Embedding"}, {"d_model", 16}, {"context", 8}}});
    for (int i = 0; i < blocks; ++i) layers.push_back({{"type", "TransformerBlock"}, {"heads", 2}});
    layers.push_back({{"type", "LayerNorm"}});
    layers.push_back({{"type", "Linear"}, {"out", 0}});
    Network net = Network::from_json({{"layers", layers}, {"loss", "token_cross_entropy"}});
    net.build({8}, 2, 20);
    return net;
}

std::string passes_text(const GemmPrecisionPlan& plan, const GemmPrecision& g) {
    return plan.pass_label(g.passes[0]) + "/" + plan.pass_label(g.passes[1]) + "/" +
           plan.pass_label(g.passes[2]);
}

// Rows of one step, keyed "layer|operand|recipe|what_if".
std::map<std::string, ScalingStats> rows_at(const std::vector<ScalingStatsRecord>& all, int64_t step) {
    std::map<std::string, ScalingStats> rows;
    for (const auto& r : all)
        if (r.step == step)
            rows[r.layer_label + "|" + r.stats.operand + "|" + r.stats.recipe + "|" +
                 (r.stats.what_if ? "w" : "r")] = r.stats;
    return rows;
}

void compare_stats(const ScalingStats& a, const ScalingStats& b, const std::string& what) {
    const QByteArray w = QByteArray::fromStdString(what);
    QVERIFY2(a.amax == b.amax, w.constData());
    QVERIFY2(a.scale == b.scale, w.constData());
    QVERIFY2(a.values == b.values, w.constData());
    QVERIFY2(a.underflow_fraction == b.underflow_fraction, w.constData());
    QVERIFY2(a.saturate_fraction == b.saturate_fraction, w.constData());
    QVERIFY2(a.sqnr_db == b.sqnr_db, w.constData());
    QVERIFY2(a.blocks == b.blocks && a.clipped_blocks == b.clipped_blocks, w.constData());
    QVERIFY2(a.block_exponent_min == b.block_exponent_min, w.constData());
    QVERIFY2(a.block_exponent_counts == b.block_exponent_counts, w.constData());
}

}  // namespace

class TestPrecisionRules : public QObject {
    Q_OBJECT
private slots:
    void globs_match_whole_labels() {
        QVERIFY(glob_match("*.attn.*", "3.attn.qkv"));
        QVERIFY(glob_match("*.mlp.fc2", "12.mlp.fc2"));
        QVERIFY(glob_match("0", "0"));
        QVERIFY(!glob_match("0", "10"));
        QVERIFY(!glob_match("1.*", "11.attn.qkv"));
        QVERIFY(glob_match("?.attn.out", "4.attn.out"));
        QVERIFY(!glob_match("*.attn.*", "3.mlp.fc1"));
        QVERIFY(glob_match("*", ""));
    }

    void rules_read_from_json_and_the_command_line() {
        const PrecisionRule a = precision_rule_from_json(
            json{{"match", "*.attn.*"}, {"fprop", "mxfp8"}, {"dgrad", "mxfp8"}, {"wgrad", "bf16"}},
            "precision_rules[0]");
        QCOMPARE(a.passes[0], std::optional<PassRecipe>(ScaledRecipe::MxFp8));
        QCOMPARE(a.passes[2], std::optional<PassRecipe>(ScaledRecipe::None));
        QCOMPARE(parse_precision_rule("*.attn.*=fprop:mxfp8,dgrad:mxfp8,wgrad:bf16"), a);
        QCOMPARE(parse_precision_rule(to_json(a).dump()), a);
        const PrecisionRule all = parse_precision_rule("0=nvfp4");
        QCOMPARE(all.passes[1], std::optional<PassRecipe>(ScaledRecipe::NvFp4));
        const PrecisionRule some = parse_precision_rule("3=wgrad:bf16");
        QVERIFY(!some.passes[0] && !some.passes[1]);
        VERIFY_MSG(error_text<ConfigError>([] { parse_precision_rule("*.attn.*=fp9"); }), "fp9",
                   "not a GEMM precision", "mxfp8");
        VERIFY_MSG(error_text<ConfigError>([] { parse_precision_rule("*=bprop:bf16"); }), "bprop", "fprop");
        VERIFY_MSG(error_text<ConfigError>([] { parse_precision_rule("mxfp8"); }), "GLOB=RECIPE");
        VERIFY_MSG(error_text<ConfigError>([] {
                       precision_rule_from_json(json{{"match", "0"}}, "precision_rules[3]");
                   }),
                   "precision_rules[3]", "names no pass");
        VERIFY_MSG(error_text<ConfigError>([] {
                       precision_rule_from_json(json{{"match", "0"}, {"fprop", 3}}, "precision_rules[1]");
                   }),
                   "precision_rules[1].fprop");
        VERIFY_MSG(error_text<ConfigError>([] { parse_what_if_list("mxfp8,mxfp8"); }), "listed twice");
        VERIFY_MSG(error_text<ConfigError>([] { parse_what_if_list("bf16"); }), "not a what-if recipe");
    }

    void settings_json_carries_rules_and_what_if() {
        TrainConfig c = spiral_config(PrecisionKind::BF16Mixed, 5, 1);
        c.precision_rules.rules.push_back(parse_precision_rule("0=mxfp8"));
        c.precision_rules.keep_ends_bf16 = true;
        c.what_if = {ScaledRecipe::NvFp4, ScaledRecipe::Fp8Delayed};
        c.recipe.mx_scale_rounding = MxScaleRounding::Floor;
        c.recipe.amax_history_len = 7;
        const TrainConfig back = train_config_from_json(to_json(c));
        QCOMPARE(back.precision_rules, c.precision_rules);
        QVERIFY(back.what_if == c.what_if);
        // A bf16-mixed run still stores the settings of the recipes its rules and what-if name.
        QCOMPARE(back.recipe.mx_scale_rounding, MxScaleRounding::Floor);
        QCOMPARE(back.recipe.amax_history_len, int64_t{7});
        VERIFY_MSG(error_text<ConfigError>([] {
                       train_config_from_json(json{{"what_if", "mxfp8"}});
                   }),
                   "what_if");
    }

    // Every GEMM of a 4-block GPT, every pass: rules first (per pass), then the shortcuts, then
    // the run; attention products follow fp8_attention and never a rule.
    void a_four_block_gpt_resolves_every_gemm_and_pass() {
        const Network net = gpt(4);
        PrecisionRules rules;
        rules.rules.push_back(parse_precision_rule("*.attn.*=fprop:mxfp8,dgrad:mxfp8,wgrad:bf16"));
        rules.rules.push_back(parse_precision_rule("2.mlp.fc2=fp8-current"));
        rules.keep_ends_bf16 = true;
        const GemmPrecisionPlan plan = resolve_gemm_precisions(
            net.all_gemms(), rules, PrecisionPolicy::make(PrecisionKind::NvFp4), false);
        std::map<std::string, std::string> got;
        for (const GemmPrecision& g : plan.gemms) got[g.label] = passes_text(plan, g);
        QCOMPARE(got.size(), size_t{4 * 6 + 1});  // 6 GEMMs per block (two attention products) and the head
        for (int b = 1; b <= 4; ++b) {
            const std::string p = std::to_string(b) + ".";
            // Layer 1 is the first layer with GEMMs; an explicit rule still wins over the shortcut.
            QCOMPARE(got[p + "attn.qkv"], std::string("mxfp8/mxfp8/bf16"));
            QCOMPARE(got[p + "attn.out"], std::string("mxfp8/mxfp8/bf16"));
            QCOMPARE(got[p + "attn.scores"], std::string("bf16/bf16/bf16"));
            QCOMPARE(got[p + "attn.values"], std::string("bf16/bf16/bf16"));
            const std::string mlp = b == 1 ? "bf16/bf16/bf16" : "nvfp4/nvfp4/nvfp4";
            QCOMPARE(got[p + "mlp.fc1"], mlp);
            QCOMPARE(got[p + "mlp.fc2"], b == 2 ? std::string("fp8-current/fp8-current/fp8-current") : mlp);
        }
        QCOMPARE(got["6"], std::string("bf16/bf16/bf16"));  // the head: the last layer with a GEMM
        QVERIFY(plan.departs_from_run());

        PrecisionRules backward;
        backward.backward_bf16 = true;
        const GemmPrecisionPlan b = resolve_gemm_precisions(
            net.all_gemms(), backward, PrecisionPolicy::make(PrecisionKind::MxFp8), true);
        for (const GemmPrecision& g : b.gemms)
            QCOMPARE(passes_text(b, g), g.attention_product
                                            ? std::string("fp8-current/fp8-current/fp8-current")
                                            : std::string("mxfp8/bf16/bf16"));
    }

    void rules_that_cannot_apply_are_refused() {
        const Network net = gpt(1);
        PrecisionRules typo;
        typo.rules.push_back(parse_precision_rule("*.atn.*=bf16"));
        VERIFY_MSG(error_text<ConfigError>([&] {
                       resolve_gemm_precisions(net.all_gemms(), typo,
                                               PrecisionPolicy::make(PrecisionKind::MxFp8), false);
                   }),
                   "precision rule 1", "*.atn.*", "matches no GEMM");
        PrecisionRules bf16;
        bf16.rules.push_back(parse_precision_rule("1.attn.qkv=wgrad:bf16"));
        VERIFY_MSG(error_text<ConfigError>([&] {
                       resolve_gemm_precisions(net.all_gemms(), bf16,
                                               PrecisionPolicy::make(PrecisionKind::FP32), false);
                   }),
                   "precision rule 1", "fp32", "bf16-mixed");
        // A scaled recipe may apply to one GEMM of any run.
        PrecisionRules one;
        one.rules.push_back(parse_precision_rule("1.attn.qkv=mxfp8"));
        QVERIFY(
            resolve_gemm_precisions(net.all_gemms(), one, PrecisionPolicy::make(PrecisionKind::FP32), false)
                .quantizes());
    }

    // keep_ends_bf16 under fp8-current: the first and last Linear record BF16 statistics only,
    // the middle one fp8-current statistics only; the plan is stored as an event.
    void first_and_last_in_bf16_record_bf16_statistics() {
        TrainConfig c = spiral_config(PrecisionKind::Fp8Current, 4, 2);
        c.precision_rules.keep_ends_bf16 = true;
        SpiralRun run(c);
        QCOMPARE(run.summary.status, RunStatus::Finished);
        std::map<std::string, std::set<std::string>> recipes;
        for (const auto& r : run.recorder.scaling) recipes[r.layer_label].insert(r.stats.recipe);
        QCOMPARE(recipes.size(), size_t{3});
        QCOMPARE(recipes["0 Linear"], (std::set<std::string>{"bf16"}));
        QCOMPARE(recipes["2 Linear"], (std::set<std::string>{"fp8-current"}));
        QCOMPARE(recipes["4 Linear"], (std::set<std::string>{"bf16"}));
        for (const auto& r : run.recorder.scaling)
            if (r.stats.recipe == "bf16") {
                QCOMPARE(r.stats.element, Format::BF16);
                // Stored activations are BF16 values already; the FP32 masters a scaled run keeps
                // and the FP32 loss gradient are rounded to BF16 for the GEMM (about 8 bits).
                if (r.stats.operand[0] == 'x') QCOMPARE(r.stats.sqnr_db, 999.0);
                QVERIFY(r.stats.sqnr_db > 40.0);
            }
        const auto event = std::find_if(run.recorder.events.begin(), run.recorder.events.end(),
                                        [](const TrainingEvent& e) { return e.kind == "gemm_precisions"; });
        QVERIFY(event != run.recorder.events.end());
        QCOMPARE(event->detail.size(), size_t{3});
        QCOMPARE(event->detail[0]["fprop"].get<std::string>(), std::string("bf16"));
        QCOMPARE(event->detail[1]["wgrad"].get<std::string>(), std::string("fp8-current"));
    }

    // A run in recipe R watching R as a what-if: the what-if rows are the run's own, bit for bit.
    void what_if_of_the_runs_own_recipe_equals_its_statistics() {
        for (PrecisionKind kind : {PrecisionKind::Fp8Current, PrecisionKind::Fp8Block, PrecisionKind::MxFp8,
                                   PrecisionKind::NvFp4}) {
            TrainConfig c = spiral_config(kind, 4, 2);
            const ScaledRecipe recipe = PrecisionPolicy::make(kind).recipe;
            c.what_if = {recipe};
            SpiralRun run(c);
            int compared = 0;
            for (int64_t step : {2, 4}) {
                const auto rows = rows_at(run.recorder.scaling, step);
                for (const auto& [key, stats] : rows) {
                    if (key.back() != 'r') continue;
                    const std::string twin = key.substr(0, key.size() - 1) + "w";
                    QVERIFY2(rows.count(twin), twin.c_str());
                    compare_stats(rows.at(twin), stats, key);
                    ++compared;
                }
            }
            QVERIFY(compared >= 12);
        }
    }

    // What-if statistics see the operands as the run stores them. A scaled run stores activations
    // in BF16 and quantizes weights from the FP32 masters: at the first step a bf16-mixed run's
    // what-if statistics of the first GEMM's input equal that run's bit for bit, and an FP32
    // run's of its weights do.
    void what_if_in_other_runs_equals_the_recipes_run_on_the_same_operands() {
        struct Base {
            PrecisionKind kind;
            std::vector<const char*> shared;  // the operands both runs hold the same values of
        };
        const Base bases[] = {{PrecisionKind::BF16Mixed, {"x", "x (wgrad)"}},
                              {PrecisionKind::FP32, {"w", "w (dgrad)"}}};
        for (const Base& base : bases)
            for (PrecisionKind kind : {PrecisionKind::Fp8Current, PrecisionKind::Fp8Block,
                                       PrecisionKind::MxFp8, PrecisionKind::NvFp4}) {
                const ScaledRecipe recipe = PrecisionPolicy::make(kind).recipe;
                TrainConfig watching = spiral_config(base.kind, 1, 1);
                watching.what_if = {recipe};
                SpiralRun other(watching);
                SpiralRun real(spiral_config(kind, 1, 1));
                const auto what_if = rows_at(other.recorder.scaling, 1);
                const auto own = rows_at(real.recorder.scaling, 1);
                int compared = 0;
                for (const char* operand : base.shared) {
                    const std::string key =
                        std::string("0 Linear|") + operand + "|" + scaled_recipe_name(recipe);
                    if (!own.count(key + "|r")) continue;  // per-tensor recipes have no second copies
                    QVERIFY2(what_if.count(key + "|w"), key.c_str());
                    compare_stats(what_if.at(key + "|w"), own.at(key + "|r"), key);
                    ++compared;
                }
                QVERIFY(compared >= 1);
                for (const auto& r : other.recorder.scaling) QVERIFY(r.stats.what_if);  // nothing of its own
            }
    }

    // fp8-delayed as a what-if: its history holds one amax per statistics step, not per step.
    void a_what_if_delayed_recipe_keeps_history_of_statistics_steps() {
        TrainConfig c = spiral_config(PrecisionKind::BF16Mixed, 9, 3);
        c.what_if = {ScaledRecipe::Fp8Delayed};
        SpiralRun run(c);
        const GemmQuantizer* q = run.net.quantizers(0)->what_if_quantizer(ScaledRecipe::Fp8Delayed);
        QVERIFY(q != nullptr);
        std::set<int64_t> statistics_steps;
        for (const auto& r : run.recorder.scaling) statistics_steps.insert(r.step);
        QVERIFY(statistics_steps.size() >= 3 && statistics_steps.size() < 9);
        QCOMPARE(q->amax_history(GemmOperand::Weight).size(), statistics_steps.size());
        QVERIFY(run.net.quantizers(0)->slot_count() == 0);  // nothing quantizes the run's own GEMMs
    }
};

QTEST_GUILESS_MAIN(TestPrecisionRules)
#include "test_precision_rules.moc"
