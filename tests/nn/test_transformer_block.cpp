// TransformerBlock: its FP32 forward against the float64 reference (tests/nn/reference_block.h),
// its backward against float64 central differences of that reference for every option (norm
// kind, QK-norm, GELU or SwiGLU, bias, heads, T = 1, dropout with a fixed mask), causality, and
// the shape errors that name their field.
#include <QtTest/QtTest>

#include <cmath>
#include <memory>
#include <set>

#include "core/backend/backend.h"
#include "core/common/rng.h"
#include "core/nn/network.h"
#include "core/train/checkpoint_state.h"
#include "tests/nn/reference_block.h"

using namespace mpwb;
using nlohmann::json;
using ref::Vec;

namespace {

constexpr double kStep = 1e-5;        // central-difference step on the float64 forward
constexpr double kGradTol = 3e-4;     // FP32 backward vs float64 differences
constexpr double kForwardTol = 2e-5;  // FP32 forward vs float64 forward

Vec dbl(const float* p, int64_t n) { return Vec(p, p + n); }

double dot(const Vec& a, const Vec& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// Indices to check: all of them for small tensors, an even spread for large ones.
std::vector<int64_t> sample_indices(int64_t n, int64_t max_count = 60) {
    std::vector<int64_t> idx;
    const int64_t step = std::max<int64_t>(1, n / max_count);
    for (int64_t i = 0; i < n; i += step) idx.push_back(i);
    if (idx.back() != n - 1) idx.push_back(n - 1);
    return idx;
}

// The worst |analytic − numeric| / (|numeric| + rms(numeric)) and where.
QString gradient_problem(const std::string& what, const std::vector<double>& analytic,
                         const std::vector<double>& numeric) {
    double rms = 0;
    for (double v : numeric) rms += v * v;
    rms = std::sqrt(rms / std::max<size_t>(numeric.size(), 1)) + 1e-12;
    for (size_t i = 0; i < numeric.size(); ++i) {
        const double e = std::fabs(analytic[i] - numeric[i]) / (std::fabs(numeric[i]) + rms);
        if (!(e <= kGradTol))
            return QString("%1: element %2 analytic %3, finite difference %4 (relative error %5)")
                .arg(QString::fromStdString(what))
                .arg(i)
                .arg(analytic[i], 0, 'g', 9)
                .arg(numeric[i], 0, 'g', 9)
                .arg(e);
    }
    return {};
}

// The block's dropout masks as its forward draws them from `rng`: the attention mask, then the
// mask after the attention projection, then the one after the MLP.
struct DrawnMasks {
    Vec attention, after_attention, after_mlp;
};
DrawnMasks draw_masks(Rng rng, const TransformerBlockSettings& s, int64_t samples, int64_t T, int64_t d) {
    auto draw = [&](float p, int64_t n) {
        Vec m(static_cast<size_t>(n), 1.0);
        if (p > 0)
            for (double& v : m) v = rng.uniform() < p ? 0.0 : static_cast<double>(1.0f / (1.0f - p));
        return m;
    };
    DrawnMasks m;
    m.attention = draw(s.attention_dropout, samples * s.heads * T * T);
    m.after_attention = draw(s.residual_dropout, samples * T * d);
    m.after_mlp = draw(s.residual_dropout, samples * T * d);
    return m;
}

// Values that BF16 cannot hold exactly.
int64_t count_inexact(const float* values, int64_t n) {
    int64_t inexact = 0;
    for (int64_t i = 0; i < n; ++i) inexact += round_to_format(values[i], Format::BF16) != values[i];
    return inexact;
}

struct BlockCase {
    json spec;
    int64_t tokens = 5, d = 8, samples = 2;
    int64_t built_tokens = 0;  // the T the block is built for (the context); 0: tokens
};

}  // namespace

class TestTransformerBlock : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> be_ = make_cpu_backend();

    struct ScaledRun {
        std::vector<LayerScalingStats> stats;
        std::string label;  // the first statistic's GEMM label
    };
    // One forward and backward of the network under fp8-current (bf16-mixed storage) with
    // statistics; the output goes to `output`.
    ScaledRun run_scaled(const json& description, bool fp8_attention, std::vector<float>& output) {
        Network net = Network::from_json(description);
        net.build({6, 8}, 3);
        net.init(5);
        const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::Fp8Current);
        net.prepare_weights(policy);
        ScaledRecipeConfig recipe;
        recipe.recipe = ScaledRecipe::Fp8Current;
        recipe.fp8_attention = fp8_attention;
        net.prepare_recipe(recipe, 42);
        Tensor X({3, 6, 8});
        Rng rng(6);
        for (float& v : X.span()) v = rng.uniform(-1.0f, 1.0f);
        LayerContext ctx{*be_, policy.gemm_operands, true, nullptr};
        net.begin_quantized_step(1, true);
        const Tensor& Y = net.forward(ctx, X, policy);
        output.assign(Y.span().begin(), Y.span().end());
        Tensor dY(Y.shape());
        for (float& v : dY.span()) v = rng.uniform(-1e-3f, 1e-3f);
        net.backward(ctx, dY, policy, nullptr);
        ScaledRun run{net.scaling_stats(), {}};
        net.end_quantized_step();
        if (!run.stats.empty()) run.label = net.gemm_label(run.stats[0].layer, run.stats[0].gemm);
        return run;
    }

    void check_block(const BlockCase& bc) {
        const std::string name = bc.spec.dump();
        std::unique_ptr<Layer> layer = make_layer(bc.spec);
        auto* block = dynamic_cast<TransformerBlock*>(layer.get());
        QVERIFY(block);
        const TransformerBlockSettings s = block->settings();
        layer->build({bc.built_tokens ? bc.built_tokens : bc.tokens, bc.d});
        Rng rng(11);
        // Random gains and biases too (init sets them to 1 and 0), so their gradients are general.
        for (Parameter* p : layer->parameters())
            for (float& v : p->value.span())
                v = p->keeps_fp32 && p->name.ends_with(".weight") ? rng.uniform(0.6f, 1.4f)
                                                                  : rng.uniform(-0.4f, 0.4f);
        Tensor X({bc.samples, bc.tokens, bc.d}), Y, dX;
        for (float& v : X.span()) v = rng.uniform(-1.5f, 1.5f);

        const Rng dropout_state(2024);
        const DrawnMasks masks = draw_masks(dropout_state, s, bc.samples, bc.tokens, bc.d);
        const bool dropping = s.attention_dropout > 0 || s.residual_dropout > 0;
        ref::BlockMasks bm;
        if (dropping) bm = {&masks.attention, &masks.after_attention, &masks.after_mlp};
        Rng forward_rng = dropout_state;
        LayerContext ctx{*be_, Format::FP32, true, &forward_rng};
        layer->forward(ctx, X, Y);
        QCOMPARE(Y.shape(), X.shape());

        const ref::ReferenceBlock reference(s, bc.tokens, bc.d);
        std::vector<Parameter*> params = layer->parameters();
        std::vector<Vec> pv;
        for (Parameter* p : params) pv.push_back(dbl(p->value.data(), p->value.numel()));
        const Vec xd = dbl(X.data(), X.numel());
        const Vec yref = reference.forward(bc.samples, xd, pv, bm);
        double rms = 0;
        for (double v : yref) rms += v * v;
        rms = std::sqrt(rms / yref.size());
        for (size_t i = 0; i < yref.size(); ++i)
            QVERIFY2(
                std::fabs(Y[static_cast<int64_t>(i)] - yref[i]) <= kForwardTol * (std::fabs(yref[i]) + rms),
                qPrintable(QString("%1 forward element %2: %3 vs float64 %4")
                               .arg(QString::fromStdString(name))
                               .arg(i)
                               .arg(Y[static_cast<int64_t>(i)])
                               .arg(yref[i])));

        Rng r_rng(5);
        Tensor R(Y.shape());
        for (float& v : R.span()) v = r_rng.uniform(-1.0f, 1.0f);
        const Vec rd = dbl(R.data(), R.numel());
        for (Parameter* p : params) p->grad.fill(123.0f);  // backward must overwrite
        layer->backward(ctx, X, Y, R, &dX);
        QCOMPARE(dX.shape(), X.shape());
        auto loss = [&](const Vec& xv, const std::vector<Vec>& pvv) {
            return dot(reference.forward(bc.samples, xv, pvv, bm), rd);
        };
        std::vector<double> analytic, numeric;
        for (int64_t i : sample_indices(X.numel())) {
            Vec xp = xd, xm = xd;
            xp[i] += kStep;
            xm[i] -= kStep;
            numeric.push_back((loss(xp, pv) - loss(xm, pv)) / (2 * kStep));
            analytic.push_back(dX[i]);
        }
        QString problem = gradient_problem(name + " dx", analytic, numeric);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        for (size_t p = 0; p < params.size(); ++p) {
            analytic.clear();
            numeric.clear();
            for (int64_t j : sample_indices(params[p]->value.numel())) {
                auto pp = pv, pm = pv;
                pp[p][j] += kStep;
                pm[p][j] -= kStep;
                numeric.push_back((loss(xd, pp) - loss(xd, pm)) / (2 * kStep));
                analytic.push_back(params[p]->grad[j]);
            }
            problem = gradient_problem(name + " d" + params[p]->name, analytic, numeric);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
        }
    }

private slots:
    void gradients_data() {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("context");  // the T the block is built for; 0: tokens
        QTest::addRow("layernorm gelu bias") << R"({"type":"TransformerBlock","heads":2})" << 5 << 0;
        QTest::addRow("rmsnorm") << R"({"type":"TransformerBlock","heads":2,"rmsnorm":true})" << 5 << 0;
        QTest::addRow("qk_norm layernorm")
            << R"({"type":"TransformerBlock","heads":2,"qk_norm":true})" << 5 << 0;
        QTest::addRow("qk_norm rmsnorm")
            << R"({"type":"TransformerBlock","heads":4,"qk_norm":true,"rmsnorm":true})" << 5 << 0;
        QTest::addRow("swiglu") << R"({"type":"TransformerBlock","heads":2,"swiglu":true})" << 5 << 0;
        QTest::addRow("swiglu rmsnorm no bias")
            << R"({"type":"TransformerBlock","heads":2,"swiglu":true,"rmsnorm":true,"bias":false})" << 5 << 0;
        QTest::addRow("no bias ratio 2")
            << R"({"type":"TransformerBlock","heads":1,"bias":false,"mlp_ratio":2})" << 5 << 0;
        QTest::addRow("T = 1") << R"({"type":"TransformerBlock","heads":2,"qk_norm":true})" << 1 << 0;
        QTest::addRow("T = 9") << R"({"type":"TransformerBlock","heads":2,"eps":0.001})" << 9 << 0;
        QTest::addRow("dropout fixed masks")
            << R"({"type":"TransformerBlock","heads":2,"attn_dropout":0.25,"resid_dropout":0.3})" << 5 << 0;
        QTest::addRow("T = 3 < context 8")
            << R"({"type":"TransformerBlock","heads":2,"swiglu":true})" << 3 << 8;
        QTest::addRow("T = 1 < context 6")
            << R"({"type":"TransformerBlock","heads":2,"rmsnorm":true})" << 1 << 6;
    }
    void gradients() {
        QFETCH(QString, spec);
        QFETCH(int, tokens);
        QFETCH(int, context);
        BlockCase bc;
        bc.built_tokens = context;
        bc.spec = json::parse(spec.toStdString());
        bc.tokens = tokens;
        check_block(bc);
    }

    // Changing token t's input changes no output before t, and does change t's.
    void causal() {
        for (const char* spec : {R"({"type":"TransformerBlock","heads":2})",
                                 R"({"type":"TransformerBlock","heads":2,"qk_norm":true,"swiglu":true})"}) {
            const int64_t T = 7, d = 8;
            auto layer = make_layer(json::parse(spec));
            layer->build({T, d});
            Rng init(3);
            layer->init(init);
            Tensor X({1, T, d}), Y1, Y2;
            Rng rng(9);
            for (float& v : X.span()) v = rng.uniform(-1.0f, 1.0f);
            LayerContext ctx{*be_, Format::FP32, false, nullptr};
            layer->forward(ctx, X, Y1);
            const int64_t changed = 4;
            for (int64_t j = 0; j < d; ++j) X[changed * d + j] += 0.5f;
            layer->forward(ctx, X, Y2);
            for (int64_t i = 0; i < changed * d; ++i)
                QVERIFY2(Y1[i] == Y2[i], qPrintable(QString("%1: output %2 (token %3) changed with token %4")
                                                        .arg(spec)
                                                        .arg(i)
                                                        .arg(i / d)
                                                        .arg(changed)));
            QVERIFY(Y1[changed * d] != Y2[changed * d]);
        }
    }

    // Built for context 8, the block runs a 5-token sequence as the prefix of an 8-token one.
    void shorter_sequence_is_the_prefix() {
        auto layer = make_layer(json{{"type", "TransformerBlock"}, {"heads", 2}, {"qk_norm", true}});
        layer->build({8, 8});
        Rng init(3);
        layer->init(init);
        Tensor X8({2, 8, 8}), X5({2, 5, 8}), Y8, Y5;
        Rng rng(4);
        for (float& v : X8.span()) v = rng.uniform(-1.0f, 1.0f);
        for (int64_t s = 0; s < 2; ++s)
            for (int64_t i = 0; i < 5 * 8; ++i) X5[s * 40 + i] = X8[s * 64 + i];
        LayerContext ctx{*be_, Format::FP32, false, nullptr};
        layer->forward(ctx, X8, Y8);
        layer->forward(ctx, X5, Y5);
        QCOMPARE(Y5.shape(), X5.shape());
        for (int64_t s = 0; s < 2; ++s)
            for (int64_t i = 0; i < 5 * 8; ++i) QVERIFY(std::fabs(Y5[s * 40 + i] - Y8[s * 64 + i]) <= 1e-6f);
    }

    void shape_errors_name_the_field() {
        auto build_error = [](const json& net, const Shape& input) -> std::string {
            try {
                Network n = Network::from_json(net);
                n.build(input);
            } catch (const std::exception& e) {
                return e.what();
            }
            return {};
        };
        const std::string heads =
            build_error(json{{"layers", {{{"type", "TransformerBlock"}, {"heads", 3}}}}}, Shape{4, 8});
        QVERIFY2(heads.find("layer 0 (TransformerBlock)") != std::string::npos &&
                     heads.find("\"heads\"") != std::string::npos && heads.find("8") != std::string::npos,
                 heads.c_str());
        const std::string flat = build_error(json{{"layers", {{{"type", "TransformerBlock"}}}}}, Shape{8});
        QVERIFY2(flat.find("[T × d]") != std::string::npos, flat.c_str());
        const std::string zero =
            build_error(json{{"layers", {{{"type", "TransformerBlock"}, {"heads", 0}}}}}, Shape{4, 8});
        QVERIFY2(zero.find("\"heads\"") != std::string::npos, zero.c_str());
        const std::string drop = build_error(
            json{{"layers", {{{"type", "TransformerBlock"}, {"attn_dropout", 1.0}}}}}, Shape{4, 8});
        QVERIFY2(drop.find("\"attn_dropout\"") != std::string::npos, drop.c_str());
    }

    // Under fp8-current every projection of a block has its own quantizer and statistics under
    // its name; the attention products have none unless fp8_attention is on, and then their
    // operands are FP8 per tensor (E4M3, E5M2 for gradients under HYBRID) and the output moves.
    void named_gemms_in_scaling_stats() {
        for (const bool swiglu : {false, true}) {
            const json description{
                {"layers", {{{"type", "TransformerBlock"}, {"heads", 2}, {"swiglu", swiglu}}}}};
            const std::set<std::string> projections =
                swiglu ? std::set<std::string>{"attn.qkv", "attn.out", "mlp.gate", "mlp.up", "mlp.fc2"}
                       : std::set<std::string>{"attn.qkv", "attn.out", "mlp.fc1", "mlp.fc2"};
            std::vector<float> outputs[2];
            for (const bool fp8_attention : {false, true}) {
                const auto run = run_scaled(description, fp8_attention, outputs[fp8_attention]);
                std::set<std::string> named;
                for (const LayerScalingStats& s : run.stats) {
                    named.insert(s.gemm);
                    QCOMPARE(s.layer, size_t{0});
                    if (s.gemm == "attn.scores" && s.stats.operand == "x") {
                        QCOMPARE(s.stats.element, Format::E4M3);
                        QCOMPARE(s.stats.values, int64_t{3 * 2 * 6 * 4});  // samples · heads · T · head size
                    }
                    if (s.gemm == "attn.values" && s.stats.operand == "dy")
                        QCOMPARE(s.stats.element, Format::E5M2);
                }
                std::set<std::string> expected = projections;
                if (fp8_attention) expected.insert({"attn.scores", "attn.values"});
                QCOMPARE(named, expected);
                QCOMPARE(QString::fromStdString(run.label), QStringLiteral("0.attn.qkv"));
            }
            QVERIFY2(outputs[0] != outputs[1], "fp8_attention changes the attention's rounding");
        }
    }

    // A layer with one GEMM keeps its unnamed quantizer, seeded and labelled as before names.
    void single_gemm_layers_keep_one_unnamed_quantizer() {
        Network net =
            Network::from_json(json{{"layers", {{{"type", "Linear"}, {"out", 3}}, {{"type", "ReLU"}}}}});
        net.build({4});
        ScaledRecipeConfig recipe;
        recipe.recipe = ScaledRecipe::Fp8Current;
        recipe.fp8_attention = true;
        net.prepare_recipe(recipe, 1);
        QVERIFY(net.quantizers(0) != nullptr);
        QVERIFY(net.quantizers(0)->quantizes(GemmPass::Forward));
        QVERIFY(net.quantizers(1) == nullptr);
        QCOMPARE(net.gemms(0).size(), size_t{1});
        QCOMPARE(QString::fromStdString(net.gemm_label(0, net.gemms(0)[0].name)), QStringLiteral("0 Linear"));
        QCOMPARE(gemm_quantizer_key(5, 0), uint64_t{5});
    }

    // The block's stored values follow the storage format: BF16 storage moves the output.
    void storage_format_rounds_the_block() {
        auto layer = make_layer(json{{"type", "TransformerBlock"}, {"heads", 2}});
        layer->build({6, 8});
        Rng init(3);
        layer->init(init);
        Tensor X({2, 6, 8}), Y32, Y16;
        Rng rng(4);
        for (float& v : X.span()) v = rng.uniform(-1.0f, 1.0f);
        LayerContext ctx{*be_, Format::FP32, false, nullptr};
        layer->forward(ctx, X, Y32);
        ctx.storage = Format::BF16;
        layer->forward(ctx, X, Y16);
        QVERIFY(std::vector<float>(Y32.span().begin(), Y32.span().end()) !=
                std::vector<float>(Y16.span().begin(), Y16.span().end()));
        for (int64_t i = 0; i < Y32.numel(); ++i) QVERIFY(std::fabs(Y32[i] - Y16[i]) < 0.1f);
    }

    // Under bf16-mixed the projections read a BF16 weight copy and store BF16 gradients; the norm
    // gains and biases keep FP32 (no copy, FP32 gradients). The block's output, the residual
    // stream, is BF16 unless fp32_residual is set, and then FP32 values and FP32 input gradients.
    void precision_of_parameters_and_residual_stream() {
        for (const bool fp32_residual : {false, true}) {
            Network net = Network::from_json(json{{"layers",
                                                   {{{"type", "TransformerBlock"}, {"heads", 2}},
                                                    {{"type", "TransformerBlock"}, {"heads", 2}}}}});
            net.build({6, 8}, 2);
            net.init(9);
            PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::BF16Mixed);
            policy.fp32_residual = fp32_residual;
            net.prepare_weights(policy);
            Tensor X({2, 6, 8});
            Rng rng(2);
            for (float& v : X.span()) v = rng.uniform(-1.0f, 1.0f);
            LayerContext ctx{*be_, policy.gemm_operands, true, nullptr};
            const Tensor& Y = net.forward(ctx, X, policy);
            const int64_t inexact_outputs = count_inexact(Y.data(), Y.numel());
            QVERIFY2(fp32_residual ? inexact_outputs > 0 : inexact_outputs == 0,
                     qPrintable(QString("%1 outputs not BF16").arg(inexact_outputs)));
            Tensor dY(Y.shape());
            for (float& v : dY.span()) v = rng.uniform(-1.0f, 1.0f);
            net.backward(ctx, dY, policy, nullptr);
            for (Parameter* p : net.layer(0).parameters()) {
                const QString what = QString::fromStdString(p->name);
                QCOMPARE(p->compute.empty(), p->keeps_fp32);
                if (p->keeps_fp32)
                    QVERIFY2(count_inexact(p->grad.data(), p->grad.numel()) > 0, qPrintable(what));
                else
                    QVERIFY2(count_inexact(p->grad.data(), p->grad.numel()) == 0, qPrintable(what));
            }
            QVERIFY(net.layer(0).parameters().front()->keeps_fp32);  // ln1.weight
        }
    }

    // A checkpoint keeps each quantizer's GEMM: GEMM 0 is written as the bare layer index, as
    // before GEMMs had names, so older checkpoints read back as each layer's GEMM 0.
    void checkpoint_keeps_the_gemm_of_each_quantizer() {
        CheckpointState state;
        state.config = json::object();
        state.network = json::object();
        state.scaler = json::object();
        state.quantizers.push_back({3, 0, 0, {}});
        state.quantizers.push_back({3, 5, 2, {}});
        state.quantizers[1].state.histories[0] = {1.5f, 2.5f};
        const CheckpointState back = decode_checkpoint_state(encode_checkpoint_state(state));
        QCOMPARE(back.quantizers.size(), size_t{2});
        QCOMPARE(back.quantizers[0].layer, uint64_t{3});
        QCOMPARE(back.quantizers[0].gemm, uint64_t{0});
        QCOMPARE(back.quantizers[1].layer, uint64_t{3});
        QCOMPARE(back.quantizers[1].gemm, uint64_t{5});
        QCOMPARE(back.quantizers[0].slot, uint64_t{0});
        QCOMPARE(back.quantizers[1].slot, uint64_t{2});
        QCOMPARE(back.quantizers[1].state.histories[0], (std::vector<float>{1.5f, 2.5f}));
    }

    // The JSON a block writes reads back to the same block.
    void json_round_trip() {
        const json spec = json::parse(
            R"({"type":"TransformerBlock","heads":2,"rmsnorm":true,"qk_norm":true,"swiglu":true,"mlp_ratio":3,)"
            R"("attn_dropout":0.125,"resid_dropout":0.25,"bias":false,"eps":0.0001})");
        auto layer = make_layer(spec);
        QCOMPARE(QString::fromStdString(layer->to_json().dump()),
                 QString::fromStdString(make_layer(layer->to_json())->to_json().dump()));
        QCOMPARE(layer->to_json()["mlp_ratio"].get<int>(), 3);
        QCOMPARE(layer->to_json()["rmsnorm"].get<bool>(), true);
    }
};

QTEST_GUILESS_MAIN(TestTransformerBlock)
#include "test_transformer_block.moc"
