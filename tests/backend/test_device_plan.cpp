// The CUDA step's layer plan (core/engine/cuda/device_plan.h) on the host, with no GPU and no
// CUDA toolkit: every registered kind is planned as the op it says it runs as, with its shapes,
// the ReLU after a Linear with a bias folds into it, and a network holding a kind with no device
// op is refused with one line naming the layer by index and kind (the Trainer then trains it on
// the host engine).
#include <QtTest/QtTest>

#include "core/engine/cuda/device_plan.h"
#include "core/common/error.h"
#include "core/nn/linear.h"
#include "tests/common/test_support.h"
#include "tests/nn/host_only_layer.h"

using mpwb::test::error_text;
using mpwb::test::HostOnlyLayer;
using namespace mpwb;
using namespace mpwb::cuda;
using nlohmann::json;

namespace {

// A network of one layer, built on an image input, or on features where it takes no image.
// The layer alone on the first input it takes: an image, features (token ids, for an Embedding)
// or a sequence [T, d]; 10 classes for the settings that take the dataset's (a vocabulary).
Network built_alone(const json& spec) {
    for (const Shape& input : {Shape{3, 8, 8}, Shape{16}, Shape{8, 16}}) {
        try {
            Network net = Network::from_json({{"layers", json::array({spec})}});
            net.build(input, 1, 10);
            return net;
        } catch (const NetworkError&) {}
    }
    throw NetworkError(spec.dump() + " takes neither an image, features nor a sequence");
}

std::vector<PlannedLayer> plan(const json& layers, const Shape& input) {
    Network net = Network::from_json({{"layers", layers}});
    net.build(input);
    return plan_device_layers(net);
}

}  // namespace

class TestDevicePlan : public QObject {
    Q_OBJECT

private slots:
    void eachLayerIsPlannedAsTheOpItSays() {
        const auto layers = plan(json::array({{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 3}},
                                              {{"type", "MaxPool2d"}, {"kernel", 2}},
                                              {{"type", "BatchNorm"}, {"momentum", 0.2}},
                                              {{"type", "Flatten"}},
                                              {{"type", "Dropout"}, {"p", 0.25}},
                                              {{"type", "Linear"}, {"out", 5}},
                                              {{"type", "LeakyReLU"}, {"slope", 0.1}}}),
                                 {2, 8, 8});
        QCOMPARE(layers.size(), size_t{7});
        const auto& conv = std::get<Conv2dOp>(layers[0].op).geometry;
        QCOMPARE(conv.in_channels, int64_t{2});
        QCOMPARE(conv.out_channels, int64_t{4});
        QCOMPARE(conv.out_h(), int64_t{6});
        QVERIFY(layers[0].reduced);
        QVERIFY(std::get<PoolOp>(layers[1].op).mode == PoolOp::Mode::Max);
        QCOMPARE(std::get<PoolOp>(layers[1].op).geometry.in_h, int64_t{6});
        QCOMPARE(std::get<BatchNormOp>(layers[2].op).momentum, 0.2f);
        QVERIFY(!layers[2].reduced);
        QVERIFY(std::holds_alternative<ReshapeOp>(layers[3].op));
        QCOMPARE(layers[3].in_shape, (Shape{4, 3, 3}));
        QCOMPARE(layers[3].out_features, int64_t{36});
        QCOMPARE(std::get<DropoutOp>(layers[4].op).p, 0.25f);
        QVERIFY(std::get<LinearOp>(layers[5].op).bias);
        QCOMPARE(layers[5].in_features, int64_t{36});
        QCOMPARE(layers[5].out_features, int64_t{5});
        QCOMPARE(layers[5].label, std::string("5 Linear"));
        const auto& leaky = std::get<ActivationOp>(layers[6].op);
        QVERIFY(leaky.activation == Activation::LeakyReLU);
        QCOMPARE(leaky.slope, 0.1f);
        QVERIFY(!layers[5].fused_relu && !layers[6].folded);  // only ReLU folds
    }

    // The ReLU straight after a Linear with a bias runs in its epilogue; after one without a bias,
    // or after anything else, it runs on its own.
    void reluFoldsIntoTheLinearBeforeIt() {
        const auto layers = plan(json::array({{{"type", "Linear"}, {"out", 8}},
                                              {{"type", "ReLU"}},
                                              {{"type", "Linear"}, {"out", 8}, {"bias", false}},
                                              {{"type", "ReLU"}},
                                              {{"type", "ReLU"}}}),
                                 {4});
        QVERIFY(layers[0].fused_relu && layers[1].folded);
        QVERIFY(!layers[2].fused_relu && !layers[3].folded);
        QVERIFY(!layers[4].folded);
    }

    // Every registered kind alone in a network: planned as its own op, or refused in one line.
    void everyRegisteredKindIsPlannedOrRefused() {
        for (const LayerKind& kind : layer_registry()) {
            Network net = built_alone(new_layer_json(kind));
            if (std::holds_alternative<NoDeviceOp>(net.layer(0).device_op())) {
                const QString line = error_text<NetworkError>([&] { plan_device_layers(net); });
                QVERIFY2(line.startsWith("the CUDA engine has no op for layer 0") && !line.contains('\n'),
                         qPrintable(line));
                continue;
            }
            const auto layers = plan_device_layers(net);
            QCOMPARE(layers.size(), size_t{1});
            QCOMPARE(layers[0].op.index(), net.layer(0).device_op().index());
        }
    }

    void aKindWithoutADeviceOpIsRefusedInOneLine() {
        std::vector<std::unique_ptr<Layer>> layers;
        layers.push_back(std::make_unique<Linear>(6));
        layers.push_back(std::make_unique<HostOnlyLayer>());
        layers.push_back(std::make_unique<Linear>(3));
        Network net = Network::from_layers(std::move(layers));
        net.build({4});
        const QString expected = "the CUDA engine has no op for layer 1 (HostOnly)";
        QCOMPARE(QString::fromStdString(net.missing_device_op()), expected);
        QCOMPARE(error_text<NetworkError>([&] { plan_device_layers(net); }), expected);

        Network known = Network::from_json({{"layers", json::array({{{"type", "Linear"}, {"out", 3}}})}});
        QCOMPARE(QString::fromStdString(known.missing_device_op()), QString());
    }
};

QTEST_GUILESS_MAIN(TestDevicePlan)
#include "test_device_plan.moc"
