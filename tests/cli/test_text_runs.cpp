// Text runs through every part of the store as a user reaches them with mpwb-cli (issue 26, items 5
// and 8): the run table, `runs show` and `runs compare` name a text run's figures per token (next-
// token accuracy, loss in nats and in bits per character or byte, tokens/s); the example GPT sweep
// (docs/examples/gpt-sweep.json: two network variants x two learning rates) plans and runs, each
// run training its variant's network at its variant's context; a text run interrupted mid-way and
// resumed ends with the uninterrupted run's final weights, and its bundle, imported into a fresh
// store, brings the vocabulary along so `generate` writes the same text there.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <cmath>

#include "core/nn/network.h"
#include "tests/cli/held_run.h"
#include "tests/cli/program_runner.h"

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");
const QString kExampleSpec = QStringLiteral(MPWB_SOURCE_DIR "/docs/examples/gpt-sweep.json");
const QString kExampleText = QStringLiteral(MPWB_SOURCE_DIR "/docs/examples/gpt-sweep.txt");
constexpr int kExitResumable = 75;

const char* kTinyGpt = R"({"name": "tiny-gpt", "loss": "token_cross_entropy", "layers": [
  {"type": "Embedding", "d_model": 16, "context": 8},
  {"type": "TransformerBlock", "heads": 2},
  {"type": "LayerNorm"},
  {"type": "Linear", "out": 0}]})";

QJsonObject parse_object(const QByteArray& text) {
    const auto doc = QJsonDocument::fromJson(text);
    return doc.isObject() ? doc.object() : QJsonObject{};
}

// The parameters of a stored (resolved) network description at a window of `context` tokens.
std::int64_t parameter_count(const QJsonObject& network, std::int64_t context) {
    const auto description =
        nlohmann::json::parse(QJsonDocument(network).toJson(QJsonDocument::Compact).toStdString());
    std::int64_t total = 0;
    for (const auto& layer : mpwb::Network::inspect(description, mpwb::Shape{context}, 1))
        total += layer.parameters;
    return total;
}

}  // namespace

class TestTextRuns : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    QString fresh() { return dir_.filePath(QString("runs_%1.sqlite").arg(++n_)); }
    QString path(const QString& name) const { return dir_.filePath(name); }

    ProgramResult cli(const QStringList& args) { return run_program(kCli, args); }

    QJsonObject show(const QString& db, std::int64_t run) {
        return parse_object(cli({"runs", "show", QString::number(run), "--json", "--db", db}).out);
    }

    QStringList text_run(const QString& db, const QString& tokenizer, int steps) {
        return {"train",
                "--network",
                path("net.json"),
                "--dataset",
                "text",
                "--data-path",
                path("text.txt"),
                "--tokenizer",
                tokenizer,
                "--context",
                "8",
                "--batch",
                "16",
                "--max-steps",
                QString::number(steps),
                "--lr",
                "0.01",
                "--eval-every",
                "20",
                "--backend",
                "cpu",
                "--quiet",
                "--db",
                db};
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QFile net(path("net.json"));
        QVERIFY(net.open(QIODevice::WriteOnly));
        net.write(kTinyGpt);
        net.close();
        QFile text(path("text.txt"));
        QVERIFY(text.open(QIODevice::WriteOnly));
        text.write(QByteArray("the quick brown fox jumps over the lazy dog.\n").repeated(40));
    }

    // The figures of a text run, per token and with their units, in runs list, show and compare.
    void figuresArePerToken() {
        const QString db = fresh();
        QCOMPARE(cli(text_run(db, "char", 40)).exit_code, 0);
        QCOMPARE(cli(text_run(db, "byte", 40)).exit_code, 0);
        QCOMPARE(
            cli({"train", "--preset", "spiral-mlp", "--max-steps", "3", "--quiet", "--db", db}).exit_code, 0);

        for (int run : {1, 2}) {
            const QJsonObject j = show(db, run);
            const QJsonObject text = j["text"].toObject();
            QCOMPARE(text["unit"].toString(), run == 1 ? QString("character") : QString("byte"));
            QCOMPARE(text["context"].toInteger(), 8);
            const double nats = j["summary"].toObject()["test_loss"].toDouble();
            QCOMPARE(text["test_loss_nats"].toDouble(), nats);
            QVERIFY(std::abs(text["test_bits_per_token"].toDouble() - nats / std::log(2.0)) < 1e-12 * nats);
            const double sps = j["summary"].toObject()["samples_per_second"].toDouble();
            QVERIFY(sps > 0);
            QCOMPARE(text["tokens_per_second"].toDouble(), sps * 8);
        }
        QVERIFY(!show(db, 3).contains("text"));  // the spiral run has no per-token figures

        const auto list = cli({"runs", "list", "--db", db});
        QVERIFY2(list.exit_code == 0, list.err.constData());
        QVERIFY2(list.out.contains("bits/character") && list.out.contains("bits/byte") &&
                     list.out.contains("tokens/s") && list.out.contains(" samples/s"),
                 list.out.constData());
        QVERIFY2(QString::fromUtf8(list.out).contains(QRegularExpression("\\n\\s*3 .* samples/s")),
                 list.out.constData());

        const auto one = cli({"runs", "show", "1", "--db", db});
        QVERIFY2(one.out.contains("per token (character-level text, windows of 8)") &&
                     one.out.contains("next-token accuracy") && one.out.contains("tokens/s"),
                 one.out.constData());

        const auto compare = cli({"runs", "compare", "1,2", "--db", db});
        QVERIFY2(compare.exit_code == 0, compare.err.constData());
        for (const char* needle : {"final next-token accuracy", "final test loss (nats/token)",
                                   "bits/character", "bits/byte", "tokens/s"})
            QVERIFY2(compare.out.contains(needle),
                     (needle + std::string(" in:\n") + compare.out.toStdString()).c_str());
        const auto mixed = cli({"runs", "compare", "1,3", "--db", db});
        QVERIFY2(mixed.out.contains("final test accuracy (text: next-token)"), mixed.out.constData());
    }

    // The example GPT sweep: 2 variants x 2 learning rates, each run training its variant's network
    // at its variant's context; the comparison of its runs names the variants.
    void exampleGptSweepTrainsEachVariant() {
        QFile example(kExampleSpec);
        QVERIFY(example.open(QIODevice::ReadOnly));
        QJsonObject spec = QJsonDocument::fromJson(example.readAll()).object();
        QJsonObject training = spec["training"].toObject();
        QJsonObject dataset = training["dataset"].toObject();
        dataset["path"] = kExampleText;  // the example names it from the repository root
        training["dataset"] = dataset;
        spec["training"] = training;
        QFile copy(path("gpt-sweep.json"));
        QVERIFY(copy.open(QIODevice::WriteOnly));
        copy.write(QJsonDocument(spec).toJson());
        copy.close();

        const auto plan = cli({"sweep", "plan", copy.fileName(), "--json"});
        QVERIFY2(plan.exit_code == 0, plan.err.constData());
        QCOMPARE(parse_object(plan.out)["runs"].toInt(), 4);

        const QString db = fresh();
        const auto sweep =
            cli({"sweep", "run", copy.fileName(), "--jobs", "1", "--db", db, "--backend", "cpu"});
        QVERIFY2(sweep.exit_code == 0, sweep.err.constData());

        const QJsonArray variants = spec["axes"].toArray()[0].toObject()["values"].toArray();
        std::map<QString, std::int64_t> parameters;  // per variant
        QStringList ids;
        for (int run = 1; run <= 4; ++run) {
            const QJsonObject j = show(db, run);
            QVERIFY2(j["status"].toString() == "FINISHED", qPrintable(j["status"].toString()));
            const QJsonObject variant = variants[(run - 1) / 2].toObject();  // grid: the lr varies fastest
            const QString name = variant["name"].toString();
            QVERIFY2(j["name"].toString().contains("network=" + name), qPrintable(j["name"].toString()));
            const QJsonObject network = j["network"].toObject();
            QCOMPARE(network["layers"].toArray().size(), variant["layers"].toArray().size());
            const QJsonObject embedding = network["layers"].toArray()[0].toObject();
            const QJsonObject declared = variant["layers"].toArray()[0].toObject();
            QCOMPARE(embedding["d_model"].toInt(), declared["d_model"].toInt());
            QCOMPARE(j["config"].toObject()["dataset"].toObject()["context"].toInt(),
                     declared["context"].toInt());
            // What trained: the final weights hold the variant's parameters, no more, no fewer.
            const QString weights = path(QString("run%1.safetensors").arg(run));
            const auto exported =
                cli({"runs", "export", QString::number(run), "--safetensors", weights, "--db", db});
            QVERIFY2(exported.exit_code == 0, exported.err.constData());
            const auto values = QRegularExpression(" (\\d+) values").match(QString::fromUtf8(exported.out));
            QVERIFY2(values.hasMatch(), exported.out.constData());
            const std::int64_t count = values.captured(1).toLongLong();
            QCOMPARE(count, parameter_count(network, declared["context"].toInt()));
            if (parameters.count(name)) QCOMPARE(count, parameters[name]);
            parameters[name] = count;
            ids << QString::number(run);
        }
        QCOMPARE(parameters.size(), std::size_t(2));
        QVERIFY(parameters.begin()->second != std::next(parameters.begin())->second);

        const auto compare = cli({"runs", "compare", ids.join(','), "--db", db});
        QVERIFY2(compare.exit_code == 0, compare.err.constData());
        for (const QJsonValue& v : variants)
            QVERIFY2(compare.out.contains(v.toObject()["name"].toString().toUtf8()), compare.out.constData());
        QVERIFY2(compare.out.contains("network.layers[0].context") && compare.out.contains("dataset.context"),
                 compare.out.constData());
    }

    // Interrupted at step 20 of 40 (SIGTERM after the hold), resumed: the final weights are the
    // uninterrupted run's. Its bundle brings the vocabulary: generate works in a fresh store and
    // writes what it writes in the run's own.
    void resumeAndBundleKeepTheRun() {
        const QString db = fresh(), reference_db = fresh();
        QStringList args = text_run(db, "char", 40) + QStringList{"--checkpoint-every", "10"};
        QProcess p;
        p.start(kCli, args + QStringList{"--hold-after-step", "20"});
        QVERIFY(p.waitForStarted(60000));
        const auto run = wait_until_held(db, p, 20);
        QVERIFY(run);
        ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), kExitResumable);
        QCOMPARE(read_only_store(db).get_run(*run).status, mpwb::RunStatus::Interrupted);
        const auto resumed =
            cli({"train", "--resume", QString::number(*run), "--db", db, "--quiet", "--backend", "cpu"});
        QVERIFY2(resumed.exit_code == 0, resumed.err.constData());
        QCOMPARE(cli(text_run(reference_db, "char", 40) + QStringList{"--checkpoint-every", "10"}).exit_code,
                 0);
        const QString digest = show(db, *run)["final_weights_digest"].toString();
        QVERIFY2(digest.size() >= 16, qPrintable(digest));
        QCOMPARE(digest, show(reference_db, 1)["final_weights_digest"].toString());

        const QString bundle = path("text.mpwb"), imported_db = fresh();
        const auto exported = cli({"runs", "export", QString::number(*run), "--out", bundle, "--db", db});
        QVERIFY2(exported.exit_code == 0, exported.err.constData());
        const auto imported = cli({"runs", "import", bundle, "--db", imported_db});
        QVERIFY2(imported.exit_code == 0, imported.err.constData());
        QCOMPARE(show(imported_db, 1)["final_weights_digest"].toString(), digest);
        QCOMPARE(show(imported_db, 1)["versions"].toObject()["vocabulary"],
                 show(db, *run)["versions"].toObject()["vocabulary"]);
        const QStringList generate{"--prompt", "the ", "--tokens", "30", "--seed", "3"};
        const auto here =
            cli(QStringList{"generate", QString::number(*run)} + generate + QStringList{"--db", db});
        const auto there = cli(QStringList{"generate", "1"} + generate + QStringList{"--db", imported_db});
        QVERIFY2(there.exit_code == 0, there.err.constData());
        QVERIFY(there.out.startsWith("the "));
        QCOMPARE(there.out, here.out);
    }
};

QTEST_GUILESS_MAIN(TestTextRuns)
#include "test_text_runs.moc"
