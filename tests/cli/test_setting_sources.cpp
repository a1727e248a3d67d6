// Issue 24 item 7, through the built mpwb-cli: training settings are held to one set of ranges
// (TrainLimits, TrainConfig::validate) whatever their source. A flag, a preset file given as the
// network file, a sweep spec and a stored run (from another program, or a bundle's: bundles carry
// no checkpoints, so the workbench's controller is what trains their settings again, through the
// same validate) are each refused with the source, the setting and the problem, before anything
// trains. The stored run is made by interrupting a real run at a held step (waited for by its
// state in the database, never by time).
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <optional>

#include "sessions/run_store.h"
#include "tests/cli/held_run.h"
#include "tests/cli/program_runner.h"
#include "tests/sessions/test_support.h"

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");
constexpr int kExitResumable = 75;

ProgramResult run_cli(const QStringList& args) { return run_program(kCli, args); }

}  // namespace

class TestSettingSources : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    QString write_file(const QString& name, const QByteArray& text) {
        const QString path = dir_.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
            qFatal("cannot write %s", qPrintable(path));
        return path;
    }

private slots:
    // The flags' ranges are TrainLimits' (the same numbers validate holds the files to).
    void flagIsRefused() {
        const QString db = dir_.filePath("flag.sqlite");
        const auto r = run_cli({"train", "--preset", "spiral-mlp", "--threads", "100000", "--db", db});
        QVERIFY(r.exit_code != 0);
        QVERIFY2(r.err.contains("--threads") && r.err.contains("0 to 4096"), r.err.constData());
        QVERIFY(!QFile::exists(db));
    }

    void presetFileIsRefused() {
        const QString db = dir_.filePath("preset.sqlite");
        for (const QByteArray& training :
             {QByteArray(R"({"threads": 100000})"), QByteArray(R"({"epochs": 400000000000000000})")}) {
            const QString file =
                write_file("preset.json", R"({"name": "p", "network": {"loss": "cross_entropy",
                "layers": [{"type": "Linear", "out": 2}]}, "training": )" +
                                              training + "}");
            const auto r = run_cli({"train", "--network", file, "--backend", "cpu", "--quiet", "--db", db});
            QVERIFY(r.exit_code != 0);
            const QByteArray setting = training.mid(2, training.indexOf('"', 2) - 2);
            QVERIFY2(r.err.contains(file.toUtf8() + ": " + setting + " must be from"), r.err.constData());
            QVERIFY(!QFile::exists(db));
        }
    }

    void sweepSpecIsRefused() {
        const QString spec = write_file("spec.json", R"({"name": "s", "preset": "spiral-mlp",
            "training": {"threads": 100000}, "axes": [{"setting": "lr", "values": [0.1]}]})");
        const auto r = run_cli({"sweep", "plan", spec});
        QVERIFY(r.exit_code != 0);
        QVERIFY2(r.err.contains(spec.toUtf8() + ": training: threads must be from 0 to 4096, gets 100000"),
                 r.err.constData());
    }

    // A stored run whose settings are out of range (written by another program, or damaged) is
    // refused when it is continued, naming the database, the run and the setting's range (before,
    // only as a difference from its checkpoint's settings).
    void storedRunIsRefused() {
        const QString db = dir_.filePath("stored.sqlite");
        QProcess train;
        train.start(kCli, {"train", "--preset", "spiral-mlp", "--samples", "200", "--max-steps", "300",
                           "--checkpoint-every", "5", "--backend", "cpu", "--quiet", "--db", db,
                           "--hold-after-step", "10"});
        QVERIFY(train.waitForStarted());
        const auto run = wait_until_held(db, train, 10);
        QVERIFY(run);
        ::kill(static_cast<pid_t>(train.processId()), SIGTERM);
        QVERIFY(train.waitForFinished(300000));
        QCOMPARE(train.exitCode(), kExitResumable);
        {
            testsupport::Raw raw(db.toStdString());
            QCOMPARE(
                raw.exec("UPDATE runs SET config_json = json_set(config_json, '$.eval_batch', 1073741824)"),
                0);
        }
        const auto resumed =
            run_cli({"train", "--resume", QString::number(*run), "--backend", "cpu", "--quiet", "--db", db});
        QVERIFY(resumed.exit_code != 0);
        QVERIFY2(
            resumed.err.contains("run " + QByteArray::number(qint64(*run)) +
                                 ", config_json: eval_batch must be from 1 to 16777216, gets 1073741824"),
            resumed.err.constData());
        QCOMPARE(mpwb::RunStore(db.toStdString()).get_run(*run).status, mpwb::RunStatus::Interrupted);
    }
};

QTEST_GUILESS_MAIN(TestSettingSources)
#include "test_setting_sources.moc"
