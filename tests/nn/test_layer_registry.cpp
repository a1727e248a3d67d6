// Tests of the layer registry (core/nn/layer_registry.h): every kind makes the layer it names
// from a new layer's JSON, the defaults are the values the layers had before the registry, every
// field's range is enforced with a message naming the layer and the field, and a saved network is
// byte for byte what it was before the registry (tests/nn/data/saved_networks.json, recorded from
// the code the registry replaced, for every shipped preset and a network that sets every field).
#include <QtTest/QtTest>

#include <algorithm>
#include <fstream>

#include "core/common/error.h"
#include "core/nn/batchnorm.h"
#include "core/nn/network.h"
#include "core/nn/pool2d.h"
#include "core/nn/simple_layers.h"
#include "resources/presets.h"
#include "tests/common/test_support.h"

using mpwb::test::error_text;
using namespace mpwb;
using nlohmann::json;

namespace {

template <class L>
const L& made_as(const json& spec) {
    static std::unique_ptr<Layer> keep;
    keep = make_layer(spec);
    const auto* layer = dynamic_cast<const L*>(keep.get());
    if (!layer) qFatal("%s did not make the expected class", spec.dump().c_str());
    return *layer;
}

QString from_json_error(const json& layer) {
    return error_text<NetworkError>([&] { Network::from_json(json{{"layers", json::array({layer})}}); });
}

json saved_networks() {
    std::ifstream in(MPWB_SOURCE_DIR "/tests/nn/data/saved_networks.json");
    if (!in) qFatal("cannot open tests/nn/data/saved_networks.json");
    return json::parse(in);
}

}  // namespace

class TestLayerRegistry : public QObject {
    Q_OBJECT

private slots:
    void everyKindMakesItsLayerFromANewLayer() {
        // The kinds there were before the registry keep their names and palette order; new ones
        // join them (a new activation with the activations, where the activation table puts it).
        const std::vector<std::string> former = {"Linear",  "Conv2d",    "MaxPool2d", "AvgPool2d",
                                                 "ReLU",    "LeakyReLU", "GELU",      "Tanh",
                                                 "Sigmoid", "Flatten",   "Dropout",   "BatchNorm"};
        std::vector<std::string> kept;
        for (const std::string& kind : layer_kinds())
            if (std::find(former.begin(), former.end(), kind) != former.end()) kept.push_back(kind);
        QCOMPARE(kept, former);
        for (const LayerKind& kind : layer_registry()) {
            const json spec = new_layer_json(kind);
            QCOMPARE(QString::fromStdString(make_layer(spec)->kind()), QString::fromStdString(kind.name));
            QVERIFY(find_layer_kind(kind.name) == &kind);
            QVERIFY2(!kind.help.empty() && !kind.shape_rule.empty(), kind.name.c_str());
            for (const LayerField& f : kind.fields) {
                QVERIFY2(!f.label.empty() && !f.help.empty(), (kind.name + "." + f.key).c_str());
                // A field's new-layer value and its default lie within its own range and the editor's.
                const double shown = std::isnan(f.new_layer_value) ? f.default_value : f.new_layer_value;
                if (f.when_absent != WhenAbsent::Derived) {
                    QVERIFY2(shown >= f.editor_min() && shown <= f.editor_max(),
                             (kind.name + "." + f.key).c_str());
                }
            }
        }
        QVERIFY(find_layer_kind("Dense") == nullptr);
    }

    // What the editor's defaultLayer wrote before the registry, kind by kind.
    void newLayersAreWhatTheEditorAddedBefore() {
        const std::map<std::string, json> before = {
            {"Linear", {{"type", "Linear"}, {"out", 64}}},
            {"Conv2d", {{"type", "Conv2d"}, {"out_channels", 16}, {"kernel", 3}, {"padding", 1}}},
            {"MaxPool2d", {{"type", "MaxPool2d"}, {"kernel", 2}}},
            {"AvgPool2d", {{"type", "AvgPool2d"}, {"kernel", 2}}},
            {"LeakyReLU", {{"type", "LeakyReLU"}, {"slope", 0.01}}},
            {"Dropout", {{"type", "Dropout"}, {"p", 0.5}}},
            // Kinds added since, as they came.
            {"Embedding", {{"type", "Embedding"}, {"d_model", 128}, {"context", 64}}}};
        for (const LayerKind& kind : layer_registry()) {
            const auto it = before.find(kind.name);
            const json expected = it != before.end() ? it->second : json{{"type", kind.name}};
            QCOMPARE(QString::fromStdString(new_layer_json(kind).dump()),
                     QString::fromStdString(expected.dump()));
        }
    }

    // The values the layers used when a setting is absent, before the registry held them.
    void defaultsAreTheLayersFormerDefaults() {
        EXPECT_EXACT(made_as<Dropout>({{"type", "Dropout"}}).p(), 0.5f);
        EXPECT_EXACT(made_as<ActivationLayer>({{"type", "LeakyReLU"}}).slope(), 0.01f);
        EXPECT_EXACT(made_as<BatchNorm>({{"type", "BatchNorm"}}).momentum(), 0.1f);
        EXPECT_EXACT(made_as<BatchNorm>({{"type", "BatchNorm"}}).eps(), 1e-5f);
        const auto& pool = made_as<Pool2d>({{"type", "AvgPool2d"}, {"kernel", 3}});
        QCOMPARE(pool.stride(), int64_t{3});  // derived: the kernel
        QCOMPARE(pool.padding(), int64_t{0});
        QCOMPARE(made_as<Pool2d>({{"type", "MaxPool2d"}}).kernel(), int64_t{2});
        // A float setting is the float the layer computes with.
        EXPECT_EXACT(made_as<Dropout>({{"type", "Dropout"}, {"p", 0.1}}).p(), 0.1f);
    }

    // Just outside each end of every field's range: refused, naming the layer and the field.
    void everyRangeIsEnforcedNamingTheField() {
        int checked = 0;
        for (const LayerKind& kind : layer_registry()) {
            for (const LayerField& f : kind.fields) {
                if (f.type == FieldType::Boolean) continue;
                json base = new_layer_json(kind);
                const double step = f.type == FieldType::Integer ? 1 : 1e-3;
                for (const double outside :
                     {f.min_open ? f.min : f.min - step, f.max_open ? f.max : f.max + step}) {
                    if (!std::isfinite(outside)) continue;
                    json spec = base;
                    if (f.type == FieldType::Integer)
                        spec[f.key] = static_cast<int64_t>(outside);
                    else
                        spec[f.key] = outside;
                    const std::string prefix = "layer 0 (" + kind.name + "): \"" + f.key + "\"";
                    VERIFY_MSG(from_json_error(spec), prefix.c_str(), "must be");
                    ++checked;
                }
            }
        }
        QVERIFY(checked >= 18);  // every finite end of the 17 numeric fields the former kinds have
        VERIFY_MSG(from_json_error({{"type", "BatchNorm"}, {"momentum", 0}}),
                   "layer 0 (BatchNorm): \"momentum\" must be in (0, 1], gets 0");
        VERIFY_MSG(from_json_error({{"type", "Conv2d"}, {"out_channels", 2}, {"kernel", 3}, {"padding", -1}}),
                   "\"padding\" must be at least 0, gets -1");
        VERIFY_MSG(from_json_error({{"type", "Linear"}, {"out", -1}}),
                   "\"out\" (outputs) must be at least 0, gets -1");
        // The rule that ties two pooling fields stays the layer's own.
        VERIFY_MSG(from_json_error({{"type", "MaxPool2d"}, {"kernel", 2}, {"padding", 2}}),
                   "padding <= kernel/2");
        // Inside the range is accepted, at both closed ends.
        QVERIFY(make_layer({{"type", "Dropout"}, {"p", 0}}));
        QVERIFY(make_layer({{"type", "BatchNorm"}, {"momentum", 1}}));
    }

    void savedNetworksAreByteIdentical() {
        const json recorded = saved_networks();
        const json& saved = recorded.at("saved");
        QVERIFY(saved.size() >= 7);
        for (const auto& [name, text] : saved.items()) {
            const json description =
                recorded["inputs"].contains(name) ? recorded["inputs"][name] : load_preset(name).network;
            const std::string now = Network::from_json(description).to_json().dump(2) + "\n";
            if (now != text.get<std::string>())
                QFAIL(qPrintable(QString::fromStdString(name + " saves differently; now:\n" + now +
                                                        "recorded:\n" + text.get<std::string>())));
        }
        for (const std::string& preset : preset_names())
            QVERIFY2(saved.contains(preset), ("preset " + preset + " has no recorded saved network").c_str());
    }
};

QTEST_APPLESS_MAIN(TestLayerRegistry)
#include "test_layer_registry.moc"
