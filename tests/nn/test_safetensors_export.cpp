// The safetensors writer against the format's definition (an 8-byte little-endian header length,
// a JSON header whose entries give dtype, shape and data_offsets relative to the data, the data
// on an 8-byte boundary after space padding, raw little-endian values), the reader's refusals of
// damaged files, the state_dict names of the PyTorch export, its loss and optimizer, and its
// refusals; write_new_file never overwrites. Every registered layer kind has its PyTorch module and
// says what it runs as on the device (a device op, or explicitly none), so a new kind cannot forget
// either.
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/nn/layer_registry.h"
#include "core/nn/network_weights.h"
#include "core/nn/pytorch_export.h"
#include "core/nn/safetensors_file.h"
#include "core/optim/optimizer_registry.h"

using namespace mpwb;

namespace {

SafetensorsFile sample_file() {
    SafetensorsFile f;
    f.metadata = {{"mpwb_run_id", "12"}, {"format", "pt"}};
    f.tensors.push_back({"0.weight", {2, 3}, {1, 2, 3, 4, 5, -6.5f}});
    f.tensors.push_back({"0.bias", {2}, {0.25f, -1e-30f}});
    f.tensors.push_back({"2.running_var", {1}, {3}});
    return f;
}

uint64_t header_length(const std::vector<uint8_t>& bytes) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
    return n;
}

// Builds the layer on an image input, or on features where it takes no image; returns the input.
Shape build_on_some_input(Layer& layer) {
    layer.set_dataset_classes(10);  // for the settings whose 0 takes the dataset's (Embedding's vocabulary)
    for (const Shape& input : {Shape{3, 8, 8}, Shape{16}, Shape{8, 16}}) {
        try {
            layer.build(input);
            return input;
        } catch (const ShapeError&) {}
    }
    qFatal("%s takes neither an image, features nor a sequence", layer.kind().c_str());
}

void set_header(std::vector<uint8_t>& bytes, const std::string& header) {
    const uint64_t old = header_length(bytes);
    std::vector<uint8_t> out;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), bytes.begin() + 8 + static_cast<std::ptrdiff_t>(old), bytes.end());
    bytes = out;
}

#define EXPECT_THROW_WITH(expr, needle)                                                    \
    do {                                                                                   \
        bool thrown_ = false;                                                              \
        try {                                                                              \
            (void)(expr);                                                                  \
        } catch (const std::exception& e_) {                                               \
            thrown_ = true;                                                                \
            QVERIFY2(std::string(e_.what()).find(needle) != std::string::npos, e_.what()); \
        }                                                                                  \
        QVERIFY2(thrown_, "no exception");                                                 \
    } while (0)

}  // namespace

class TestSafetensorsExport : public QObject {
    Q_OBJECT

private slots:
    void layoutFollowsTheFormat() {
        const auto bytes = encode_safetensors(sample_file());
        const uint64_t n = header_length(bytes);
        QCOMPARE((8 + n) % 8, uint64_t{0});  // data on an 8-byte boundary
        const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
        QVERIFY(header.back() == ' ' || header.back() == '}');
        QVERIFY(header.find_last_not_of(' ') == header.rfind('}'));  // only spaces pad it
        const auto j = nlohmann::json::parse(header);
        QCOMPARE(j["__metadata__"]["mpwb_run_id"].get<std::string>(), std::string("12"));
        QCOMPARE(j["0.weight"]["dtype"].get<std::string>(), std::string("F32"));
        QCOMPARE(j["0.weight"]["shape"], nlohmann::json({2, 3}));
        QCOMPARE(j["0.weight"]["data_offsets"], nlohmann::json({0, 24}));
        QCOMPARE(j["0.bias"]["data_offsets"], nlohmann::json({24, 32}));
        QCOMPARE(j["2.running_var"]["data_offsets"], nlohmann::json({32, 36}));
        QCOMPARE(bytes.size(), size_t(8 + n + 36));
        // Little-endian FP32: -6.5f is 0xC0D00000.
        const size_t last = 8 + n + 20;
        QCOMPARE(bytes[last], uint8_t{0x00});
        QCOMPARE(bytes[last + 2], uint8_t{0xD0});
        QCOMPARE(bytes[last + 3], uint8_t{0xC0});
    }

    void readsBackWhatItWrote() {
        const SafetensorsFile in = sample_file();
        const SafetensorsFile out = decode_safetensors(encode_safetensors(in), "memory");
        QCOMPARE(out.metadata, in.metadata);
        QCOMPARE(out.tensors.size(), in.tensors.size());
        for (size_t i = 0; i < in.tensors.size(); ++i) {
            QCOMPARE(out.tensors[i].name, in.tensors[i].name);
            QCOMPARE(out.tensors[i].shape, in.tensors[i].shape);
            QVERIFY(std::memcmp(out.tensors[i].values.data(), in.tensors[i].values.data(),
                                in.tensors[i].values.size() * 4) == 0);
        }
    }

    void writerRefusesBadTensors() {
        SafetensorsFile f = sample_file();
        f.tensors[1].name = "0.weight";
        EXPECT_THROW_WITH(encode_safetensors(f), "given twice");
        f = sample_file();
        f.tensors[0].values.pop_back();
        EXPECT_THROW_WITH(encode_safetensors(f), "5 values for shape [2x3]");
    }

    void readerRefusesDamagedFiles() {
        const auto good = encode_safetensors(sample_file());
        auto bytes = good;
        bytes.resize(4);
        EXPECT_THROW_WITH(decode_safetensors(bytes, "f"), "shorter than");
        bytes = good;
        bytes[5] = 1;  // header length 2^40
        EXPECT_THROW_WITH(decode_safetensors(bytes, "f"), "larger than the file");
        bytes = good;
        bytes.resize(bytes.size() - 4);
        EXPECT_THROW_WITH(decode_safetensors(bytes, "f"), "2.running_var");
        bytes = good;
        bytes.push_back(0);
        EXPECT_THROW_WITH(decode_safetensors(bytes, "f"), "after the last tensor");
        auto header = [&](const std::string& h) {
            auto b = good;
            set_header(b, h);
            return b;
        };
        EXPECT_THROW_WITH(
            decode_safetensors(header(R"({"a":{"dtype":"F16","shape":[18],"data_offsets":[0,36]}})"), "f"),
            "only F32");
        EXPECT_THROW_WITH(
            decode_safetensors(header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                      R"("b":{"dtype":"F32","shape":[6],"data_offsets":[12,36]}})"),
                               "f"),
            "overlap");
        EXPECT_THROW_WITH(
            decode_safetensors(
                header(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,36]}})"),
                "f"),
            "does not fit");
        EXPECT_THROW_WITH(
            decode_safetensors(header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,36]}})"), "f"),
            "needs 8");
        EXPECT_THROW_WITH(decode_safetensors(header("[1,2]"), "f"), "not a JSON object");
        EXPECT_THROW_WITH(decode_safetensors(header("{\"a\":"), "f"), "f");
    }

    void newFilesAreNeverOverwritten() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("m.safetensors").toStdString();
        write_safetensors_file(path, sample_file());
        const auto before = read_safetensors_file(path);
        EXPECT_THROW_WITH(write_safetensors_file(path, SafetensorsFile{}), "already exists");
        QCOMPARE(read_safetensors_file(path).tensors.size(), before.tensors.size());
        EXPECT_THROW_WITH(
            write_safetensors_file(dir.filePath("no/such/dir/m.st").toStdString(), sample_file()),
            "cannot create");
    }

    // Names as nn.Sequential's state_dict has them; BatchNorm 1d/2d by its input, with our eps and
    // momentum; LeakyReLU's slope and Dropout's p in their shortest form; GELUTanh is PyTorch's
    // GELU with approximate="tanh".
    void pytorchNamesAndModules() {
        const nlohmann::json description = {
            {"layers",
             {{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 3}, {"stride", 2}, {"padding", 1}},
              {{"type", "BatchNorm"}, {"momentum", 0.2}, {"eps", 0.001}},
              {{"type", "LeakyReLU"}, {"slope", 0.01}},
              {{"type", "Flatten"}},
              {{"type", "Dropout"}, {"p", 0.1}},
              {{"type", "Linear"}, {"out", 3}, {"bias", false}},
              {{"type", "BatchNorm"}},
              {{"type", "GELUTanh"}}}}};
        Network net = Network::from_json(description);
        net.build({2, 6, 6});
        net.init(1);
        const NetworkWeights w = network_weights(net, 9);
        PytorchExportInfo info;
        info.title = "t";
        info.weights_file = "t.safetensors";
        const PytorchExport e = make_pytorch_export(description, w, info);
        std::vector<std::string> names;
        for (const auto& t : e.weights.tensors) names.push_back(t.name);
        const std::vector<std::string> expected = {
            "0.weight", "0.bias",   "1.weight", "1.bias",         "1.running_mean", "1.running_var",
            "5.weight", "6.weight", "6.bias",   "6.running_mean", "6.running_var"};
        QCOMPARE(names, expected);
        QCOMPARE(e.weights.tensors[0].shape, (Shape{4, 2, 3, 3}));  // [out, in, kh, kw]
        QCOMPARE(e.weights.tensors[6].shape, (Shape{3, 36}));       // [out, in]
        for (const char* line :
             {"nn.Conv2d(2, 4, kernel_size=3, stride=2, padding=1, bias=True)",
              "nn.BatchNorm2d(4, eps=0.001, momentum=0.2)", "nn.LeakyReLU(negative_slope=0.01)",
              "nn.Dropout(p=0.1)", "nn.Linear(36, 3, bias=False)",
              "nn.BatchNorm1d(3, eps=1e-05, momentum=0.1)", "nn.GELU(approximate=\"tanh\"),  # 7 GELUTanh",
              "INPUT_SHAPE = (2, 6, 6)", "at step 9"})
            QVERIFY2(e.script.find(line) != std::string::npos, line);
    }

    // The module is torch.nn's or a class the layer's definition gives the script; the device op
    // is one the CUDA plan runs or NoDeviceOp, which refuses the network there (test_device_plan).
    void everyRegisteredKindHasItsModuleAndItsDeviceOp() {
        for (const LayerKind& kind : layer_registry()) {
            const auto layer = make_layer(new_layer_json(kind));
            const PytorchModule module = layer->pytorch_module(build_on_some_input(*layer));
            const std::string what = kind.name + ": " + module.expression;
            const std::string class_name = module.expression.substr(0, module.expression.find('('));
            QVERIFY2(!class_name.empty() && module.expression.back() == ')', what.c_str());
            if (module.definition.empty())
                QVERIFY2(class_name.rfind("nn.", 0) == 0, what.c_str());
            else
                QVERIFY2(module.definition.rfind("class " + class_name + "(", 0) == 0, what.c_str());
            const DeviceOp op = layer->device_op();
            QVERIFY2(!op.valueless_by_exception(), kind.name.c_str());
        }
    }

    // The run's loss (the loss registry's module) and optimizer (the optimizer registry's
    // constructor over the parameters as the run decayed them: weights, not biases or
    // normalisation parameters).
    void pytorchLossAndOptimizer() {
        const nlohmann::json description = {{"loss", "mse"},
                                            {"layers",
                                             {{{"type", "Linear"}, {"out", 4}},
                                              {{"type", "BatchNorm"}},
                                              {{"type", "Linear"}, {"out", 1}, {"bias", false}}}}};
        Network net = Network::from_json(description);
        net.build({3});
        net.init(1);
        PytorchExportInfo info;
        info.title = "t";
        info.weights_file = "t.safetensors";
        const PytorchExport unknown = make_pytorch_export(description, network_weights(net, 1), info);
        QVERIFY(unknown.script.find(
                    "raise NotImplementedError(\"the run's optimizer settings could not be read") !=
                std::string::npos);
        const OptimizerConfig adamw{.kind = "adamw", .weight_decay = 0.1f, .beta2 = 0.95f};
        info.optimizer = optimizer_named("adamw").pytorch(adamw, 6e-4f, pytorch_parameter_groups(0.1f));
        const PytorchExport e = make_pytorch_export(description, network_weights(net, 1), info);
        for (const char* line :
             {"LOSS = nn.MSELoss()\n", "DECAYED_PARAMETERS = (\"0.weight\", \"2.weight\")\n",
              "def parameter_groups(model, weight_decay):", "the regression outputs",
              "    return torch.optim.AdamW(parameter_groups(model, weight_decay=0.1), lr=6e-04, "
              "betas=(0.9, 0.95), eps=1e-08)\n"})
            QVERIFY2(e.script.find(line) != std::string::npos, line);
    }

    void weightsThatDoNotFitAreRefused() {
        const nlohmann::json description = {
            {"layers", {{{"type", "Linear"}, {"out", 3}}, {{"type", "ReLU"}}}}};
        Network net = Network::from_json(description);
        net.build({4});
        net.init(1);
        NetworkWeights w = network_weights(net, 1);
        PytorchExportInfo info;
        w.tensors[0].shape = {4, 3};
        EXPECT_THROW_WITH(make_pytorch_export(description, w, info), "layer 0 Linear weight");
        w = network_weights(net, 1);
        w.tensors.pop_back();
        EXPECT_THROW_WITH(make_pytorch_export(description, w, info),
                          "the network has 15 parameters, the weights hold 12 values");
        EXPECT_THROW_WITH(load_network_weights(net, w), "end before layer 0 Linear bias");
        w = network_weights(net, 1);
        w.tensors.push_back(w.tensors.back());
        EXPECT_THROW_WITH(make_pytorch_export(description, w, info), "more than the network");
    }
};

QTEST_GUILESS_MAIN(TestSafetensorsExport)
#include "test_safetensors_export.moc"
