// The whole-GPT export round trip (issue 26, item 9): a tiny GPT (Embedding, a GELU block, a
// SwiGLU block with RMSNorm and QK-norm, LayerNorm, the Linear head, a z-loss) trained a few steps
// by mpwb-cli on a character-level text, exported with `runs export --pytorch`, gives in PyTorch
// our logits on a batch of windows within FP32 tolerance, our loss (z-loss included) through the
// script's LOSS, our token ids and text through its encode and decode, and through its greedy
// generate() the text `mpwb-cli generate --temperature 0` draws (tests/cli/check_gpt_export.py
// compares). A loss without the z-loss term is caught. Needs a python3 that imports torch: where
// there is none, the test says why and exits 77, which CTest reports as skipped.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/backend/cpu/cpu_backend.h"
#include "core/nn/loss_registry.h"
#include "core/precision/precision_policy.h"
#include "sessions/run_language_model.h"
#include "sessions/run_store.h"
#include "tests/cli/program_runner.h"
#include "tests/cli/torch_python.h"

using namespace mpwb;

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");
const QString kChecker = QStringLiteral(MPWB_SOURCE_DIR "/tests/cli/check_gpt_export.py");
constexpr int64_t kContext = 16, kWindows = 6;

// Two blocks with every option between them, and a z-loss large enough to matter at the checker's
// tolerance (1e-3 · log² Z with log Z near 3).
const char* const kTinyGpt = R"({"name": "tiny-gpt", "loss": "token_cross_entropy", "z_loss": 0.001,
  "layers": [
  {"type": "Embedding", "d_model": 32, "context": 16},
  {"type": "TransformerBlock", "heads": 2},
  {"type": "TransformerBlock", "heads": 4, "swiglu": true, "rmsnorm": true, "qk_norm": true},
  {"type": "LayerNorm"},
  {"type": "Linear", "out": 0}]})";

// Sentences of a few words in a seeded order: enough structure to learn something in 40 steps.
QByteArray corpus() {
    const char* words[] = {"the", "quick", "brown", "fox",   "jumps", "over",
                           "a",   "lazy",  "dog",   "while", "seven"};
    QByteArray text;
    uint32_t state = 12345;
    for (int line = 0; line < 150; ++line) {
        for (int w = 0; w < 8; ++w) {
            state = state * 1664525u + 1013904223u;
            text += words[(state >> 16) % std::size(words)];
            text += w == 7 ? '\n' : ' ';
        }
    }
    return text;
}

void write_floats(const QString& path, const Tensor& t) {
    std::ofstream f(path.toStdString(), std::ios::binary);
    f.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.numel() * sizeof(float)));
    QVERIFY(f.good());
}

}  // namespace

class TestGptExport : public QObject {
    Q_OBJECT

public:
    bool skipped() const { return python_.isEmpty(); }

private:
    QTemporaryDir dir_;
    QString python_, why_;

    QString path(const QString& name) const { return dir_.filePath(name); }

    // Runs the checker on the case; its exit status (0 agree, 1 differ).
    int check(const QString& name, const nlohmann::json& c) {
        std::ofstream(path(name + ".json").toStdString()) << c.dump();
        QProcess p;
        p.start(python_, {kChecker, path(name + ".json")});
        if (!p.waitForFinished(300000)) return -1;
        std::printf("%s%s", p.readAllStandardOutput().constData(), p.readAllStandardError().constData());
        return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    }

    // Our windows of the corpus, their targets and logits (FP32, eval mode) from the run's stored
    // weights, written for the checker; the case's keys for them, and our loss in `loss` and the
    // loss without its z-loss term in `loss_without_z`.
    nlohmann::json our_side(RunLanguageModel& model, const QByteArray& text, double& loss_without_z) {
        const std::vector<int32_t> ids = model.vocabulary.encode(text.toStdString());
        Tensor windows({kWindows, kContext}), targets({kWindows, kContext});
        for (int64_t w = 0; w < kWindows; ++w)
            for (int64_t t = 0; t < kContext; ++t) {
                const size_t at = static_cast<size_t>(w * 97 + t);  // windows that overlap a little
                windows[w * kContext + t] = static_cast<float>(ids.at(at));
                targets[w * kContext + t] = static_cast<float>(ids.at(at + 1));
            }
        CpuBackend backend;
        LayerContext ctx{backend, Format::FP32, false, nullptr};
        const Tensor logits = model.network.forward(ctx, windows, PrecisionPolicy::make(PrecisionKind::FP32));
        const LossDefinition& loss = loss_named(model.network.loss());
        const auto result = loss.on_host(backend, logits, targets, nullptr, 1.0f, model.network.z_loss());
        loss_without_z = result.loss;
        write_floats(path("windows.f32"), windows);
        write_floats(path("targets.f32"), targets);
        write_floats(path("logits.f32"), logits);
        return {{"windows", path("windows.f32").toStdString()},
                {"targets", path("targets.f32").toStdString()},
                {"logits", path("logits.f32").toStdString()},
                {"shape", logits.shape()},
                {"loss", result.loss + result.z_term}};
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        python_ = find_torch_python(why_);
        if (python_.isEmpty()) std::printf("SKIP: no python3 with torch and numpy (%s)\n", qPrintable(why_));
    }

    void exportedGptAgrees() {
        if (python_.isEmpty()) QSKIP(qPrintable("no python3 with torch and numpy: " + why_));
        const QString db = path("runs.sqlite");
        const QByteArray text = corpus();
        QFile file(path("corpus.txt")), net(path("net.json"));
        QVERIFY(file.open(QIODevice::WriteOnly) && file.write(text) == text.size());
        QVERIFY(net.open(QIODevice::WriteOnly) && net.write(kTinyGpt) > 0);
        file.close();
        net.close();
        const auto train = run_program(kCli, {"train",
                                              "--network",
                                              path("net.json"),
                                              "--dataset",
                                              "text",
                                              "--data-path",
                                              path("corpus.txt"),
                                              "--tokenizer",
                                              "char",
                                              "--context",
                                              "16",
                                              "--batch",
                                              "8",
                                              "--max-steps",
                                              "40",
                                              "--lr",
                                              "0.01",
                                              "--optimizer",
                                              "adamw",
                                              "--eval-every",
                                              "40",
                                              "--threads",
                                              "1",
                                              "--db",
                                              db});
        QVERIFY2(train.exit_code == 0, train.err.constData());
        const auto exported =
            run_program(kCli, {"runs", "export", "1", "--safetensors", path("gpt.safetensors"), "--pytorch",
                               path("gpt.py"), "--db", db});
        QVERIFY2(exported.exit_code == 0, exported.err.constData());
        const QString prompt = "the quick ";
        const auto generated = run_program(
            kCli, {"generate", "1", "--prompt", prompt, "--tokens", "20", "--temperature", "0", "--db", db});
        QVERIFY2(generated.exit_code == 0, generated.err.constData());
        QVERIFY(generated.out.endsWith('\n'));

        RunStore store(db.toStdString());
        RunLanguageModel model = load_run_language_model(store, 1);
        double loss_without_z = 0;
        nlohmann::json c = our_side(model, text, loss_without_z);
        const std::string sample = "a lazy fox\nover";
        const std::vector<int32_t> sample_ids = model.vocabulary.encode(sample);
        c.update({{"script", path("gpt.py").toStdString()},
                  {"weights", path("gpt.safetensors").toStdString()},
                  {"text", sample},
                  {"ids", sample_ids},
                  {"prompt", prompt.toStdString()},
                  {"generated", generated.out.chopped(1).toStdString()}});
        QCOMPARE(check("gpt", c), 0);
        // The check can fail: a loss without its z-loss term differs by about 1e-3 · log² Z.
        nlohmann::json no_z = c;
        no_z["loss"] = loss_without_z;
        QCOMPARE(check("gpt_no_z", no_z), 1);
    }
};

int main(int argc, char** argv) {
    TestGptExport test;
    const int failures = QTest::qExec(&test, argc, argv);
    return failures == 0 && test.skipped() ? 77 : failures;
}

#include "test_gpt_export.moc"
