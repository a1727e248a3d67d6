// What the mixed-precision policies store (issue 3's acceptance test). Under fp16-mixed every
// value a Linear layer stores — its output, its weight copy, its weight and bias gradients and
// the activation gradient it hands back — is exactly an FP16 value and within 1 FP16 ulp of the
// float64 result of the same operation on the rounded operands (the GEMM multiplies FP16 values
// exactly and accumulates in FP32, then rounds once). Every activation of a network with every
// kind of layer is stored in the policy's format (FP16, BF16), while the FP32 master weights and
// BatchNorm's parameters stay FP32.
#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <map>

#include "core/backend/backend.h"
#include "core/common/rng.h"
#include "core/nn/network.h"
#include "core/numeric/format.h"
#include "core/precision/precision_policy.h"

using namespace mpwb;
using nlohmann::json;

namespace {

bool representable(float v, Format f) {
    const float r = round_to_format(v, f);
    return std::memcmp(&r, &v, sizeof(float)) == 0;
}

// The FP16 ulp at the magnitude of x (subnormal spacing 2^-24 below 2^-14).
double fp16_ulp(double x) {
    const double a = std::fabs(x);
    if (a < 0x1.0p-14) return 0x1.0p-24;
    return std::ldexp(1.0, std::ilogb(a) - 10);
}

#define EXPECT_FP16_WITHIN_ULP(what, got, expected)                                                         \
    do {                                                                                                    \
        const float g_ = (got);                                                                             \
        const double e_ = (expected);                                                                       \
        QVERIFY2(representable(g_, Format::FP16),                                                           \
                 qPrintable(QString("%1: %2 is not an FP16 value").arg(what).arg(double(g_), 0, 'g', 12))); \
        QVERIFY2(std::fabs(g_ - e_) <= fp16_ulp(e_),                                                        \
                 qPrintable(QString("%1: stored %2, float64 %3: more than 1 FP16 ulp apart")                \
                                .arg(what)                                                                  \
                                .arg(double(g_), 0, 'g', 12)                                                \
                                .arg(e_, 0, 'g', 12)));                                                     \
    } while (0)

// Records the activation gradients the network hands to layer `layer` before it rounds them.
class Probe final : public GradientProbe {
public:
    void observe(size_t layer, GradientKind kind, const std::string&, const float* values,
                 int64_t count) override {
        if (kind == GradientKind::Activation) activation_grads[layer].assign(values, values + count);
    }
    // Network::backward hands over values, never counts.
    void observe_histogram(size_t, GradientKind, const std::string&, const ExponentHistogram&) override {
        QFAIL("Network::backward handed over a histogram instead of values");
    }
    std::map<size_t, std::vector<float>> activation_grads;
};

std::vector<float> fp16(const float* p, int64_t n) {
    std::vector<float> r(static_cast<size_t>(n));
    round_to_format(Format::FP16, p, r.data(), r.size());
    return r;
}

}  // namespace

class TestMixedPrecisionStorage : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> be_ = make_cpu_backend();

private slots:
    // Issue 3: a small Linear network under fp16-mixed, every stored value checked.
    void linearStoresFp16WithinOneUlp() {
        const int64_t batch = 6, in = 20, hidden = 12, out = 5;
        const json d = {
            {"layers", {{{"type", "Linear"}, {"out", hidden}}, {{"type", "Linear"}, {"out", out}}}}};
        const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::FP16Mixed);
        Network net = Network::from_json(d);
        net.build({in});
        net.init(9);
        net.prepare_weights(policy);
        // The one-layer prefix with the same seed has the same first layer: its output is what
        // the two-layer network stores between the layers.
        Network first = Network::from_json(json{{"layers", {d["layers"][0]}}});
        first.build({in});
        first.init(9);
        first.prepare_weights(policy);

        Rng rng(4);
        Tensor x({batch, in});
        for (float& v : x.span()) v = rng.uniform(-3.0f, 3.0f);  // not FP16 values: the input is rounded
        const auto x16 = fp16(x.data(), x.numel());

        // Weight copies: FP16 of the FP32 masters, which stay FP32 (not all FP16 values).
        const auto params = net.parameters();
        QCOMPARE(params.size(), size_t{4});
        bool some_master_not_fp16 = false;
        for (Parameter* p : params) {
            QCOMPARE(p->compute.numel(), p->value.numel());
            for (int64_t i = 0; i < p->value.numel(); ++i) {
                const float e = round_to_format(p->value[i], Format::FP16);
                QVERIFY(std::memcmp(&e, &p->compute[i], sizeof(float)) == 0);
                some_master_not_fp16 |= !representable(p->value[i], Format::FP16);
            }
        }
        QVERIFY2(some_master_not_fp16, "masters must stay FP32");
        const auto& w0 = params[0]->compute;
        const auto& b0 = params[1]->compute;
        const auto& w1 = params[2]->compute;
        const auto& b1 = params[3]->compute;

        LayerContext ctx{*be_, policy.gemm_operands, true, nullptr};
        // Hidden activation: round16(x16 W0^T + b0).
        const Tensor h = first.forward(ctx, x, policy);
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t j = 0; j < hidden; ++j) {
                double s = b0[j];
                for (int64_t i = 0; i < in; ++i) s += double(x16[n * in + i]) * w0[j * in + i];
                EXPECT_FP16_WITHIN_ULP(QString("hidden[%1,%2]").arg(n).arg(j), h[n * hidden + j], s);
            }
        const Tensor y = net.forward(ctx, x, policy);
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t j = 0; j < out; ++j) {
                double s = b1[j];
                for (int64_t i = 0; i < hidden; ++i) s += double(h[n * hidden + i]) * w1[j * hidden + i];
                EXPECT_FP16_WITHIN_ULP(QString("output[%1,%2]").arg(n).arg(j), y[n * out + j], s);
            }

        // Backward from a scaled cross-entropy gradient; the network stores it in FP16 first.
        Tensor labels({batch}), dout(y.shape());
        for (int64_t n = 0; n < batch; ++n) labels[n] = static_cast<float>(n % out);
        be_->softmax_cross_entropy(y.data(), labels.data(), dout.data(), batch, out, 1024.0f);
        const auto dy16 = fp16(dout.data(), dout.numel());
        Probe probe;
        net.backward(ctx, dout, policy, &probe);

        // Layer 1: weight gradient dy16^T h, bias gradient sum of dy16 rows.
        for (int64_t j = 0; j < out; ++j) {
            double sb = 0;
            for (int64_t n = 0; n < batch; ++n) sb += dy16[n * out + j];
            EXPECT_FP16_WITHIN_ULP(QString("layer 1 bias grad[%1]").arg(j), params[3]->grad[j], sb);
            for (int64_t i = 0; i < hidden; ++i) {
                double s = 0;
                for (int64_t n = 0; n < batch; ++n) s += double(dy16[n * out + j]) * h[n * hidden + i];
                EXPECT_FP16_WITHIN_ULP(QString("layer 1 weight grad[%1,%2]").arg(j).arg(i),
                                       params[2]->grad[j * hidden + i], s);
            }
        }
        // The activation gradient handed to layer 0, before storage: dy16 W1 in FP32.
        QVERIFY(probe.activation_grads.count(0));
        const auto& dh = probe.activation_grads[0];
        QCOMPARE(dh.size(), size_t(batch * hidden));
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t i = 0; i < hidden; ++i) {
                double s = 0, mag = 0;
                for (int64_t j = 0; j < out; ++j) {
                    s += double(dy16[n * out + j]) * w1[j * hidden + i];
                    mag += std::fabs(double(dy16[n * out + j]) * w1[j * hidden + i]);
                }
                QVERIFY(std::fabs(dh[n * hidden + i] - s) <= out * 0x1.0p-23 * mag);
            }
        // Stored in FP16: layer 0's gradients are those of the FP16 activation gradient.
        const auto dh16 = fp16(dh.data(), static_cast<int64_t>(dh.size()));
        bool rounding_mattered = false;
        for (size_t i = 0; i < dh.size(); ++i) rounding_mattered |= dh16[i] != dh[i];
        QVERIFY2(rounding_mattered, "the activation gradient should need rounding to FP16 in this case");
        for (int64_t j = 0; j < hidden; ++j) {
            double sb = 0;
            for (int64_t n = 0; n < batch; ++n) sb += dh16[n * hidden + j];
            EXPECT_FP16_WITHIN_ULP(QString("layer 0 bias grad[%1]").arg(j), params[1]->grad[j], sb);
            for (int64_t i = 0; i < in; ++i) {
                double s = 0;
                for (int64_t n = 0; n < batch; ++n) s += double(dh16[n * hidden + j]) * x16[n * in + i];
                EXPECT_FP16_WITHIN_ULP(QString("layer 0 weight grad[%1,%2]").arg(j).arg(i),
                                       params[0]->grad[j * in + i], s);
            }
        }
    }

    // Every layer's output, for a network with every kind of layer, is stored in the policy's
    // format; checked on each prefix of the network (same seed => same weights).
    void everyActivationInStorageFormat_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("format");
        QTest::newRow("fp16-mixed") << int(PrecisionKind::FP16Mixed) << int(Format::FP16);
        QTest::newRow("bf16-mixed") << int(PrecisionKind::BF16Mixed) << int(Format::BF16);
        QTest::newRow("fp16-pure") << int(PrecisionKind::FP16Pure) << int(Format::FP16);
    }

    void everyActivationInStorageFormat() {
        QFETCH(int, kind);
        QFETCH(int, format);
        const auto policy = PrecisionPolicy::make(static_cast<PrecisionKind>(kind));
        const Format f = static_cast<Format>(format);
        const json layers = {
            {{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 3}, {"padding", 1}},
            {{"type", "BatchNorm"}},
            {{"type", "ReLU"}},
            {{"type", "MaxPool2d"}, {"kernel", 2}},
            {{"type", "Conv2d"}, {"out_channels", 3}, {"kernel", 3}, {"stride", 2}, {"padding", 1}},
            {{"type", "AvgPool2d"}, {"kernel", 2}, {"stride", 1}},
            {{"type", "Flatten"}},
            {{"type", "Dropout"}, {"p", 0.25}},
            {{"type", "Linear"}, {"out", 16}},
            {{"type", "BatchNorm"}},
            {{"type", "GELU"}},
            {{"type", "LeakyReLU"}},
            {{"type", "Tanh"}},
            {{"type", "Sigmoid"}},
            {{"type", "Linear"}, {"out", 3}}};
        Rng data_rng(8);
        Tensor x({5, 2, 10, 10});
        for (float& v : x.span()) v = data_rng.normal(0.0f, 3.0f);
        for (size_t len = 1; len <= layers.size(); ++len) {
            json prefix = json::array();
            for (size_t i = 0; i < len; ++i) prefix.push_back(layers[i]);
            Network net = Network::from_json(json{{"layers", prefix}});
            net.build({2, 10, 10});
            net.init(21);
            net.prepare_weights(policy);
            Rng dropout(5);
            LayerContext ctx{*be_, policy.gemm_operands, true, &dropout};
            const Tensor& y = net.forward(ctx, x, policy);
            int64_t bad = 0;
            for (int64_t i = 0; i < y.numel(); ++i) bad += !representable(y[i], f);
            QVERIFY2(bad == 0, qPrintable(QString("%1 of %2 outputs of layer %3 (%4) are not %5 values")
                                              .arg(bad)
                                              .arg(y.numel())
                                              .arg(len - 1)
                                              .arg(QString::fromStdString(net.layer(len - 1).kind()))
                                              .arg(QString::fromStdString(format_name(f)))));
            if (len < layers.size()) continue;
            // The full network: gradients of GEMM/conv layers are stored in the format; the
            // normalisation parameters keep FP32 (or the master format under fp16-pure).
            Tensor dout(y.shape());
            for (float& v : dout.span()) v = data_rng.uniform(-1.0f, 1.0f) * 0.01f;
            net.backward(ctx, dout, policy, nullptr);
            for (size_t i = 0; i < net.size(); ++i)
                for (Parameter* p : net.layer(i).parameters()) {
                    const Format stored =
                        net.layer(i).runs_in_reduced_precision() ? policy.weight_grads : policy.master;
                    for (int64_t j = 0; j < p->grad.numel(); ++j)
                        QVERIFY2(representable(p->grad[j], stored),
                                 qPrintable(QString::fromStdString(net.layer_label(i) + " " + p->name)));
                    if (policy.master == Format::FP32 && net.layer(i).runs_in_reduced_precision())
                        QCOMPARE(p->compute.numel(), p->value.numel());
                    if (!net.layer(i).runs_in_reduced_precision()) QVERIFY(p->compute.empty());
                }
        }
    }
};

QTEST_APPLESS_MAIN(TestMixedPrecisionStorage)
#include "test_mixed_precision_storage.moc"
