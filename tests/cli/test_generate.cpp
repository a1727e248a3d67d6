// `mpwb-cli generate RUN` as a user runs it: a tiny GPT trained on a repeating text continues that
// text greedily, the same seed gives the same draws, the prompt is printed first, and every
// refusal names its cause (a character outside the run's vocabulary, a run that did not train on
// text, a run that does not exist, settings out of range).
#include <QFile>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "tests/cli/program_runner.h"

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");

// One block, d 16: enough to learn a period-4 text in a few hundred steps.
const char* kTinyGpt = R"({"name": "tiny-gpt", "loss": "token_cross_entropy", "layers": [
  {"type": "Embedding", "d_model": 16, "context": 8},
  {"type": "TransformerBlock", "heads": 2},
  {"type": "LayerNorm"},
  {"type": "Linear", "out": 0}]})";

}  // namespace

class TestGenerate : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString db_;

    QString path(const QString& name) const { return dir_.filePath(name); }

    ProgramResult cli(QStringList args) {
        args << "--db" << db_;
        return run_program(kCli, args);
    }

    void write(const QString& name, const QByteArray& bytes) {
        QFile f(path(name));
        QVERIFY(f.open(QIODevice::WriteOnly));
        QCOMPARE(f.write(bytes), qint64(bytes.size()));
    }

    void expect_refusal(const QStringList& args, const char* needle) {
        const auto r = cli(args);
        QVERIFY2(r.exit_code != 0, r.out.constData());
        QVERIFY2(r.err.contains(needle), r.err.constData());
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        db_ = path("runs.sqlite");
        write("net.json", kTinyGpt);
        write("text.txt", QByteArray("abcd").repeated(600));
        const auto text_run = cli({"train", "--network", path("net.json"), "--dataset", "text", "--data-path",
                                   path("text.txt"), "--tokenizer", "char", "--context", "8", "--batch", "16",
                                   "--max-steps", "300", "--lr", "0.01", "--eval-every", "300"});
        QVERIFY2(text_run.exit_code == 0, text_run.err.constData());
        const auto spiral_run = cli({"train", "--preset", "spiral-mlp", "--max-steps", "3"});
        QVERIFY2(spiral_run.exit_code == 0, spiral_run.err.constData());
    }

    void greedyContinuesTheText() {
        const auto r = cli({"generate", "1", "--prompt", "ab", "--tokens", "10", "--temperature", "0"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QCOMPARE(r.out, QByteArray("abcdabcdabcd\n"));
    }

    void aSeedRepeatsItsDraws() {
        const QStringList args{"generate",      "1",  "--prompt", "a", "--tokens", "40",
                               "--temperature", "20", "--seed"};
        const auto first = cli(args + QStringList{"7"});
        const auto again = cli(args + QStringList{"7"});
        const auto other = cli(args + QStringList{"8"});
        QVERIFY2(first.exit_code == 0, first.err.constData());
        QCOMPARE(again.out, first.out);
        QVERIFY(other.out != first.out);  // 40 draws at temperature 20 over 4 tokens
        QVERIFY(first.out.startsWith("a"));
        QCOMPARE(first.out.size(), qsizetype(1 + 40 + 1));
    }

    void refusals() {
        expect_refusal({"generate", "1", "--prompt", "abz"}, "'z'");
        expect_refusal({"generate", "2"}, "did not train on text");
        expect_refusal({"generate", "99"}, "99");
        expect_refusal({"generate", "1", "--tokens", "0"}, "--tokens");
        expect_refusal({"generate", "1", "--temperature", "-1"}, "--temperature");
    }
};

QTEST_GUILESS_MAIN(TestGenerate)
#include "test_generate.moc"
