// The instability indicators (core/nn/stability_indicators.h): a tiny transformer block's (2
// heads, T = 4) against a float64 reference computed from the same input and weights
// (tests/nn/reference_block.h), the residual outlier ratio and the output's log Z against hand
// values, and the Trainer's delivery: indicators on the statistics steps only (the first, then
// every stats_every), none at all with statistics off or without a transformer block.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "core/backend/backend.h"
#include "core/common/rng.h"
#include "core/data/text_corpus.h"
#include "core/nn/network.h"
#include "core/nn/stability_indicators.h"
#include "core/train/trainer.h"
#include "tests/nn/reference_block.h"

using namespace mpwb;
using ref::Vec;

namespace {

constexpr double kTolerance = 2e-5;  // FP32 forward against float64, relative to the value's scale

bool close(double got, double want, double scale = 1.0) {
    return std::fabs(got - want) <= kTolerance * std::max({1.0, std::fabs(want), scale});
}

// The residual indicators of [rows, channels] in float64, written from their definition.
std::pair<double, double> reference_residual(const Vec& y, int64_t rows, int64_t channels) {
    std::vector<double> channel_rms(static_cast<size_t>(channels), 0.0);
    double total = 0;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < channels; ++c) {
            const double v = y[static_cast<size_t>(r * channels + c)];
            channel_rms[static_cast<size_t>(c)] += v * v / static_cast<double>(rows);
            total += v * v;
        }
    for (double& v : channel_rms) v = std::sqrt(v);
    std::sort(channel_rms.begin(), channel_rms.end());
    const size_t n = channel_rms.size();
    const double median = n % 2 ? channel_rms[n / 2] : (channel_rms[n / 2 - 1] + channel_rms[n / 2]) / 2;
    return {std::sqrt(total / static_cast<double>(rows * channels)), channel_rms.back() / median};
}

// Counts what the trainer hands its observers.
struct StabilityCounter : TrainingObserver {
    std::vector<StabilityRecord> records;
    void on_stability(const StabilityRecord& r) override { records.push_back(r); }
};

const Dataset& letters() {
    static const Dataset d = [] {
        std::string text;
        for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + (i * i + i / 3) % 7);
        return make_text_corpus(text, {TokenizerKind::Char, 8, 0.2}, "test text", "letters").data;
    }();
    return d;
}

nlohmann::json tiny_gpt(int blocks) {
    nlohmann::json layers = nlohmann::json::array();
    layers.push_back({{"type", "Embedding"}, {"d_model", 8}, {"context", 8}});
    for (int b = 0; b < blocks; ++b) layers.push_back({{"type", "TransformerBlock"}, {"heads", 2}});
    layers.push_back({{"type", "LayerNorm"}});
    layers.push_back({{"type", "Linear"}, {"out", 0}});
    return {{"name", "gpt"}, {"loss", "token_cross_entropy"}, {"layers", layers}};
}

std::vector<StabilityRecord> train(const nlohmann::json& network, const Dataset& data, int64_t steps,
                                   int64_t stats_every) {
    auto backend = make_cpu_backend();
    Network net = Network::from_json(network);
    TrainConfig c;
    c.max_steps = steps;
    c.batch_size = 4;
    c.lr = 0.01f;
    c.threads = 1;
    c.eval_batch = 16;
    c.stats_every = stats_every;
    StabilityCounter counter;
    Trainer trainer(net, data, c, *backend);
    trainer.add_observer(&counter);
    const RunSummary s = trainer.run();
    if (s.status != RunStatus::Finished) qWarning("run ended: %s", s.error.c_str());
    return counter.records;
}

}  // namespace

class TestStabilityIndicators : public QObject {
    Q_OBJECT
    std::unique_ptr<Backend> be_ = make_cpu_backend();

private slots:
    // 2 heads, T = 4, d = 8, 3 samples, random weights: every block indicator against float64.
    void block_matches_float64_reference() {
        const int64_t samples = 3, T = 4, d = 8;
        std::unique_ptr<Layer> layer = make_layer({{"type", "TransformerBlock"}, {"heads", 2}});
        auto* block = dynamic_cast<TransformerBlock*>(layer.get());
        QVERIFY(block);
        layer->build({T, d});
        Rng rng(5);
        for (Parameter* p : layer->parameters())
            for (float& v : p->value.span())
                v = p->keeps_fp32 && p->name.ends_with(".weight") ? rng.uniform(0.6f, 1.4f)
                                                                  : rng.uniform(-0.9f, 0.9f);
        Tensor X({samples, T, d}), Y;
        for (float& v : X.span()) v = rng.uniform(-1.5f, 1.5f);
        X.data()[3] = 6.0f;  // one large channel value, so the outlier ratio is well away from 1

        StabilitySink sink;
        LayerContext ctx{*be_, Format::FP32, true, nullptr};
        ctx.stability = &sink;
        layer->forward(ctx, X, Y);
        QCOMPARE(sink.blocks.size(), size_t{1});
        QCOMPARE(sink.blocks[0].first, static_cast<const Layer*>(layer.get()));
        const BlockStability& got = sink.blocks[0].second;

        std::vector<Vec> params;
        for (Parameter* p : layer->parameters())
            params.emplace_back(p->value.data(), p->value.data() + p->value.numel());
        ref::AttentionTrace trace;
        const Vec x(X.data(), X.data() + X.numel());
        const Vec y = ref::ReferenceBlock(block->settings(), T, d).forward(samples, x, params, {}, &trace);
        const auto [rms, ratio] = reference_residual(y, samples * T, d);
        double entropy_mean = 0, entropy_min = INFINITY;
        for (double sum : trace.head_entropy_sum) {
            const double head = sum / static_cast<double>(samples * T);
            entropy_mean += head / 2;
            entropy_min = std::min(entropy_min, head);
        }
        QVERIFY2(entropy_min < entropy_mean, "the two heads should differ, or min = mean proves little");
        QVERIFY2(close(got.attn_logit_max, trace.logit_max),
                 qPrintable(QString("logit max %1 vs %2").arg(got.attn_logit_max).arg(trace.logit_max)));
        QVERIFY2(close(got.attn_entropy_mean, entropy_mean),
                 qPrintable(QString("entropy mean %1 vs %2").arg(got.attn_entropy_mean).arg(entropy_mean)));
        QVERIFY2(close(got.attn_entropy_min, entropy_min),
                 qPrintable(QString("entropy min %1 vs %2").arg(got.attn_entropy_min).arg(entropy_min)));
        QVERIFY2(close(got.residual_rms, rms),
                 qPrintable(QString("rms %1 vs %2").arg(got.residual_rms).arg(rms)));
        QVERIFY2(close(got.outlier_ratio, ratio),
                 qPrintable(QString("outlier ratio %1 vs %2").arg(got.outlier_ratio).arg(ratio)));
        QVERIFY(ratio > 1.5);

        // Without a sink the block computes nothing and its output is the same, bit for bit.
        Tensor Y2;
        LayerContext plain{*be_, Format::FP32, true, nullptr};
        layer->forward(plain, X, Y2);
        QVERIFY(std::equal(Y.span().begin(), Y.span().end(), Y2.span().begin()));
    }

    // Rows [0, ln 3] and [2, 2, 2, 2]: log Z = ln 4 and 2 + ln 4; the largest logit 2.
    void output_log_z() {
        const float logits[] = {0.0f, std::log(3.0f), -INFINITY, -INFINITY, 2, 2, 2, 2};
        const OutputStability o = output_stability(logits, 2, 4);
        QCOMPARE(o.logit_max, 2.0);
        QVERIFY(std::fabs(o.log_z_mean - (std::log(4.0) + 2 + std::log(4.0)) / 2) < 1e-6);
    }

    // Channel RMS 1, 2, 3, 10 over two rows: median (2 + 3) / 2, ratio 4; odd widths take the middle.
    void residual_median_and_ratio() {
        const float even[] = {1, 2, 3, 10, -1, -2, -3, -10};
        const ResidualStability e = residual_stability(even, 2, 4);
        QCOMPARE(e.outlier_ratio, 4.0);
        QCOMPARE(e.rms, std::sqrt((1.0 + 4 + 9 + 100) / 4));
        const float odd[] = {1, 5, 2};
        QCOMPARE(residual_stability(odd, 1, 3).outlier_ratio, 2.5);
        const float zeros[] = {0, 0, 4};
        QCOMPARE(residual_stability(zeros, 1, 3).outlier_ratio, 0.0);  // median 0: no ratio
    }

    // Statistics every 2 over 5 steps: steps 1, 2 and 4 carry one entry per block (layers 1 and 2)
    // and the output's; nothing on the other steps, nothing with statistics off.
    void delivered_on_statistics_steps_only() {
        const auto records = train(tiny_gpt(2), letters(), 5, 2);
        std::vector<int64_t> steps;
        for (const auto& r : records) steps.push_back(r.step);
        QCOMPARE(steps, (std::vector<int64_t>{1, 2, 4}));
        for (const auto& r : records) {
            QCOMPARE(r.indicators.blocks.size(), size_t{2});
            QCOMPARE(r.indicators.blocks[0].layer, size_t{1});
            QCOMPARE(r.indicators.blocks[1].layer, size_t{2});
            QCOMPARE(r.block_labels, (std::vector<std::string>{"1 TransformerBlock", "2 TransformerBlock"}));
            QVERIFY(r.indicators.has_output);
            // A character model of 7 letters starts near uniform: log Z ≈ log 7 + the mean logit.
            QVERIFY(std::isfinite(r.indicators.output.log_z_mean));
            QVERIFY(r.indicators.output.logit_max <= r.indicators.output.log_z_mean + 20);
            for (const auto& b : r.indicators.blocks) {
                QVERIFY(b.attn_entropy_min <= b.attn_entropy_mean);
                QVERIFY(b.attn_entropy_mean > 0 && b.attn_entropy_mean <= std::log(8.0));
                QVERIFY(b.residual_rms > 0 && b.outlier_ratio >= 1);
            }
        }
        QVERIFY(train(tiny_gpt(1), letters(), 3, 0).empty());
        QVERIFY(train(tiny_gpt(0), letters(), 2, 1).empty());  // no block: no indicators at all
    }
};

QTEST_APPLESS_MAIN(TestStabilityIndicators)
#include "test_stability_indicators.moc"
