// GUI test of the Stability tab: clicked in the real main window (offscreen), it says how to get
// indicators before any transformer run, shows a stored tiny GPT's indicators (a line per block
// and indicator, and the output's) when the run is opened, and fills with the indicators of a
// live run of it (statistics every 2 steps) trained from the window. Waits are on states only.
#include <QFile>
#include <QLabel>
#include <QStandardPaths>
#include <QTabBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolBar>
#include <QtTest>

#include <memory>

#include "app/gui/main_window.h"
#include "app/gui/plot_board.h"
#include "core/backend/default_backend.h"
#include "core/train/dataset_source.h"
#include "resources/presets.h"
#include "sessions/metric_keys.h"
#include "sessions/recorded_run.h"
#include "widgets/plots/plot_widget.h"
#include "widgets/plots/stability_view.h"
#include "widgets/run_browser.h"

using namespace mpwb;

namespace {

constexpr int kStateWaitMs = 120000;  // ends a hang; the runs take well under a second
constexpr int kLinesPerRun = 5 + 2;   // one block's five indicators and the output's two

// fortunes-gpt's layers, one block of width 16 with 2 heads over a context of 16 characters.
nlohmann::json tiny_gpt() {
    nlohmann::json network = load_preset("fortunes-gpt").network;
    auto& layers = network["layers"];
    layers[0]["d_model"] = 16;
    layers[0]["context"] = 16;
    nlohmann::json kept = nlohmann::json::array({layers[0], layers[1]});
    for (size_t i = 2; i < layers.size(); ++i)
        if (layers[i]["type"] != "TransformerBlock") kept.push_back(layers[i]);
    layers = kept;
    layers[1]["heads"] = 2;
    return network;
}

TrainConfig tiny_config(const QString& text_path) {
    TrainConfig c = load_preset("fortunes-gpt").training;
    c.dataset.kind = "text";
    c.dataset.path = text_path.toStdString();
    c.dataset.context = 16;
    c.dataset.test_ratio = 0.1;
    c.max_steps = 8;
    c.eval_every = 8;
    c.eval_batch = 32;
    c.batch_size = 8;
    c.schedule.warmup_steps = 2;
    c.threads = 1;
    c.stats_every = 2;
    c.samples.enabled = false;
    return c;
}

void write_text(const QString& path) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    for (int i = 0; i < 120; ++i)
        f.write(QStringLiteral("the cat %1 sat on the mat; a dog %2 ran.\n").arg(i % 7).arg(i % 5).toUtf8());
}

}  // namespace

class TestWorkbenchStability : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    std::string db_;
    int64_t first_ = 0;
    std::unique_ptr<MainWindow> w_;

    StabilityView* view() const { return w_->plots()->stabilityView(); }
    void clickStabilityTab() {
        QTabWidget* tabs = w_->plots()->tabs();
        const int index = tabs->indexOf(view());
        QVERIFY(index >= 0);
        QCOMPARE(tabs->tabText(index), QString("Stability"));
        QTest::mouseClick(tabs->tabBar(), Qt::LeftButton, {}, tabs->tabBar()->tabRect(index).center());
        QCOMPARE(tabs->currentWidget(), static_cast<QWidget*>(view()));
    }
    QPushButton* browserButton(const char* name) {
        auto* b = w_->runBrowser()->findChild<QPushButton*>(name);
        if (!b) qFatal("no button %s", name);
        return b;
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        db_ = (tmp_.path() + "/runs.sqlite").toStdString();
        const QString text_path = tmp_.path() + "/cats.txt";
        write_text(text_path);
        const TrainConfig config = tiny_config(text_path);
        const Dataset data = load_dataset(config.dataset);
        std::string why;
        auto backend = make_default_backend(&why);
        RunRecorder::Options ro;
        ro.db_path = db_;
        ro.name = "tiny gpt";
        RecordedRun run(tiny_gpt(), data, config, *backend, std::make_unique<RunRecorder>(ro));
        run.add_observer(run.recorder());
        run.trainer().run();
        first_ = run.run_id();
        QVERIFY(first_ > 0);

        MainWindow::Options o;
        o.db_path = db_;
        o.preset = "spiral-mlp";
        o.restore_layout = false;
        w_ = std::make_unique<MainWindow>(o);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QTRY_COMPARE_WITH_TIMEOUT(w_->runBrowser()->rowCount(), 1, kStateWaitMs);
    }

    void emptyBeforeAnyTransformerRun() {
        clickStabilityTab();
        QVERIFY(view()->emptyShown());
        QVERIFY(view()->emptyLabel()->isVisible());
        QVERIFY(view()->emptyLabel()->text().contains("Stats every > 0"));
    }

    // Points that come within kMinRefreshMs of the last refresh, with no live run ticking, are
    // drawn once the interval is up (they were dropped until the next tick that never came).
    void aRefreshThatComesTooSoonIsDrawnLater() {
        StabilityView view;
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.addRun("run");
        const auto series = [](const char* indicator) {
            return std::vector<StabilitySeries>{
                {"1 TransformerBlock", indicator, PlotSeries{{1, 2}, {3, 4}}}};
        };
        view.setStoredSeries(0, series(metric_key::attn_logit_max));
        view.refresh(true);
        QCOMPARE(view.lineCount(), 1);
        view.setStoredSeries(0, series(metric_key::residual_rms));
        view.refresh();  // too soon after the forced one: deferred, not lost
        QTRY_COMPARE_WITH_TIMEOUT(view.lineCount(), 2, kStateWaitMs);
        QVERIFY(!view.hasPending());
    }

    void openShowsTheStoredIndicators() {
        w_->runBrowser()->refresh();
        w_->runBrowser()->selectRuns({first_});
        QVERIFY(browserButton("openButton")->isEnabled());
        QTest::mouseClick(browserButton("openButton"), Qt::LeftButton);
        clickStabilityTab();
        QTRY_COMPARE_WITH_TIMEOUT(view()->lineCount(), kLinesPerRun, kStateWaitMs);
        QVERIFY(!view()->emptyShown());
        // Statistics at steps 1, 2, 4, 6 and 8 of the eight.
        PlotWidget* logits = view()->plot(0);
        QCOMPARE(logits->graphCount(), 1);
        QCOMPARE(logits->graph(0)->dataCount(), 5);
        QCOMPARE(logits->graph(0)->name(), QString("block 1"));
    }

    void aLiveRunFillsTheTab() {
        QWidget* button = nullptr;
        for (auto* bar : w_->findChildren<QToolBar*>())
            if ((button = bar->widgetForAction(w_->trainAction()))) break;
        QVERIFY(button);
        QVERIFY2(button->isEnabled(), qPrintable(w_->blockReason()));  // Open loaded the run's settings
        QTest::mouseClick(button, Qt::LeftButton);
        clickStabilityTab();
        QTRY_COMPARE_WITH_TIMEOUT(w_->controller()->state(), TrainingController::State::Idle, kStateWaitMs);
        QTRY_VERIFY_WITH_TIMEOUT(view()->lineCount() >= kLinesPerRun && !view()->hasPending(), kStateWaitMs);
        int live_points = 0;
        for (int g = 0; g < view()->plot(0)->graphCount(); ++g)
            live_points = std::max(live_points, view()->plot(0)->graph(g)->dataCount());
        QCOMPARE(live_points, 5);
        QVERIFY(!view()->emptyShown());
    }

    void cleanupTestCase() { w_.reset(); }
};

QTEST_MAIN(TestWorkbenchStability)
#include "test_workbench_stability.moc"
