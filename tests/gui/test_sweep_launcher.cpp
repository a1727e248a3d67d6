// Tests of starting a sweep from the workbench (app/gui/sweep_launcher.h, cli_process.h) against
// a stand-in for mpwb-cli ($MPWB_CLI): a script that prints the JSON lines of `sweep run
// --progress-jsonl`. The progress bar follows the runs over the whole sweep, failures are
// counted, Cancel ends the CLI's whole process group (a training process it started too), and a
// missing mpwb-cli is a clear message. Every wait is for a state (a signal, a process gone).
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>

#include "app/gui/main_window.h"
#include "app/gui/sweep_launcher.h"
#include "widgets/hparam_table_model.h"
#include "widgets/hparam_view.h"

using namespace mpwb;

namespace {

QString write_script(const QTemporaryDir& dir, const QString& name, const QString& body) {
    const QString path = dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
    f.write(("#!/bin/sh\n" + body).toUtf8());
    f.close();
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
    return path;
}

// Gone, or a zombie nobody reaped yet: either way no longer running.
bool process_ended(qint64 pid) {
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly)) return true;
    const QByteArray text = stat.readAll();
    const qsizetype paren = text.lastIndexOf(')');
    return paren < 0 || text.mid(paren + 2, 1) == "Z";
}

}  // namespace

class TestSweepLauncher : public QObject {
    Q_OBJECT
private slots:
    void progressOverTheWholeSweep();
    void cancelEndsTheProcessGroup();
    void missingCliIsExplained();
    void workbenchRunsARealSweep();
};

void TestSweepLauncher::progressOverTheWholeSweep() {
    QTemporaryDir dir;
    // Arguments are checked by the script: the spec, --jobs 2, --db, --progress-jsonl.
    const QString cli = write_script(dir, "mpwb-cli", R"(
[ "$1 $2 $4 $5 $6 $8" = "sweep run --jobs 2 --db --progress-jsonl" ] || { echo "bad arguments: $*" >&2; exit 2; }
echo '{"event":"sweep_started","sweep_id":5,"runs":3}'
echo 'a line for a terminal'
echo '{"event":"run_started","index":0}'
echo '{"event":"run_finished","index":0,"run_id":11,"status":"FINISHED","exit_code":0}'
echo '{"event":"run_finished","index":1,"run_id":12,"status":"FAILED","exit_code":1}'
echo '{"event":"run_finished","index":2,"run_id":13,"status":"FINISHED","exit_code":0}'
echo '{"event":"sweep_finished","sweep_id":5,"finished":2,"failed":1}'
)");
    qputenv("MPWB_CLI", cli.toUtf8());
    SweepLauncher launcher;
    SweepProgress strip(&launcher);
    strip.show();
    QSignalSpy progress(&launcher, &SweepLauncher::progress);
    QSignalSpy finished(&launcher, &SweepLauncher::finished);
    QVERIFY2(launcher.start(dir.filePath("spec.json"), 2, dir.filePath("runs.sqlite")),
             qPrintable(launcher.errorText()));
    QTRY_COMPARE(finished.count(), 1);
    const auto end = finished.takeFirst();
    QCOMPARE(end.at(0).toLongLong(), 5);
    QVERIFY2(end.at(1).toBool(), qPrintable(end.at(2).toString()));
    QVERIFY(end.at(2).toString().contains("3 of 3 runs, 1 failed"));
    QCOMPARE(launcher.total(), 3);
    QCOMPARE(launcher.done(), 3);
    QCOMPARE(launcher.failed(), 1);
    // Progress went up one run at a time over the whole sweep.
    QList<int> done;
    for (const auto& p : progress) done << p.at(0).toInt();
    QCOMPARE(done, (QList<int>{0, 1, 2, 3, 3}));
    QCOMPARE(strip.bar()->maximum(), 3);
    QCOMPARE(strip.bar()->value(), 3);
    QCOMPARE(strip.findChild<QLabel*>("sweepFailures")->text(), QStringLiteral("1 failed"));
    qunsetenv("MPWB_CLI");
}

void TestSweepLauncher::cancelEndsTheProcessGroup() {
    QTemporaryDir dir;
    const QString pid_file = dir.filePath("trainer.pid");
    // A stand-in for a training process the CLI started: it must end with the CLI.
    const QString cli = write_script(dir, "mpwb-cli",
                                     QStringLiteral(R"(
sleep 1000 &
echo $! > %1
echo '{"event":"sweep_started","sweep_id":9,"runs":4}'
echo '{"event":"run_started","index":0}'
wait
)")
                                         .arg(pid_file));
    qputenv("MPWB_CLI", cli.toUtf8());
    SweepLauncher launcher;
    SweepProgress strip(&launcher);
    strip.show();
    QSignalSpy started(&launcher, &SweepLauncher::started);
    QSignalSpy finished(&launcher, &SweepLauncher::finished);
    QVERIFY(launcher.start(dir.filePath("spec.json"), 1, dir.filePath("runs.sqlite")));
    QTRY_COMPARE(started.count(), 1);
    QTRY_VERIFY(QFile::exists(pid_file) && QFile(pid_file).size() > 0);
    QFile f(pid_file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const qint64 trainer = f.readAll().trimmed().toLongLong();
    QVERIFY(trainer > 0 && !process_ended(trainer));
    QTest::mouseClick(strip.cancelButton(), Qt::LeftButton);
    QTRY_COMPARE(finished.count(), 1);
    QCOMPARE(finished.first().at(1).toBool(), false);
    QVERIFY(finished.first().at(2).toString().contains("cancelled"));
    QTRY_VERIFY(process_ended(trainer));
    QVERIFY(!launcher.running());
    qunsetenv("MPWB_CLI");
}

void TestSweepLauncher::missingCliIsExplained() {
    qputenv("MPWB_CLI", "/nonexistent/mpwb-cli");
    SweepLauncher launcher;
    QVERIFY(!launcher.start("spec.json", 1, "runs.sqlite"));
    QVERIFY2(launcher.errorText().contains("mpwb-cli was not found"), qPrintable(launcher.errorText()));
    QVERIFY(launcher.errorText().contains("/nonexistent/mpwb-cli"));
    qunsetenv("MPWB_CLI");
}

// The workbench's own path with the real mpwb-cli: a 2-run sweep of 10 steps each, then the
// sweep's runs in the hyperparameter view.
void TestSweepLauncher::workbenchRunsARealSweep() {
    const QString cli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");
    if (!QFileInfo::exists(cli)) QSKIP("mpwb-cli is not built in this build tree");
    qputenv("MPWB_CLI", cli.toUtf8());
    QStandardPaths::setTestModeEnabled(true);
    QTemporaryDir dir;
    const QString spec = dir.filePath("spec.json");
    QFile f(spec);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "two lrs", "preset": "spiral-mlp", "training": {"max_steps": 10},
               "axes": [{"setting": "lr", "values": [0.1, 0.01]}]})");
    f.close();
    MainWindow::Options o;
    o.db_path = dir.filePath("runs.sqlite").toStdString();
    o.preset = "spiral-mlp";
    o.restore_layout = false;
    MainWindow w(o);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy finished(w.sweepLauncher(), &SweepLauncher::finished);
    QVERIFY2(w.startSweep(spec, 2), qPrintable(w.lastError()));
    QVERIFY(!w.sweepAction()->isEnabled());  // one sweep at a time
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY2(finished.first().at(1).toBool(), qPrintable(finished.first().at(2).toString()));
    QCOMPARE(w.sweepLauncher()->done(), 2);
    QCOMPARE(w.sweepLauncher()->failed(), 0);
    QVERIFY(w.sweepAction()->isEnabled());
    // The sweep opened in the hyperparameter view: its two runs, lr as the one setting axis.
    HparamView* view = w.hparamView();
    QVERIFY2(view->errorText().isEmpty(), qPrintable(view->errorText()));
    QCOMPARE(view->model()->rowCount(), 2);
    QCOMPARE(view->model()->headerData(1, Qt::Horizontal).toString(), QStringLiteral("lr"));
    QVERIFY(view->isVisible());
    qunsetenv("MPWB_CLI");
}

QTEST_MAIN(TestSweepLauncher)
#include "test_sweep_launcher.moc"
