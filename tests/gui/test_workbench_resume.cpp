// Resume in the workbench: a recorded spiral run interrupted after step 20 (checkpoint_and_stop,
// as SIGTERM does) is continued from the run browser's Resume button in the workbench's own
// TrainingController. It must end FINISHED in the same run, with every step recorded once and
// a final loss equal, bit for bit, to an uninterrupted run of the same settings (CPU). Resume is
// disabled, saying why, for a run that is not INTERRUPTED. Waits are on states only.
#include <QPushButton>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

#include "app/gui/main_window.h"
#include "core/backend/default_backend.h"
#include "core/train/dataset_source.h"
#include "resources/presets.h"
#include "sessions/metric_keys.h"
#include "sessions/recorded_run.h"
#include "sessions/run_store.h"
#include "widgets/run_browser.h"

using namespace mpwb;

namespace {

constexpr int kStateWaitMs = 120000;  // ends a hang; the runs take well under a second
constexpr int64_t kSteps = 60;
constexpr int64_t kInterruptAfter = 20;

// Asks the trainer to checkpoint and stop once it has done `step` steps.
class InterruptAt : public TrainingObserver {
public:
    InterruptAt(Trainer& trainer, int64_t step) : trainer_(trainer), step_(step) {}
    void on_step(const StepMetrics& m) override {
        if (m.step == step_) trainer_.checkpoint_and_stop();
    }

private:
    Trainer& trainer_;
    int64_t step_;
};

Preset short_spiral() {
    Preset p = load_preset("spiral-mlp");
    p.training.max_steps = kSteps;
    p.training.eval_every = 20;
    return p;
}

// Records one run of the short spiral preset; interrupted after `interrupt_after` steps when > 0.
RunSummary record_run(const std::string& db, const std::string& name, int64_t interrupt_after) {
    const Preset p = short_spiral();
    const Dataset data = load_dataset(p.training.dataset);
    std::string why;
    auto backend = make_default_backend(&why);
    RunRecorder::Options ro;
    ro.db_path = db;
    ro.name = name;
    RecordedRun run(p.network, data, p.training, *backend, std::make_unique<RunRecorder>(ro));
    InterruptAt interrupt(run.trainer(), interrupt_after);
    run.add_observer(run.recorder());
    if (interrupt_after > 0) run.add_observer(&interrupt);
    return run.trainer().run();
}

int row_of(RunBrowser* browser, qint64 id) {
    for (int r = 0; r < browser->rowCount(); ++r)
        if (browser->runIdAt(r) == id) return r;
    return -1;
}

}  // namespace

class TestWorkbenchResume : public QObject {
    Q_OBJECT
private slots:
    void resumeContinuesTheInterruptedRun();
};

void TestWorkbenchResume::resumeContinuesTheInterruptedRun() {
    QStandardPaths::setTestModeEnabled(true);
    QTemporaryDir dir;
    const std::string db = dir.filePath("runs.sqlite").toStdString();
    QCOMPARE(record_run(db, "reference", 0).status, RunStatus::Finished);
    QCOMPARE(record_run(db, "interrupted", kInterruptAfter).status, RunStatus::Interrupted);
    qint64 reference = 0, interrupted = 0;
    {
        RunStore store(db);
        for (const Run& r : store.list_runs()) (r.name == "reference" ? reference : interrupted) = r.id;
        QVERIFY(store.latest_checkpoint(interrupted).has_value());
    }

    MainWindow::Options o;
    o.db_path = db;
    o.preset = "spiral-mlp";
    o.restore_layout = false;
    MainWindow w(o);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    RunBrowser* browser = w.runBrowser();
    QTRY_COMPARE_WITH_TIMEOUT(browser->rowCount(), 2, kStateWaitMs);
    auto* resume = browser->findChild<QPushButton*>("resumeButton");
    QVERIFY(resume);

    // A FINISHED run cannot resume, and the button says why.
    browser->selectRuns({reference});
    QVERIFY(!resume->isEnabled());
    QVERIFY2(resume->toolTip().contains("only INTERRUPTED runs resume"), qPrintable(resume->toolTip()));

    browser->selectRuns({interrupted});
    QVERIFY2(resume->isEnabled(), qPrintable(resume->toolTip()));
    QTest::mouseClick(resume, Qt::LeftButton);
    QVERIFY2(w.controller()->busy(), qPrintable(w.lastError()));
    QTRY_COMPARE_WITH_TIMEOUT(w.controller()->state(), TrainingController::State::Idle, kStateWaitMs);
    QCOMPARE(w.controller()->run_ids().at(0), interrupted);  // the same run, not a new one

    RunStore store(db);
    QCOMPARE(store.list_runs().size(), std::size_t(2));
    QCOMPARE(store.get_run(interrupted).status, RunStatus::Finished);
    QCOMPARE(store.events(interrupted, "resumed_from_checkpoint").size(), std::size_t(1));
    const auto resumed_loss = store.series(interrupted, metric_key::train_loss);
    const auto reference_loss = store.series(reference, metric_key::train_loss);
    QCOMPARE(resumed_loss.size(), std::size_t(kSteps));  // every step once
    QCOMPARE(reference_loss.size(), std::size_t(kSteps));
    for (std::size_t i = 0; i < resumed_loss.size(); ++i) {
        QCOMPARE(resumed_loss[i].step, reference_loss[i].step);
        QVERIFY2(std::memcmp(&resumed_loss[i].value, &reference_loss[i].value, sizeof(double)) == 0,
                 qPrintable(QStringLiteral("step %1: %2 vs %3")
                                .arg(resumed_loss[i].step)
                                .arg(resumed_loss[i].value, 0, 'g', 17)
                                .arg(reference_loss[i].value, 0, 'g', 17)));
    }
    // The browser shows the run finished, and Resume is off again.
    QTRY_VERIFY_WITH_TIMEOUT(row_of(browser, interrupted) >= 0, kStateWaitMs);
    browser->selectRuns({interrupted});
    QVERIFY(!resume->isEnabled());
}

QTEST_MAIN(TestWorkbenchResume)
#include "test_workbench_resume.moc"
