// The host side of the CUDA engine's gradient statistics (core/engine/cuda/device_gradient_stats),
// with no GPU: the histograms a statistics step takes are exactly the ones Network::backward
// hands a probe, in its order and with its names (for networks with every device op and with
// untrained layers at the bottom), and the device's counters become the CPU's ExponentHistogram
// field for field, when filled by the kernel's own per-element rules run on the host.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cuda/element_math.h"
#include "core/common/rng.h"
#include "core/engine/cuda/device_gradient_stats.h"
#include "core/tensor/tensor.h"

using namespace mpwb;
using namespace mpwb::cuda;

namespace {

struct Observed {
    size_t layer;
    GradientKind kind;
    std::string parameter;
};

// What Network::backward hands a probe, in order.
class RecordingProbe final : public GradientProbe {
public:
    void observe(size_t layer, GradientKind kind, const std::string& parameter, const float*,
                 int64_t) override {
        seen.push_back({layer, kind, parameter});
    }
    void observe_histogram(size_t, GradientKind, const std::string&, const ExponentHistogram&) override {
        QFAIL("Network::backward handed over counts");
    }
    std::vector<Observed> seen;
};

std::vector<Observed> backward_order(Network& net, const Shape& input, int64_t batch) {
    std::unique_ptr<Backend> backend = make_cpu_backend();
    const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::FP32);
    Rng dropout(7);
    LayerContext ctx{*backend, policy.gemm_operands, true, &dropout};
    Shape batched = input;
    batched.insert(batched.begin(), batch);
    Tensor x(batched);
    Rng rng(5);
    for (float& v : x.span()) v = rng.normal();
    const Tensor& y = net.forward(ctx, x, policy);
    Tensor dy(y.shape());
    for (float& v : dy.span()) v = rng.normal();
    RecordingProbe probe;
    net.backward(ctx, dy, policy, &probe);
    return probe.seen;
}

Network built(const nlohmann::json& layers, const Shape& input, int64_t batch) {
    Network net = Network::from_json({{"layers", layers}});
    net.build(input, batch, 10);
    net.init(1);
    return net;
}

}  // namespace

class TestDeviceGradientStats : public QObject {
    Q_OBJECT

    void check_order(const nlohmann::json& layers, const Shape& input) {
        Network net = built(layers, input, 4);
        const std::vector<Observed> expected = backward_order(net, input, 4);
        const std::vector<GradientStatsTarget> targets = gradient_stats_targets(net);
        QCOMPARE(targets.size(), expected.size());
        const auto params = net.parameters();
        for (size_t t = 0; t < targets.size(); ++t) {
            QCOMPARE(targets[t].layer, expected[t].layer);
            QCOMPARE(int(targets[t].kind), int(expected[t].kind));
            QCOMPARE(targets[t].parameter, expected[t].parameter);
            if (targets[t].kind == GradientKind::Weight) {
                QCOMPARE(net.parameter_owner(targets[t].parameter_index), net.layer_label(targets[t].layer));
                QCOMPARE(params.at(targets[t].parameter_index)->name, targets[t].parameter);
            }
        }
    }

private slots:
    void targets_follow_backward_for_an_mlp() {
        check_order({{{"type", "Linear"}, {"out", 8}},
                     {{"type", "ReLU"}},
                     {{"type", "Dropout"}, {"p", 0.25}},
                     {{"type", "Linear"}, {"out", 10}}},
                    {6});
    }

    void targets_follow_backward_for_a_cnn_with_untrained_bottom_layers() {
        // Flatten and pooling under the first trained layer write no input gradient.
        check_order({{{"type", "MaxPool2d"}, {"kernel", 2}},
                     {{"type", "Conv2d"}, {"out_channels", 3}, {"kernel", 3}, {"padding", 1}},
                     {{"type", "BatchNorm"}},
                     {{"type", "ReLU"}},
                     {{"type", "Flatten"}},
                     {{"type", "Linear"}, {"out", 10}}},
                    {1, 8, 8});
    }

    void device_counts_become_the_cpu_histogram() {
        Rng rng(3);
        std::vector<float> x;
        for (int i = 0; i < 200'000; ++i)
            x.push_back(rng.normal() * std::ldexp(1.0f, int(rng.below(80)) - 60));
        for (float v : {0.0f, -0.0f, 1e-45f, 65504.0f, 65520.0f, 448.0f, 500.0f, 3e38f, INFINITY, NAN})
            x.push_back(v);
        // The kernel's rules, element by element, as the device applies them.
        DeviceHistogram counts{};
        for (float v : x) {
            const int slot = histogram_slot(v);
            if (slot < kHistogramBinCount)
                ++counts.bins[slot];
            else if (slot == kHistogramZeroSlot)
                ++counts.zeros;
            else
                ++counts.non_finite;
            for (int f = 0; f < int(kFormatCount); ++f)
                counts.above_max[f] += histogram_above_max(v, f) ? 1 : 0;
            counts.max_abs_bits = std::max(counts.max_abs_bits, histogram_max_abs_bits(v));
        }
        const ExponentHistogram got = exponent_histogram_from(counts);
        const ExponentHistogram ref = ExponentHistogram::compute(x.data(), x.size());
        QVERIFY(got.bins == ref.bins);
        QCOMPARE(got.zeros, ref.zeros);
        QCOMPARE(got.non_finite, ref.non_finite);
        QVERIFY(got.above_max == ref.above_max);
        QCOMPARE(got.max_abs, ref.max_abs);
        QVERIFY(ref.above_max[size_t(Format::FP16)] > 0);
    }
};

QTEST_GUILESS_MAIN(TestDeviceGradientStats)
#include "test_device_gradient_stats.moc"
