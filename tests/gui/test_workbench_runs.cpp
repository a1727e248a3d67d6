// GUI tests of stored runs in the workbench: Open loads a run's network and settings into the
// docks (undoably for the network), "Train again" trains a new run with the same network and
// configuration, Open on several runs overlays their curves (the docks load the first), and the
// Events dock filters by kind and by run. Two short spiral runs with different settings are
// recorded into a temporary database first; the real MainWindow runs offscreen, driven by clicks.
// Waits are on states only.
#include <QComboBox>
#include <QFile>
#include <QPushButton>
#include <QSlider>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include <memory>

#include "app/gui/event_list.h"
#include "app/gui/main_window.h"
#include "app/gui/plot_board.h"
#include "app/gui/run_id_list.h"
#include "core/backend/default_backend.h"
#include "core/common/json_input.h"
#include "core/train/dataset_source.h"
#include "resources/presets.h"
#include "sessions/metric_keys.h"
#include "sessions/recorded_run.h"
#include "sessions/run_store.h"
#include "widgets/network_editor.h"
#include "widgets/plots/series_plot.h"
#include "widgets/precision_panel.h"
#include "widgets/run_browser.h"

using namespace mpwb;

namespace {

constexpr int kStateWaitMs = 120000;  // ends a hang; the runs take well under a second

// Two runs that differ in every dock: network width, precision, scaler, learning rate, steps.
struct Recipe {
    std::string name;
    PrecisionKind precision;
    float lr;
    int64_t hidden;
    int64_t steps;
    std::optional<LossScalerConfig> scaler;
};

Recipe mixed_recipe() {
    LossScalerConfig scaler;
    scaler.mode = ScalerMode::Dynamic;
    scaler.initial_scale = 1024;
    scaler.growth_interval = 10;  // scale events within the short run
    return {"mixed", PrecisionKind::FP16Mixed, 0.05f, 24, 40, scaler};
}

Recipe fp32_recipe() { return {"plain", PrecisionKind::FP32, 0.01f, 64, 30, std::nullopt}; }

int64_t record(const std::string& db, const Recipe& r) {
    Preset p = load_preset("spiral-mlp");
    p.network["layers"][0]["out"] = r.hidden;
    p.training.precision = r.precision;
    p.training.lr = r.lr;
    p.training.max_steps = r.steps;
    p.training.eval_every = 10;
    p.training.scaler = r.scaler;
    const Dataset data = load_dataset(p.training.dataset);
    std::string why;
    auto backend = make_default_backend(&why);
    RunRecorder::Options ro;
    ro.db_path = db;
    ro.name = r.name;
    RecordedRun run(p.network, data, p.training, *backend, std::make_unique<RunRecorder>(ro));
    run.add_observer(run.recorder());
    run.trainer().run();
    return run.run_id();
}

nlohmann::json stored(const std::string& text) { return parse_json_text(text, "stored run"); }

}  // namespace

class TestWorkbenchRuns : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    std::string db_;
    int64_t mixed_ = 0, plain_ = 0;
    std::unique_ptr<MainWindow> w_;

    QPushButton* button(const char* name) {
        auto* b = w_->runBrowser()->findChild<QPushButton*>(name);
        if (!b) qFatal("no button %s", name);
        return b;
    }
    void clickOpen(const QList<qint64>& ids) {
        w_->runBrowser()->refresh();
        w_->runBrowser()->selectRuns(ids);
        QVERIFY(button("openButton")->isEnabled());
        QTest::mouseClick(button("openButton"), Qt::LeftButton);
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        db_ = (tmp_.path() + "/runs.sqlite").toStdString();
        mixed_ = record(db_, mixed_recipe());
        plain_ = record(db_, fp32_recipe());
        QVERIFY(mixed_ > 0 && plain_ > 0);
        MainWindow::Options o;
        o.db_path = db_;
        o.preset = "spiral-mlp";
        o.restore_layout = false;
        w_ = std::make_unique<MainWindow>(o);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QTRY_COMPARE_WITH_TIMEOUT(w_->presetName(), QString("spiral-mlp"), kStateWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(w_->runBrowser()->rowCount(), 2, kStateWaitMs);
    }

    void openLoadsTheRunsSettings() {
        // The panels hold something else first: another precision, learning rate and network.
        w_->precisionPanel()->setPrecision(PrecisionKind::BF16Mixed);
        w_->precisionPanel()->setLearningRate(0.5f);
        w_->networkEditor()->addLayer("ReLU", 0);
        const nlohmann::json edited = w_->networkEditor()->networkJson();
        QVERIFY(w_->currentConfig().precision != PrecisionKind::FP16Mixed);

        clickOpen({mixed_});
        RunStore store(db_);
        const Run run = store.get_run(mixed_);
        QCOMPARE(w_->networkEditor()->networkJson(), stored(run.network_json));
        QCOMPARE(w_->networkEditor()->networkJson()["layers"][0]["out"].get<int64_t>(),
                 mixed_recipe().hidden);
        const TrainConfig shown = w_->currentConfig();
        QCOMPARE(shown.precision, PrecisionKind::FP16Mixed);
        QCOMPARE(w_->precisionPanel()->precision(), PrecisionKind::FP16Mixed);
        QCOMPARE(shown.lr, mixed_recipe().lr);
        QCOMPARE(shown.max_steps, mixed_recipe().steps);
        QCOMPARE(w_->precisionPanel()->scalerConfig().initial_scale, 1024.0);
        QCOMPARE(w_->precisionPanel()->scalerConfig().growth_interval, int64_t(10));
        QCOMPARE(to_json(shown), to_json(train_config_from_json(stored(run.config_json))));
        QCOMPARE(w_->plots()->runCount(), 1);
        QCOMPARE(w_->plots()->runId(0), mixed_);

        // Loading the network was one undoable step: undo gives the edited network back.
        w_->networkEditor()->undoStack()->undo();
        QCOMPARE(w_->networkEditor()->networkJson(), edited);
        w_->networkEditor()->undoStack()->redo();
        QCOMPARE(w_->networkEditor()->networkJson(), stored(run.network_json));
    }

    void trainAgainTrainsTheSameConfiguration() {
        w_->precisionPanel()->setPrecision(PrecisionKind::BF16Mixed);  // changed; the run's wins
        w_->runBrowser()->selectRuns({plain_});
        QVERIFY(w_->trainAgainAction()->isEnabled());
        QPushButton* again = button("trainAgainButton");
        QVERIFY(again->isEnabled());
        QTest::mouseClick(again, Qt::LeftButton);
        QVERIFY2(w_->controller()->busy(), qPrintable(w_->lastError() + " / " + w_->blockReason()));
        QTRY_COMPARE_WITH_TIMEOUT(w_->controller()->state(), TrainingController::State::Idle, kStateWaitMs);
        const int64_t again_id = w_->controller()->run_ids().at(0);
        QVERIFY(again_id != plain_);

        RunStore store(db_);
        const Run source = store.get_run(plain_);
        const Run copy = store.get_run(again_id);
        QCOMPARE(stored(copy.network_json), stored(source.network_json));
        QCOMPARE(stored(copy.config_json), stored(source.config_json));
        QCOMPARE(copy.status, RunStatus::Finished);
        QCOMPARE(store.series(again_id, metric_key::train_loss).size(), size_t(fp32_recipe().steps));
        QVERIFY(QString::fromStdString(copy.name).contains(QString("#%1").arg(plain_)));
    }

    void openSeveralOverlaysTheirCurves() {
        RunStore store(db_);
        QList<qint64> ids;
        for (const Run& r : store.list_runs()) ids << r.id;
        QCOMPARE(ids.size(), 3);
        std::sort(ids.begin(), ids.end());
        clickOpen(ids);
        QCOMPARE(w_->plots()->runCount(), 3);
        w_->plots()->flushAll();
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(w_->plots()->runId(i), ids[i]);
            const int points =
                w_->plots()->lossPlot()->pointCount(w_->plots()->seriesKey(i), SeriesPlot::Curve::Train);
            QCOMPARE(points, int(store.series(ids[i], metric_key::train_loss).size()));
            QVERIFY(points > 0);
        }
        // The docks hold the first run's settings, and the status bar says so.
        QCOMPARE(w_->precisionPanel()->precision(), PrecisionKind::FP16Mixed);
        const QString status = w_->statusBar()->currentMessage();
        QVERIFY2(status.contains(QString("#%1").arg(ids.first())) && status.contains("3"),
                 qPrintable(status));
    }

    // After the overlay above, the Events dock holds the three runs' events.
    void eventsFilterByKindAndRun() {
        EventList* events = w_->eventPanel();
        QTableWidget* table = events->table();
        const int all = table->rowCount();
        QVERIFY(all > 0);
        QCOMPARE(events->visibleRowCount(), all);
        // A kind that not every row has.
        QComboBox* kinds = events->kindFilter();
        QVERIFY(kinds->count() >= 3);  // "all events" and at least two kinds
        kinds->setCurrentIndex(1);
        const QString kind = kinds->currentText();
        QVERIFY(events->visibleRowCount() > 0);
        QVERIFY(events->visibleRowCount() < all);
        for (int r = 0; r < table->rowCount(); ++r)
            QCOMPARE(!table->isRowHidden(r), table->item(r, 2)->text() == kind);
        kinds->setCurrentIndex(0);
        QCOMPARE(events->visibleRowCount(), all);

        QComboBox* runs = events->runFilter();
        QCOMPARE(runs->count(), 4);  // "all runs" and the three runs
        runs->setCurrentIndex(runs->findText(QString("#%1 mixed").arg(mixed_)));
        QVERIFY(runs->currentIndex() > 0);
        QVERIFY(events->visibleRowCount() > 0 && events->visibleRowCount() < all);
        for (int r = 0; r < table->rowCount(); ++r)
            QCOMPARE(!table->isRowHidden(r), table->item(r, 0)->text() == runs->currentText());
        // Rows that arrive later follow the filter: reopening shows only that run's rows.
        const int mixed_rows = events->visibleRowCount();
        clickOpen({mixed_, plain_});
        QCOMPARE(runs->currentText(), QString("#%1 mixed").arg(mixed_));
        QCOMPARE(events->visibleRowCount(), mixed_rows);
        QVERIFY(table->rowCount() > mixed_rows);
        runs->setCurrentIndex(0);
        QCOMPARE(events->visibleRowCount(), table->rowCount());
    }

    // The run browser's "Export for PyTorch…" path: both files beside each other, and an
    // existing file is refused, left as it was.
    void exportForPyTorchWritesWeightsAndScript() {
        const QString weights = tmp_.path() + "/plain.safetensors";
        const QStringList written = w_->exportForPyTorch(plain_, weights);
        QCOMPARE(written, QStringList({weights, tmp_.path() + "/plain.py"}));
        QFile script(tmp_.path() + "/plain.py");
        QVERIFY(script.open(QIODevice::ReadOnly));
        QVERIFY(script.readAll().contains("nn.Sequential"));
        QFile file(weights);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray before = file.readAll();
        QVERIFY(before.size() > 8);
        file.close();
        QVERIFY(w_->exportForPyTorch(plain_, weights).isEmpty());
        QVERIFY2(w_->lastError().contains("plain.safetensors"), qPrintable(w_->lastError()));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll(), before);
    }

    // A report exported from the workbench uses the smoothing slider's value and says so.
    void reportUsesTheChosenSmoothing() {
        auto* slider = w_->plots()->findChild<QSlider*>("smoothing");
        QVERIFY(slider);
        slider->setValue(40);
        const QString path = tmp_.path() + "/smoothed.html";
        QVERIFY(!w_->exportReport({mixed_, plain_}, path).isEmpty());
        QFile html(path);
        QVERIFY(html.open(QIODevice::ReadOnly));
        QVERIFY(QString::fromUtf8(html.readAll()).contains(QString::fromUtf8("EMA α = 0.4")));
    }

    // Issue 24: the same run asked for 1,000 times loaded 1,000 copies on the GUI thread. A run
    // shows once however often it is asked for, and more runs than kMaxOpenRuns are refused,
    // with the limit, before anything loads.
    void repeatedRunsOpenOnceAndTheCountIsBounded() {
        const QList<qint64> repeated(100, mixed_);
        QVERIFY(w_->openStoredRuns(repeated));
        QCOMPARE(w_->plots()->runCount(), 1);
        QCOMPARE(w_->plots()->runId(0), mixed_);
        QList<qint64> too_many;
        for (int i = 0; i < kMaxOpenRuns + 1; ++i) too_many << mixed_ + 1000 + i;
        QVERIFY(!w_->openStoredRuns(too_many));
        QVERIFY2(w_->lastError().contains(QString("%1 runs are selected").arg(kMaxOpenRuns + 1)) &&
                     w_->lastError().contains(QString("at most %1").arg(kMaxOpenRuns)),
                 qPrintable(w_->lastError()));
        QCOMPARE(w_->plots()->runCount(), 1);  // what was shown stays
    }

    void cleanupTestCase() { w_.reset(); }
};

QTEST_MAIN(TestWorkbenchRuns)
#include "test_workbench_runs.moc"
