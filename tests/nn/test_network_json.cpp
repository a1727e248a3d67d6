// Tests of the network description: Network::from_json / load_file / build / inspect / to_json.
// Shape inference and parameter counts of the three presets against counts worked out by hand,
// the exact error texts that name the layer, every kind of malformed description (unknown type
// or setting, wrong field type, missing or empty layers, bad JSON file, missing file), inspect()
// going on after an error, and the JSON round trip.
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>

#include "core/common/error.h"
#include "core/nn/network.h"
#include "resources/presets.h"
#include "tests/common/test_support.h"

using mpwb::test::error_text;

using namespace mpwb;
using nlohmann::json;

namespace {

QString build_error(const json& description, const Shape& input) {
    return error_text<NetworkError>([&] {
        Network net = Network::from_json(description);
        net.build(input);
    });
}

QString from_json_error(const json& description) {
    return error_text<NetworkError>([&] { Network::from_json(description); });
}

json net_of(std::initializer_list<json> layers) { return json{{"layers", json(layers)}}; }

}  // namespace

class TestNetworkJson : public QObject {
    Q_OBJECT

private slots:
    void presetShapesAndCounts_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QList<qint64>>("input");
        QTest::addColumn<qint64>("parameters");
        QTest::addColumn<QStringList>("shapes");
        // 2 -> 64 -> 64 -> 2 with biases.
        QTest::newRow("spiral-mlp") << "spiral-mlp" << QList<qint64>{2}
                                    << qint64((2 * 64 + 64) + (64 * 64 + 64) + (64 * 2 + 2))
                                    << QStringList{"[64]", "[64]", "[64]", "[64]", "[2]"};
        QTest::newRow("fashion-mlp") << "fashion-mlp" << QList<qint64>{1, 28, 28}
                                     << qint64((784 * 256 + 256) + (256 * 128 + 128) + (128 * 10 + 10))
                                     << QStringList{"[784]", "[256]", "[256]", "[128]", "[128]", "[10]"};
        // Two 3x3 same-padded convolutions (1->16, 16->32), two 2x2 pools: 28 -> 14 -> 7.
        QTest::newRow("fashion-cnn") << "fashion-cnn" << QList<qint64>{1, 28, 28}
                                     << qint64((16 * 1 * 9 + 16) + (32 * 16 * 9 + 32) +
                                               (32 * 7 * 7 * 128 + 128) + (128 * 10 + 10))
                                     << QStringList{"[16x28x28]", "[16x28x28]", "[16x14x14]", "[32x14x14]",
                                                    "[32x14x14]", "[32x7x7]",   "[1568]",     "[128]",
                                                    "[128]",      "[10]"};
    }

    void presetShapesAndCounts() {
        QFETCH(QString, preset);
        QFETCH(QList<qint64>, input);
        QFETCH(qint64, parameters);
        QFETCH(QStringList, shapes);
        const Preset p = load_preset(preset.toStdString());
        const Shape in(input.begin(), input.end());
        Network net = Network::from_json(p.network);
        QCOMPARE(net.size(), static_cast<size_t>(shapes.size()));
        net.build(in);
        QCOMPARE(net.parameter_count(), parameters);
        QCOMPARE(QString::fromStdString(shape_to_string(net.output_shape())), shapes.back());
        QCOMPARE(net.input_shape(), in);

        const auto reports = Network::inspect(p.network, in);
        QCOMPARE(reports.size(), static_cast<size_t>(shapes.size()));
        int64_t total = 0;
        for (size_t i = 0; i < reports.size(); ++i) {
            QCOMPARE(reports[i].index, i);
            QVERIFY2(reports[i].error.empty(), reports[i].error.c_str());
            QCOMPARE(QString::fromStdString(reports[i].kind), QString::fromStdString(net.layer(i).kind()));
            QCOMPARE(QString::fromStdString(shape_to_string(reports[i].output)),
                     shapes[static_cast<qsizetype>(i)]);
            QCOMPARE(reports[i].parameters, net.layer(i).parameter_count());
            total += reports[i].parameters;
        }
        QCOMPARE(total, parameters);
    }

    void linearInputMismatchNamesTheLayer() {
        // 1x28x28 -> Conv2d k5 (8x24x24) -> MaxPool 2 (8x12x12) -> Flatten (1152) -> Linear that wants 784.
        const json d = net_of({{{"type", "Conv2d"}, {"out_channels", 8}, {"kernel", 5}},
                               {{"type", "MaxPool2d"}, {"kernel", 2}},
                               {{"type", "Flatten"}},
                               {{"type", "Linear"}, {"in", 784}, {"out", 10}}});
        QCOMPARE(build_error(d, {1, 28, 28}), QString("layer 3 (Linear): expects 784 inputs, gets 1152"));
        // The same network with the right "in" builds.
        json ok = d;
        ok["layers"][3]["in"] = 1152;
        Network net = Network::from_json(ok);
        net.build({1, 28, 28});
        QCOMPARE(net.parameter_count(), int64_t{8 * 25 + 8 + 1152 * 10 + 10});
    }

    void shapeErrors() {
        VERIFY_MSG(build_error(net_of({{{"type", "Flatten"}},
                                       {{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 3}}}),
                               {1, 28, 28}),
                   "layer 1 (Conv2d): ", "expects an image input", "[784]");
        VERIFY_MSG(build_error(net_of({{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 7}}}), {1, 5, 5}),
                   "layer 0 (Conv2d): ", "kernel 7", "5x5");
        // Padding makes it fit.
        QCOMPARE(
            build_error(net_of({{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 7}, {"padding", 1}}}),
                        {1, 5, 5}),
            QString("<no exception>"));
        VERIFY_MSG(
            build_error(net_of({{{"type", "ReLU"}}, {{"type", "MaxPool2d"}, {"kernel", 4}}}), {2, 3, 3}),
            "layer 1 (MaxPool2d): ", "window 4", "3x3");
        VERIFY_MSG(build_error(net_of({{{"type", "Linear"}, {"out", 4}}}), {1, 28, 28}),
                   "layer 0 (Linear): ", "flat input", "Flatten");
        VERIFY_MSG(build_error(
                       net_of({{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 3}, {"in_channels", 3}}}),
                       {1, 8, 8}),
                   "layer 0 (Conv2d): expects 3 input channels, gets 1");
        VERIFY_MSG(build_error(net_of({{{"type", "BatchNorm"}}}), {2, 3}), "layer 0 (BatchNorm): ", "[2x3]");
    }

    void malformedDescriptions() {
        VERIFY_MSG(
            from_json_error(net_of({{{"type", "Linear"}, {"out", 4}}, {{"type", "Dense"}, {"out", 2}}})),
            "layer 1 (Dense): unknown layer type \"Dense\"", "Linear", "Conv2d", "BatchNorm");
        VERIFY_MSG(from_json_error(net_of({{{"type", "Linear"}, {"out", 4}, {"units", 5}}})),
                   "layer 0 (Linear): unknown setting \"units\"", "out, bias, in");
        VERIFY_MSG(from_json_error(net_of({{{"type", "ReLU"}, {"slope", 0.1}}})),
                   "layer 0 (ReLU): unknown setting \"slope\"");
        VERIFY_MSG(from_json_error(net_of({{{"type", "Linear"}, {"out", "ten"}}})),
                   "layer 0 (Linear): \"out\" must be an integer, gets \"ten\"");
        VERIFY_MSG(from_json_error(net_of({{{"type", "Linear"}, {"out", 2.5}}})),
                   "\"out\" must be an integer");
        VERIFY_MSG(from_json_error(net_of({{{"type", "Linear"}, {"out", 2}, {"bias", "yes"}}})),
                   "\"bias\" must be true or false");
        VERIFY_MSG(from_json_error(net_of({{{"type", "Dropout"}, {"p", "half"}}})), "\"p\" must be a number");
        VERIFY_MSG(from_json_error(net_of({{{"type", "Dropout"}, {"p", 1.0}}})),
                   "layer 0 (Dropout): \"p\" (drop probability) must be in [0, 1), gets 1");
        // "out" absent or 0 takes the dataset's classes: without a dataset the build says so.
        VERIFY_MSG(error_text<NetworkError>([] {
                       Network::from_json(net_of({{{"type", "Linear"}}})).build({4});
                   }),
                   "layer 0 (Linear): \"out\" (outputs) is 0", "dataset's classes");
        VERIFY_MSG(from_json_error(net_of({{{"type", "Linear"}, {"out", -3}}})), "at least 0", "-3");
        VERIFY_MSG(from_json_error(
                       net_of({{{"type", "Conv2d"}, {"out_channels", 2}, {"kernel", 3}, {"stride", 0}}})),
                   "layer 0 (Conv2d): \"stride\" must be positive, gets 0");
        VERIFY_MSG(from_json_error(net_of({json{{"out", 3}}})), "layer 0 (?): needs a \"type\" string");
        VERIFY_MSG(from_json_error(net_of({json("Linear")})), "layer 0 (?): must be a JSON object");
        VERIFY_MSG(from_json_error(json{{"layer", json::array()}}), "needs a \"layers\" array");
        VERIFY_MSG(from_json_error(json{{"layers", "Linear"}}), "needs a \"layers\" array");
        VERIFY_MSG(from_json_error(json::array()), "must be a JSON object");
        VERIFY_MSG(from_json_error(json{{"layers", json::array()}}), "no layers");
        VERIFY_MSG(from_json_error(json{{"layers", {{{"type", "ReLU"}}}}, {"loss", "hinge"}}),
                   "unknown loss \"hinge\"", "cross_entropy", "mse");
        VERIFY_MSG(from_json_error(json{{"layers", {{{"type", "ReLU"}}}}, {"loss", 3}}), "\"loss\"");
        // A name of the wrong type is a NetworkError like every other field, not a JSON library error.
        VERIFY_MSG(from_json_error(json{{"name", 5}, {"layers", {{{"type", "ReLU"}}}}}), "\"name\"");
    }

    void files() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string bad = dir.path().toStdString() + "/broken.json";
        std::ofstream(bad) << "{\"layers\": [ {\"type\": \"Linear\", \"out\": 3 ";
        VERIFY_MSG(error_text<NetworkError>([&] { Network::load_file(bad); }), "broken.json",
                   "not valid JSON");

        const std::string missing = dir.path().toStdString() + "/nope.json";
        VERIFY_MSG(error_text<NetworkError>([&] { Network::load_file(missing); }), "cannot open",
                   "nope.json");

        const std::string wrong = dir.path().toStdString() + "/wrong.json";
        std::ofstream(wrong) << net_of({{{"type", "Linear"}, {"out", 4}}, {{"type", "Pool"}}}).dump();
        VERIFY_MSG(error_text<NetworkError>([&] { Network::load_file(wrong); }), "wrong.json",
                   "layer 1 (Pool): unknown layer type");

        // save_file and load_file round trip.
        const Preset p = load_preset("fashion-cnn");
        Network net = Network::from_json(p.network);
        const std::string saved = dir.path().toStdString() + "/cnn.json";
        net.save_file(saved);
        Network back = Network::load_file(saved);
        QCOMPARE(back.to_json(), net.to_json());
        back.build({1, 28, 28});
        QCOMPARE(back.parameter_count(), int64_t{206922});
    }

    // Layer sizes from a file are bounded: an int64 overflow in the shape product (which ended
    // in a heap-buffer-overflow WRITE), 2e9 outputs (OOM-killed at 23 GB) and outputs too large
    // for BLAS's int sizes are refused when the network is built, before anything is allocated,
    // with the limit and the actual numbers in the message.
    void hugeLayerSizesAreRefused() {
        QString msg = build_error(
            net_of({{{"type", "Flatten"}}, {{"type", "Linear"}, {"out", 4611686018427388032}}}), {1, 28, 28});
        VERIFY_MSG(msg, "layer 1 (Linear): ", "parameters", "over 9,223,372,036,854,775,807", "268,435,456");
        msg = build_error(net_of({{{"type", "Linear"}, {"out", 2000000000}}}), {784});
        VERIFY_MSG(msg, "layer 0 (Linear): ", "1,570,000,000,000 parameters", "268,435,456");
        // Small weights, but one sample's output has 4096 x 1024 x 1024 elements.
        msg = build_error(net_of({{{"type", "Conv2d"}, {"out_channels", 4096}, {"kernel", 1}}}),
                          {1, 1024, 1024});
        VERIFY_MSG(msg, "layer 0 (Conv2d): ", "4,294,967,296", "2,147,483,647");
        // Padding that overflows the output height.
        msg = build_error(
            net_of(
                {{{"type", "Conv2d"}, {"out_channels", 1}, {"kernel", 1}, {"padding", 4611686018427388032}}}),
            {1, 4, 4});
        VERIFY_MSG(msg, "layer 0 (Conv2d): ", "elements");
        // A pooling padding beyond kernel/2 is refused as such (checked without overflowing).
        msg = build_error(net_of({{{"type", "MaxPool2d"}, {"kernel", 2}, {"padding", 4611686018427388032}}}),
                          {1, 4, 4});
        VERIFY_MSG(msg, "layer 0 (MaxPool2d): ", "padding <= kernel/2", "4611686018427388032");
        // An integer beyond int64 is not read as a negative number.
        VERIFY_MSG(from_json_error(net_of({{{"type", "Linear"}, {"out", 18446744073709551615u}}})),
                   "layer 0 (Linear): ", "\"out\"", "18446744073709551615");
        // Thousands of layers.
        json many = json::array();
        for (int i = 0; i < 5000; ++i) many.push_back({{"type", "ReLU"}});
        VERIFY_MSG(from_json_error(json{{"layers", many}}), "5000 layers", "4096");
    }

    // The editor's per-layer check reports the same limit on the layer that crosses it.
    void inspectReportsSizeLimits() {
        const auto r = Network::inspect(net_of({{{"type", "Flatten"}},
                                                {{"type", "Linear"}, {"out", 2000000000}},
                                                {{"type", "Linear"}, {"out", 2}}}),
                                        {1, 28, 28});
        QCOMPARE(r.size(), size_t{3});
        QVERIFY(r[0].error.empty());
        VERIFY_MSG(QString::fromStdString(r[1].error), "1,570,000,000,000 parameters", "268,435,456");
    }

    // Hostile network files: 100k-deep JSON (a stack overflow), a number out of double range
    // (an uncaught out_of_range that aborted the GUI), a folder (basic_filebuf::underflow), a
    // 50 MB file (11 GB and 29 s), a preset whose "name" is a number (type_error.302).
    void hostileFiles() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        const std::string deep = d + "/deep.json";
        std::ofstream(deep) << "{\"layers\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
        VERIFY_MSG(error_text<NetworkError>([&] { Network::load_file(deep); }), "deep.json",
                   "nested deeper than 64");

        const std::string overflow = d + "/overflow.json";
        std::ofstream(overflow) << R"({"layers": [{"type": "Linear", "out": 1e400}]})";
        VERIFY_MSG(error_text<NetworkError>([&] { Network::load_file(overflow); }), "overflow.json",
                   "layers[0].out", "1e400");

        VERIFY_MSG(error_text<NetworkError>([&] { Network::load_file(d); }), d.c_str(), "is a folder");

        // Sparse: the test writes a few bytes; the reader must refuse it from its size alone.
        const std::string huge = d + "/huge.json";
        std::ofstream(huge) << "{\"layers\": [";
        std::filesystem::resize_file(huge, 50u << 20);
        VERIFY_MSG(error_text<NetworkError>([&] { Network::load_file(huge); }), "huge.json", "50 MiB",
                   "4 MiB");

        const std::string named = d + "/named.json";
        std::ofstream(named) << R"({"name": 5, "network": {"layers": [{"type": "ReLU"}]}})";
        VERIFY_MSG(error_text<ConfigError>([&] { load_preset_file(named); }), "named.json", "\"name\"",
                   "string");
        std::ofstream(named)
            << R"({"name": "n", "description": [], "network": {"layers": [{"type": "ReLU"}]}})";
        VERIFY_MSG(error_text<ConfigError>([&] { load_preset_file(named); }), "named.json",
                   "\"description\"");
        VERIFY_MSG(error_text<ConfigError>([&] { load_preset_file(deep); }), "deep.json",
                   "nested deeper than 64");
        VERIFY_MSG(error_text<ConfigError>([&] { load_preset_file(overflow); }), "overflow.json", "1e400");
    }

    void inspectGoesOnAfterAnError() {
        const json d = net_of({{{"type", "Linear"}, {"out", 16}},
                               {{"type", "ReLU"}},
                               {{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 3}},  // needs an image
                               {{"type", "Dropout"}, {"p", 0.2}},
                               {{"type", "Bogus"}},
                               {{"type", "Linear"}, {"out", 2}, {"colour", "red"}},
                               {{"type", "Linear"}, {"out", 2}}});
        const auto r = Network::inspect(d, {8});
        QCOMPARE(r.size(), size_t{7});
        for (size_t i = 0; i < r.size(); ++i) QCOMPARE(r[i].index, i);
        QVERIFY(r[0].error.empty());
        QCOMPARE(r[0].output, (Shape{16}));
        QCOMPARE(r[0].parameters, int64_t{8 * 16 + 16});
        QVERIFY(r[1].error.empty());
        QCOMPARE(r[1].output, (Shape{16}));
        QCOMPARE(QString::fromStdString(r[2].kind), QString("Conv2d"));
        VERIFY_MSG(QString::fromStdString(r[2].error), "expects an image input");
        // After the error the shapes are unknown, but each layer's own description is still checked.
        QVERIFY(r[3].error.empty());
        QVERIFY(r[3].output.empty());
        QCOMPARE(QString::fromStdString(r[4].kind), QString("Bogus"));
        VERIFY_MSG(QString::fromStdString(r[4].error), "unknown layer type \"Bogus\"");
        VERIFY_MSG(QString::fromStdString(r[5].error), "unknown setting \"colour\"");
        QVERIFY(r[6].error.empty());

        // A description without layers gives no reports rather than throwing.
        QVERIFY(Network::inspect(json{{"nothing", 1}}, {8}).empty());
        // Only the last layer is wrong: everything before it has its shape and count.
        const auto r2 = Network::inspect(net_of({{{"type", "Flatten"}},
                                                 {{"type", "Linear"}, {"out", 10}},
                                                 {{"type", "Linear"}, {"in", 11}, {"out", 2}}}),
                                         {2, 3, 3});
        QCOMPARE(r2[0].output, (Shape{18}));
        QCOMPARE(r2[1].parameters, int64_t{18 * 10 + 10});
        QCOMPARE(QString::fromStdString(r2[2].error), QString("expects 11 inputs, gets 10"));
    }

    void jsonRoundTrip() {
        const json d = {{"name", "everything"},
                        {"loss", "mse"},
                        {"layers",
                         {{{"type", "Conv2d"},
                           {"out_channels", 3},
                           {"kernel", 3},
                           {"stride", 2},
                           {"padding", 1},
                           {"bias", false}},
                          {{"type", "BatchNorm"}, {"momentum", 0.25}, {"eps", 0.001}},
                          {{"type", "LeakyReLU"}, {"slope", 0.125}},
                          {{"type", "MaxPool2d"}, {"kernel", 3}, {"stride", 1}, {"padding", 1}},
                          {{"type", "AvgPool2d"}, {"kernel", 2}},
                          {{"type", "Flatten"}},
                          {{"type", "Dropout"}, {"p", 0.25}},
                          {{"type", "Linear"}, {"out", 7}, {"bias", false}},
                          {{"type", "GELU"}},
                          {{"type", "Tanh"}},
                          {{"type", "Sigmoid"}},
                          {{"type", "ReLU"}},
                          {{"type", "Linear"}, {"out", 2}}}}};
        Network a = Network::from_json(d);
        const json ja = a.to_json();
        QCOMPARE(QString::fromStdString(ja["name"].get<std::string>()), QString("everything"));
        QCOMPARE(QString::fromStdString(ja["loss"].get<std::string>()), QString("mse"));
        QCOMPARE(ja["layers"].size(), d["layers"].size());
        for (size_t i = 0; i < d["layers"].size(); ++i)
            for (const auto& [key, value] : d["layers"][i].items()) {
                QVERIFY2(ja["layers"][i].contains(key),
                         qPrintable(QString("layer %1 lost \"%2\"").arg(i).arg(key.c_str())));
                if (value.is_number_float())
                    QCOMPARE(ja["layers"][i][key].get<double>(), value.get<double>());
                else
                    QCOMPARE(QString::fromStdString(ja["layers"][i][key].dump()),
                             QString::fromStdString(value.dump()));
            }
        Network b = Network::from_json(ja);
        QCOMPARE(b.to_json(), ja);
        a.build({2, 9, 9});
        b.build({2, 9, 9});
        QCOMPARE(b.parameter_count(), a.parameter_count());
        // 3x2x3x3 (no bias) + BatchNorm 2x3 + Linear 3*2*2 -> 7 without bias + Linear 7 -> 2.
        QCOMPARE(a.parameter_count(), int64_t{3 * 2 * 9 + 2 * 3 + 12 * 7 + 7 * 2 + 2});
        QCOMPARE(a.output_shape(), (Shape{2}));
    }
};

QTEST_APPLESS_MAIN(TestNetworkJson)
#include "test_network_json.moc"
