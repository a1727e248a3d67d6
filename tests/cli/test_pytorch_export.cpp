// The PyTorch export round trip (issue 17, item 4): a run trained through mpwb-cli, exported with
// `runs export --safetensors --pytorch`, and a conv net with BatchNorm, pooling, Flatten and every
// activation of the activation table, exported through the core API, give PyTorch outputs equal
// to ours within FP32 tolerance (tests/cli/check_pytorch_export.py compares), with the safetensors
// package where it is installed and with the script's own numpy reader (forced by
// MPWB_EXPORT_NO_SAFETENSORS); a transposed weight is caught. Needs a python3 that imports torch
// and numpy: where there is none, the test says why and exits 77, which CTest reports as skipped.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "core/backend/backend.h"
#include "core/common/rng.h"
#include "core/nn/network_weights.h"
#include "core/nn/pytorch_export.h"
#include "core/precision/precision_policy.h"
#include "sessions/run_export.h"
#include "sessions/run_store.h"
#include "sessions/sqlite_db.h"
#include "tests/cli/program_runner.h"
#include "tests/cli/torch_python.h"

using namespace mpwb;

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");
const QString kChecker = QStringLiteral(MPWB_SOURCE_DIR "/tests/cli/check_pytorch_export.py");

void write_floats(const QString& path, const Tensor& t) {
    std::ofstream f(path.toStdString(), std::ios::binary);
    f.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.numel() * sizeof(float)));
    QVERIFY(f.good());
}

// Our outputs in eval mode (dropout off, BatchNorm on its running statistics), FP32.
Tensor our_outputs(Network& network, const Tensor& x) {
    auto backend = make_cpu_backend();
    const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::FP32);
    LayerContext ctx{*backend, Format::FP32, false, nullptr};
    const Tensor& y = network.forward(ctx, x, policy);
    Tensor out(y.shape());
    std::copy(y.span().begin(), y.span().end(), out.span().begin());
    return out;
}

Tensor random_inputs(const Shape& sample, int64_t batch, uint64_t seed) {
    Tensor x(with_batch(batch, sample));
    Rng rng(seed);
    for (float& v : x.span()) v = rng.uniform(-2.0f, 2.0f);
    return x;
}

}  // namespace

class TestPytorchExport : public QObject {
    Q_OBJECT

public:
    bool skipped() const { return python_.isEmpty(); }

private:
    QTemporaryDir dir_;
    QString python_, why_;

    QString path(const QString& name) const { return dir_.filePath(name); }

    // Writes the case file for the checker and runs it; its exit status (0 agree, 1 differ).
    // An empty `weights`: the script's default file. `extra`: more keys of the case.
    int check(const QString& name, const QString& script, const QString& weights, const Tensor& x,
              const Tensor& y, const QString& reader, bool force_numpy, const nlohmann::json& extra = {}) {
        write_floats(path(name + ".in"), x);
        write_floats(path(name + ".out"), y);
        nlohmann::json c{
            {"script", script.toStdString()},
            {"weights", weights.isEmpty() ? nlohmann::json() : nlohmann::json(weights.toStdString())},
            {"inputs", path(name + ".in").toStdString()},
            {"input_shape", x.shape()},
            {"outputs", path(name + ".out").toStdString()},
            {"output_shape", y.shape()},
            {"reader", reader.toStdString()}};
        if (extra.is_object()) c.update(extra);
        std::ofstream(path(name + ".json").toStdString()) << c.dump();
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        if (force_numpy) env.insert("MPWB_EXPORT_NO_SAFETENSORS", "1");
        p.setProcessEnvironment(env);
        p.setWorkingDirectory(dir_.path());  // where a text that ran as code would leave its file
        p.start(python_, {kChecker, path(name + ".json")});
        if (!p.waitForFinished(300000)) return -1;
        std::printf("%s%s", p.readAllStandardOutput().constData(), p.readAllStandardError().constData());
        return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    }

    // A network with every kind the export maps, on a small image-like input, its BatchNorm
    // statistics and affine parameters away from their initial values so eval mode matters.
    // Every entry of the activation table is in it: those not placed below go before the last
    // Linear.
    static Network conv_network(nlohmann::json& description) {
        description = {
            {"layers",
             {{{"type", "Conv2d"}, {"out_channels", 6}, {"kernel", 3}, {"stride", 1}, {"padding", 1}},
              {{"type", "BatchNorm"}, {"momentum", 0.2}, {"eps", 1e-3}},
              {{"type", "LeakyReLU"}, {"slope", 0.05}},
              {{"type", "MaxPool2d"}, {"kernel", 2}, {"stride", 2}, {"padding", 0}},
              {{"type", "Conv2d"}, {"out_channels", 5}, {"kernel", 3}, {"stride", 2}, {"padding", 1}},
              {{"type", "GELU"}},
              {{"type", "AvgPool2d"}, {"kernel", 2}, {"stride", 1}, {"padding", 1}},
              {{"type", "Flatten"}},
              {{"type", "Dropout"}, {"p", 0.3}},
              {{"type", "Linear"}, {"out", 7}},
              {{"type", "BatchNorm"}},
              {{"type", "Tanh"}},
              {{"type", "Linear"}, {"out", 5}, {"bias", false}},
              {{"type", "Sigmoid"}},
              {{"type", "Linear"}, {"out", 3}},
              {{"type", "ReLU"}}}}};
        auto& layers = description["layers"];
        for (const ActivationInfo& a : activation_infos()) {
            if (std::any_of(layers.begin(), layers.end(), [&](const auto& l) { return l["type"] == a.name; }))
                continue;
            nlohmann::json layer{{"type", a.name}};
            if (a.has_slope) layer["slope"] = 0.2;
            layers.insert(layers.end() - 2, layer);
        }
        Network network = Network::from_json(description);
        network.build({3, 12, 12}, 8);
        network.init(7);
        Rng rng(11);
        for (size_t i = 0; i < network.size(); ++i) {
            if (network.layer(i).kind() != "BatchNorm") continue;
            for (Parameter* p : network.layer(i).parameters())
                for (float& v : p->value.span()) v = rng.uniform(0.5f, 1.5f);
            const auto buffers = network.layer(i).buffers();
            for (float& v : buffers[0]->span()) v = rng.uniform(-0.5f, 0.5f);
            for (float& v : buffers[1]->span()) v = rng.uniform(0.5f, 2.0f);
        }
        return network;
    }

    // Our outputs on x of the network and final weights run `id` of `db` stored.
    static Tensor stored_run_outputs(const QString& db, int64_t id, const Tensor& x) {
        RunStore store(db.toStdString());
        const auto weights = store.final_weights(id);
        if (!weights) throw std::runtime_error("the run has no final weights");
        Network network = Network::from_json(nlohmann::json::parse(store.get_run(id).network_json));
        network.build(weights->input_shape, x.shape()[0]);
        load_network_weights(network, *weights);
        return our_outputs(network, x);
    }

    // Gives run `id` of `db` the name and the CSV dataset path (normalised, so the path is in the
    // script's NORMALISATION), straight in the database, as a bundle or a task database brings
    // them, and exports it for PyTorch into the test folder. Returns the export's error, if any.
    std::string export_with_texts(const QString& db, int64_t id, const std::string& name,
                                  const std::string& data_path, const std::string& weights_file,
                                  const std::string& script) try {
        {
            RunStore store(db.toStdString());
            nlohmann::json config = nlohmann::json::parse(store.get_run(id).config_json);
            config["dataset"]["kind"] = "csv";
            config["dataset"]["path"] = data_path;
            config["dataset"]["normalize"] = true;
            sqlite::Db raw(db.toStdString(), SQLITE_OPEN_READWRITE);
            sqlite::Stmt(raw, "UPDATE runs SET name=?, config_json=? WHERE id=?")
                .bind(1, name)
                .bind(2, config.dump())
                .bind(3, id)
                .run("setting the texts");
        }
        RunStore store(db.toStdString());
        export_run_for_pytorch(store, id, (dir_.path() + "/").toStdString() + weights_file,
                               path(QString::fromStdString(script)).toStdString());
        return {};
    } catch (const std::exception& e) {
        return e.what();
    }

    // The conv network's export written to files; returns our outputs on x.
    Tensor export_conv(const QString& stem, const Tensor& x, NetworkWeights* weights_out = nullptr) {
        nlohmann::json description;
        Network network = conv_network(description);
        const NetworkWeights weights = network_weights(network, 1);
        PytorchExportInfo info;
        info.title = "test conv net";
        info.weights_file = (stem + ".safetensors").toStdString();
        const PytorchExport e = make_pytorch_export(description, weights, info);
        write_safetensors_file(path(stem + ".safetensors").toStdString(), e.weights);
        write_new_file(path(stem + ".py").toStdString(), e.script.data(), e.script.size(), "script");
        if (weights_out) *weights_out = weights;
        return our_outputs(network, x);
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        python_ = find_torch_python(why_);
        if (python_.isEmpty()) std::printf("SKIP: no python3 with torch and numpy (%s)\n", qPrintable(why_));
    }

    // QTemporaryDir cannot remove a file whose name is not UTF-8 (hostileTextsStayInLiterals
    // writes one): the folder goes here, by its bytes.
    void cleanupTestCase() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_.path().toStdString(), ignored);
    }

    // spiral-mlp trained 40 steps by mpwb-cli, exported by mpwb-cli, our outputs from the weights
    // the store holds.
    void trainedRunRoundTrip() {
        if (python_.isEmpty()) QSKIP(qPrintable("no python3 with torch and numpy: " + why_));
        const QString db = path("runs.sqlite");
        const auto train =
            run_program(kCli, {"train", "--preset", "spiral-mlp", "--max-steps", "40", "--db", db});
        QVERIFY2(train.exit_code == 0, train.err.constData());
        const auto exp = run_program(kCli, {"runs", "export", "1", "--safetensors", path("mlp.safetensors"),
                                            "--pytorch", path("mlp.py"), "--db", db});
        QVERIFY2(exp.exit_code == 0, exp.err.constData());
        QVERIFY(exp.out.contains("step 40"));

        RunStore store(db.toStdString());
        const Run run = store.get_run(1);
        const auto weights = store.final_weights(1);
        QVERIFY(weights);
        QCOMPARE(weights->step, int64_t{40});
        Network network = Network::from_json(nlohmann::json::parse(run.network_json));
        network.build(weights->input_shape, 32);
        load_network_weights(network, *weights);
        const Tensor x = random_inputs(weights->input_shape, 32, 3);
        const Tensor y = our_outputs(network, x);
        QCOMPARE(check("mlp", path("mlp.py"), path("mlp.safetensors"), x, y, "any", false), 0);
        QCOMPARE(check("mlp_numpy", path("mlp.py"), path("mlp.safetensors"), x, y, "numpy", true), 0);
    }

    // Issue 24: the run's name, the safetensors file name and the dataset path are texts the
    // script did not write, with quotes, backslashes, "\N{BULLET}", newlines, triple quotes, a
    // non-ASCII character and (name and file name) a byte that is not UTF-8, each carrying code
    // that would leave a file `pwned` if it ran. The script with them has the code of the one
    // with plain texts (Python's ast, string constants masked), each text reads back byte for
    // byte, the script runs, finds its weights by the odd file name and gives our outputs, and
    // no `pwned` appears.
    void hostileTextsStayInLiterals() {
        if (python_.isEmpty()) QSKIP(qPrintable("no python3 with torch and numpy: " + why_));
        const QString db = path("texts.sqlite");
        const auto train =
            run_program(kCli, {"train", "--preset", "spiral-mlp", "--max-steps", "5", "--db", db});
        QVERIFY2(train.exit_code == 0, train.err.constData());
        const std::string payload = "__import__(\"os\").system(\"touch pwned\")";
        const std::string odd = "\"\"\";" + payload + ";\"\"\" '''+" + payload +
                                "+''' \\N{BULLET} \\x41 \\ \"q\" 'q' \xe2\x80\xa2\n#" + payload + "\n";
        const std::string name = "run " + odd + " \xff\xfe end";
        const std::string weights_file = "w " + odd + " \xff.safetensors";
        const std::string data_path = path("d ").toStdString() + odd + ".csv";  // JSON: UTF-8 only
        const std::string plain_error = export_with_texts(db, 1, "plain", path("plain.csv").toStdString(),
                                                          "plain.safetensors", "plain.py");
        QVERIFY2(plain_error.empty(), plain_error.c_str());
        const std::string odd_error = export_with_texts(db, 1, name, data_path, weights_file, "odd.py");
        QVERIFY2(odd_error.empty(), odd_error.c_str());

        const auto hex = [](const std::string& bytes) {
            return QByteArray::fromStdString(bytes).toHex().toStdString();
        };
        const nlohmann::json texts{{"same_code_as", path("plain.py").toStdString()},
                                   {"texts_hex",
                                    {{"RUN_TITLE", hex(name)},
                                     {"WEIGHTS_FILE", hex(weights_file)},
                                     {"NORMALISATION", hex(data_path)}}}};
        const Tensor x = random_inputs({2}, 16, 9);
        const Tensor y = stored_run_outputs(db, 1, x);
        QCOMPARE(check("odd", path("odd.py"), {}, x, y, "any", false, texts), 0);
        // The checker fails when a text does not read back.
        nlohmann::json wrong = texts;
        wrong["texts_hex"]["WEIGHTS_FILE"] = hex(weights_file + "x");
        QCOMPARE(check("odd_wrong", path("odd.py"), {}, x, y, "any", false, wrong), 1);

        QProcess script;
        script.setWorkingDirectory(dir_.path());
        script.start(python_, {path("odd.py")});
        QVERIFY(script.waitForFinished(300000));
        const QByteArray said = script.readAllStandardOutput() + script.readAllStandardError();
        QVERIFY2(script.exitStatus() == QProcess::NormalExit && script.exitCode() == 0, said.constData());
        QVERIFY2(said.contains("weights read with"), said.constData());
        QVERIFY2(!QFile::exists(path("pwned")), "a text of the script ran as code");
    }

    // Statistics that are not finite (a dataset whose values overflow the float sums) are
    // written as Python floats, not as the names nan and inf, which the script does not define.
    void nonFiniteStatisticsAreFloats() {
        if (python_.isEmpty()) QSKIP(qPrintable("no python3 with torch and numpy: " + why_));
        const nlohmann::json description = {{"layers", {{{"type", "Linear"}, {"out", 2}}}}};
        Network network = Network::from_json(description);
        network.build({3});
        network.init(1);
        PytorchExportInfo info;
        info.weights_file = "finite.safetensors";
        info.normalisation.applied = true;
        info.normalisation.stats_shape = {3};
        info.normalisation.mean = {std::numeric_limits<float>::quiet_NaN(), 1.0f, 0.0f};
        info.normalisation.stddev = {1.0f, std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity()};
        const PytorchExport e = make_pytorch_export(description, network_weights(network, 1), info);
        write_new_file(path("finite.py").toStdString(), e.script.data(), e.script.size(), "script");
        const auto r =
            run_program(python_, {"-c",
                                  "import importlib.util, sys, torch\n"
                                  "spec = importlib.util.spec_from_file_location('m', sys.argv[1])\n"
                                  "m = importlib.util.module_from_spec(spec)\n"
                                  "spec.loader.exec_module(m)\n"
                                  "print(m.normalise(torch.ones(1, 3)).tolist())\n",
                                  path("finite.py")});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QCOMPARE(r.out.trimmed(), QByteArray("[[nan, 0.0, -0.0]]"));
    }

    void convNetRoundTrip() {
        if (python_.isEmpty()) QSKIP(qPrintable("no python3 with torch and numpy: " + why_));
        const Tensor x = random_inputs({3, 12, 12}, 8, 5);
        const Tensor y = export_conv("conv", x);
        QCOMPARE(check("conv", path("conv.py"), path("conv.safetensors"), x, y, "any", false), 0);
        QCOMPARE(check("conv_numpy", path("conv.py"), path("conv.safetensors"), x, y, "numpy", true), 0);
    }

    // Two transformer blocks (issue 26: every option of the block in one of them) give PyTorch
    // outputs equal to ours: the script's TransformerBlock class has our parameter names and math.
    // A block's q and k heads swapped in the weights (qkv rows) are caught.
    void transformerBlocksRoundTrip() {
        if (python_.isEmpty()) QSKIP(qPrintable("no python3 with torch and numpy: " + why_));
        const nlohmann::json description = {
            {"layers",
             {{{"type", "TransformerBlock"}, {"heads", 2}, {"qk_norm", true}, {"swiglu", true}},
              {{"type", "TransformerBlock"}, {"heads", 4}, {"rmsnorm", true}, {"bias", false}, {"eps", 1e-4}},
              {{"type", "TransformerBlock"}, {"heads", 1}, {"mlp_ratio", 2}, {"attn_dropout", 0.1}}}}};
        Network network = Network::from_json(description);
        network.build({6, 16}, 4);
        network.init(3);
        Rng rng(12);
        for (Parameter* p : network.parameters())
            for (float& v : p->value.span()) v += rng.uniform(-0.2f, 0.2f);
        const NetworkWeights weights = network_weights(network, 1);
        PytorchExportInfo info;
        info.title = "test transformer blocks";
        info.weights_file = "gpt.safetensors";
        const PytorchExport e = make_pytorch_export(description, weights, info);
        write_safetensors_file(path("gpt.safetensors").toStdString(), e.weights);
        write_new_file(path("gpt.py").toStdString(), e.script.data(), e.script.size(), "script");
        const Tensor x = random_inputs({6, 16}, 4, 8);
        const Tensor y = our_outputs(network, x);
        QCOMPARE(check("gpt", path("gpt.py"), path("gpt.safetensors"), x, y, "any", false), 0);
        SafetensorsFile file = read_safetensors_file(path("gpt.safetensors").toStdString());
        for (auto& t : file.tensors)
            if (t.name == "1.attn.qkv.weight")
                std::swap_ranges(t.values.begin(), t.values.begin() + 16 * 16, t.values.begin() + 16 * 16);
        write_safetensors_file(path("gpt_swapped.safetensors").toStdString(), file);
        QCOMPARE(check("gpt_swapped", path("gpt.py"), path("gpt_swapped.safetensors"), x, y, "any", false),
                 1);
    }

    // The check can fail: the first Linear's weight written transposed (same shape in the header,
    // values in [in, out] order) is caught.
    void transposedWeightIsCaught() {
        if (python_.isEmpty()) QSKIP(qPrintable("no python3 with torch and numpy: " + why_));
        const Tensor x = random_inputs({3, 12, 12}, 8, 6);
        NetworkWeights weights;
        const Tensor y = export_conv("bad", x, &weights);
        SafetensorsFile file = read_safetensors_file(path("bad.safetensors").toStdString());
        bool transposed = false;
        for (auto& t : file.tensors) {
            if (t.name != "9.weight") continue;
            const int64_t rows = t.shape[0], cols = t.shape[1];
            std::vector<float> v(t.values.size());
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c) v[c * rows + r] = t.values[r * cols + c];
            t.values = v;
            transposed = true;
        }
        QVERIFY(transposed);
        write_safetensors_file(path("transposed.safetensors").toStdString(), file);
        QCOMPARE(check("transposed", path("bad.py"), path("transposed.safetensors"), x, y, "any", false), 1);
        QCOMPARE(
            check("transposed_numpy", path("bad.py"), path("transposed.safetensors"), x, y, "numpy", true),
            1);
    }
};

int main(int argc, char** argv) {
    TestPytorchExport test;
    const int failures = QTest::qExec(&test, argc, argv);
    return failures == 0 && test.skipped() ? 77 : failures;
}

#include "test_pytorch_export.moc"
