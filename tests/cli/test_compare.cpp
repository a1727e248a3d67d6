// Tests of `mpwb-cli compare` and of the scaler-range errors `mpwb-cli train` reports, run through
// the built binary as a user runs it: exit status, stderr message and the JSON on stdout.
// The spiral preset keeps each run to a second or two on a loaded machine.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "core/train/decision_boundary.h"
#include "sessions/run_store.h"
#include "program_runner.h"

namespace {

using CliResult = ProgramResult;

CliResult run_cli(const QStringList& args) {
    return run_program(QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli"), args);
}

QJsonObject parse_object(const QByteArray& text) {
    QJsonParseError error;
    const auto doc = QJsonDocument::fromJson(text, &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject()) return {};
    return doc.object();
}

}  // namespace

class TestCompare : public QObject {
    Q_OBJECT

private slots:
    // A headless run on a 2-D set stores its final decision boundary, as the workbench does, so
    // the run reopened on a desktop shows it.
    void trainRecordsTheDecisionBoundary() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const auto r = run_cli({"train", "--preset", "spiral-mlp", "--epochs", "2", "--backend", "cpu",
                                "--db", db, "--json", "--quiet"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonObject out = parse_object(r.out);
        QVERIFY2(!out.isEmpty(), r.out.constData());
        mpwb::RunStore store(db.toStdString());
        const auto stored = store.boundary(out["run_id"].toInteger());
        QVERIFY(stored.has_value());
        QCOMPARE(stored->first, out["steps"].toInteger());
        const mpwb::BoundaryGrid grid = mpwb::boundary_from_blob(stored->second);
        QCOMPARE(grid.nx, 80);
        QCOMPARE(grid.ny, 80);
        QCOMPARE(grid.classes, 2);
        for (int c : grid.predicted) QVERIFY(c == 0 || c == 1);
    }

    // Each run of a comparison is recorded the same way: its final boundary, on the same grid.
    void compareRecordsEachRunsBoundary() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const auto r = run_cli({"compare", "--preset", "spiral-mlp", "--precisions", "fp32,bf16-mixed",
                                "--epochs", "1", "--backend", "cpu", "--db", db, "--json", "--quiet"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonArray runs = parse_object(r.out)["runs"].toArray();
        QCOMPARE(runs.size(), 2);
        mpwb::RunStore store(db.toStdString());
        for (const auto& v : runs) {
            const QJsonObject run = v.toObject();
            const auto stored = store.boundary(run["run_id"].toInteger());
            QVERIFY2(stored.has_value(), qPrintable(run["label"].toString()));
            QCOMPARE(stored->first, run["summary"].toObject()["steps"].toInteger());
            const mpwb::BoundaryGrid grid = mpwb::boundary_from_blob(stored->second);
            QCOMPARE(grid.nx, 80);
            QCOMPARE(grid.ny, 80);
        }
    }

    // A scale that moved is shown as a range, spelled as in every other view.
    void scaleRangeSpelledAsEverywhere() {
        const auto r =
            run_cli({"compare", "--preset", "spiral-mlp", "--precisions", "fp16-mixed", "--init-scale",
                     "16777216", "--epochs", "1", "--backend", "cpu", "--no-store", "--json", "--quiet"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonObject row = parse_object(r.out)["table"].toArray()[0].toObject();
        QVERIFY2(row["min_scale"].toDouble() < 16777216.0, qPrintable(row["loss_scale_range"].toString()));
        QVERIFY2(
            QRegularExpression("^2\\^\\d+ … 2\\^24$").match(row["loss_scale_range"].toString()).hasMatch(),
            qPrintable(row["loss_scale_range"].toString()));
    }

    void compareFp32AndFp16Mixed() {
        const auto r = run_cli({"compare", "--preset", "spiral-mlp", "--precisions", "fp32,fp16-mixed",
                                "--epochs", "5", "--json", "--backend", "cpu"});
        QVERIFY2(r.finished, "compare did not finish");
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonObject out = parse_object(r.out);
        QVERIFY2(!out.isEmpty(), r.out.constData());
        QCOMPARE(out["preset"].toString(), QString("spiral-mlp"));

        const QJsonArray runs = out["runs"].toArray();
        const QJsonArray table = out["table"].toArray();
        QCOMPARE(runs.size(), 2);
        QCOMPARE(table.size(), 2);
        QCOMPARE(runs[0].toObject()["precision"].toString(), QString("fp32"));
        QCOMPARE(runs[1].toObject()["precision"].toString(), QString("fp16-mixed"));

        // 1000 spiral points, 20 % held out: 800 / batch 32 = 25 steps per epoch, 5 epochs.
        for (const auto& v : runs) {
            const QJsonObject s = v.toObject()["summary"].toObject();
            QCOMPARE(s["status"].toString(), QString("FINISHED"));
            QCOMPARE(s["steps"].toInt(), 125);
            QCOMPARE(s["epochs_completed"].toInt(), 5);
            const double acc = s["test_accuracy"].toDouble();
            QVERIFY(acc > 0.0 && acc <= 1.0);
            QVERIFY(s["best_test_accuracy"].toDouble() >= acc);
            QVERIFY(s["samples_per_second"].toDouble() > 0);
        }

        // Same seed: both runs start from the same weights (the fingerprint is taken from each
        // run's network after the Trainer initialised it) on the same first batch, so the first
        // losses differ only by FP16 rounding of activations and weights.
        const QString f0 = runs[0].toObject()["initial_weights_fingerprint"].toString();
        const QString f1 = runs[1].toObject()["initial_weights_fingerprint"].toString();
        QVERIFY(QRegularExpression("^[0-9a-f]{16}$").match(f0).hasMatch());
        QCOMPARE(f1, f0);
        QCOMPARE(out["initial_weights_fingerprint"].toString(), f0);
        const double l0 = runs[0].toObject()["first_step_loss"].toDouble();
        const double l1 = runs[1].toObject()["first_step_loss"].toDouble();
        QVERIFY(std::isfinite(l0) && l0 > 0);
        QVERIFY2(std::abs(l1 - l0) <= 1e-2 * l0,
                 qPrintable(QString("first losses %1 vs %2").arg(l0).arg(l1)));

        // Speed-up is relative to the fp32 run.
        const double sps0 = runs[0].toObject()["summary"].toObject()["samples_per_second"].toDouble();
        const double sps1 = runs[1].toObject()["summary"].toObject()["samples_per_second"].toDouble();
        QCOMPARE(out["baseline"].toString(), QString("fp32"));
        QCOMPARE(table[0].toObject()["speedup"].toDouble(), 1.0);
        QVERIFY(std::abs(table[1].toObject()["speedup"].toDouble() - sps1 / sps0) < 1e-9 * (sps1 / sps0));

        // fp32 runs unscaled; fp16-mixed gets dynamic scaling by default, whose range is a span
        // of powers of two starting at the initial 2^16.
        QCOMPARE(runs[0].toObject()["scaler"].toObject()["mode"].toString(), QString("none"));
        QCOMPARE(table[0].toObject()["loss_scale_range"].toString(), QString("off"));
        QCOMPARE(runs[1].toObject()["scaler"].toObject()["mode"].toString(), QString("dynamic"));
        const QJsonObject row1 = table[1].toObject();
        QVERIFY(row1["min_scale"].toDouble() <= 65536.0 && row1["max_scale"].toDouble() >= 65536.0);
        QVERIFY(QRegularExpression("^2\\^-?\\d+( … 2\\^-?\\d+)?$")
                    .match(row1["loss_scale_range"].toString())
                    .hasMatch());

        // Statistics are on by default in compare, so the underflow column is a measured fraction.
        QCOMPARE(out["stats_every"].toInt(), 50);
        for (const auto& v : table) {
            const QJsonValue u = v.toObject()["mean_activation_underflow"];
            QVERIFY(u.isDouble());
            QVERIFY(u.toDouble() >= 0.0 && u.toDouble() <= 1.0);
        }
    }

    void samePrecisionTwiceGivesIdenticalRuns() {
        const auto r = run_cli({"compare", "--preset", "spiral-mlp", "--precisions", "fp16-mixed,fp16-mixed",
                                "--epochs", "3", "--json", "--backend", "cpu", "--quiet"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonArray runs = parse_object(r.out)["runs"].toArray();
        QCOMPARE(runs.size(), 2);
        const QJsonObject a = runs[0].toObject(), b = runs[1].toObject();
        QCOMPARE(b["initial_weights_fingerprint"].toString(), a["initial_weights_fingerprint"].toString());
        QCOMPARE(b["first_step_loss"].toDouble(), a["first_step_loss"].toDouble());
        const QJsonObject sa = a["summary"].toObject(), sb = b["summary"].toObject();
        for (const char* key : {"train_loss", "test_loss", "test_accuracy", "best_test_accuracy", "min_scale",
                                "max_scale", "mean_activation_underflow"})
            QVERIFY2(
                sa[key].toDouble() == sb[key].toDouble(),
                qPrintable(QString("%1: %2 vs %3").arg(key).arg(sa[key].toDouble()).arg(sb[key].toDouble())));
        QCOMPARE(sb["skipped_steps"].toInt(), sa["skipped_steps"].toInt());
    }

    void otherSeedOtherStartAndTable() {
        // The fingerprint is not a constant: another seed starts elsewhere. Also the human table.
        const auto a = run_cli({"compare", "--preset", "spiral-mlp", "--precisions", "fp32,fp16-mixed@none",
                                "--epochs", "1", "--seed", "7", "--backend", "cpu", "--quiet"});
        QVERIFY2(a.exit_code == 0, a.err.constData());
        const QString text = QString::fromUtf8(a.out);
        QVERIFY2(text.contains("final acc") && text.contains("samples/s") && text.contains("underflow"),
                 a.out.constData());
        QVERIFY2(text.contains(QRegularExpression("\\nfp32 ")), a.out.constData());
        QVERIFY2(text.contains(QRegularExpression("\\nfp16-mixed@none .* off ")), a.out.constData());
        const auto j7 = run_cli({"compare", "--preset", "spiral-mlp", "--precisions", "fp32", "--epochs", "1",
                                 "--seed", "7", "--json", "--backend", "cpu", "--quiet"});
        const auto j42 = run_cli({"compare", "--preset", "spiral-mlp", "--precisions", "fp32", "--epochs",
                                  "1", "--json", "--backend", "cpu", "--quiet"});
        QVERIFY2(j7.exit_code == 0 && j42.exit_code == 0, (j7.err + j42.err).constData());
        const QString f7 = parse_object(j7.out)["initial_weights_fingerprint"].toString();
        const QString f42 = parse_object(j42.out)["initial_weights_fingerprint"].toString();
        QVERIFY(!f7.isEmpty() && !f42.isEmpty());
        QVERIFY(f7 != f42);
        QVERIFY2(text.contains(f7), "the table's header names the fingerprint of the start");
    }

    // The speed-up is run_figures' figure, as in `runs compare` and the report: over the first
    // FP32 run, and none at all without one (not over whichever run came first).
    void speedupNeedsAnFp32Run() {
        const QStringList args{
            "compare",  "--preset", "spiral-mlp", "--precisions", "fp16-mixed@none,bf16-mixed",
            "--epochs", "1",        "--backend",  "cpu",          "--no-store",
            "--quiet"};
        const auto j = run_cli(args + QStringList{"--json"});
        QVERIFY2(j.exit_code == 0, j.err.constData());
        const QJsonObject out = parse_object(j.out);
        QVERIFY2(out["baseline"].isNull(), j.out.constData());
        for (const auto& v : out["table"].toArray())
            QVERIFY2(v.toObject()["speedup"].isNull(), j.out.constData());
        for (const auto& v : out["runs"].toArray())
            QVERIFY2(v.toObject()["speedup"].isNull(), j.out.constData());
        const auto t = run_cli(args);
        QVERIFY2(t.exit_code == 0, t.err.constData());
        QVERIFY2(QString::fromUtf8(t.out).contains("speed-up: no FP32 run"), t.out.constData());
        QVERIFY2(QString::fromUtf8(t.out).contains(QRegularExpression("\\nfp16-mixed@none .* - ")),
                 t.out.constData());
    }

    void badInputFailsWithClearMessage_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("mentions");
        const QStringList train{"train",      "--preset", "spiral-mlp", "--precision",
                                "fp16-mixed", "--epochs", "1"};
        QTest::newRow("unknown precision")
            << QStringList{"compare", "--preset", "spiral-mlp", "--precisions", "fp32,fp99"} << "fp99";
        QTest::newRow("unknown scaler mode in --precisions")
            << QStringList{"compare", "--preset", "spiral-mlp", "--precisions", "fp16-mixed@sometimes"}
            << "sometimes";
        QTest::newRow("empty --precisions")
            << QStringList{"compare", "--preset", "spiral-mlp", "--precisions", ","} << "--precisions";
        QTest::newRow("negative init scale")
            << (train + QStringList{"--init-scale", "-1"}) << "initial_scale";
        QTest::newRow("nan init scale") << (train + QStringList{"--init-scale", "nan"}) << "initial_scale";
        QTest::newRow("growth factor 1") << (train + QStringList{"--growth-factor", "1"}) << "growth_factor";
        QTest::newRow("backoff factor 1.5")
            << (train + QStringList{"--backoff-factor", "1.5"}) << "backoff_factor";
        QTest::newRow("growth interval 0")
            << (train + QStringList{"--growth-interval", "0"}) << "growth_interval";
        QTest::newRow("min above max")
            << (train + QStringList{"--min-scale", "10", "--max-scale", "1"}) << "min_scale";
        QTest::newRow("compare shares the scaler checks")
            << QStringList{"compare", "--preset", "spiral-mlp", "--growth-factor", "0.5"} << "growth_factor";
    }

    void badInputFailsWithClearMessage() {
        QFETCH(QStringList, args);
        QFETCH(QString, mentions);
        const auto r = run_cli(args);
        QVERIFY2(r.finished, "the command did not finish");
        QVERIFY2(r.exit_code != 0, qPrintable("exit 0 for " + args.join(' ')));
        const QString err = QString::fromUtf8(r.err);
        QVERIFY2(err.contains(mentions), qPrintable("stderr does not name '" + mentions + "': " + err));
        QVERIFY2(err.contains("error"), qPrintable(err));
        QVERIFY2(r.out.trimmed().isEmpty(), r.out.constData());  // no half-finished table or JSON
    }
};

QTEST_APPLESS_MAIN(TestCompare)
#include "test_compare.moc"
