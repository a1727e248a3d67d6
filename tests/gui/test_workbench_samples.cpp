// GUI test of the Samples tab: a text run's samples with the prompt set in the tab, stored samples
// listed when a run is opened, and Generate from a finished run's final weights, reproducible for
// a seed. The network is fortunes-gpt shrunk to one block of width 16 over a small text file the
// test writes; a first short run recorded into a temporary database brings that experiment into
// the real MainWindow (run browser, Open), which then runs offscreen, driven by clicks. Waits are
// on states only.
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTextEdit>
#include <QToolBar>
#include <QtTest>

#include <memory>

#include "app/gui/main_window.h"
#include "app/gui/plot_board.h"
#include "core/backend/default_backend.h"
#include "core/common/json_input.h"
#include "core/train/dataset_source.h"
#include "resources/presets.h"
#include "sessions/recorded_run.h"
#include "sessions/run_store.h"
#include "widgets/run_browser.h"
#include "widgets/samples_view.h"

using namespace mpwb;

namespace {

constexpr int kStateWaitMs = 120000;  // ends a hang; the runs take well under a second

// fortunes-gpt's layers, one block of width 16 over a context of 16 characters.
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
    c.max_steps = 20;
    c.eval_every = 10;
    c.eval_batch = 32;
    c.batch_size = 8;
    c.schedule.warmup_steps = 2;
    c.threads = 1;
    c.samples.sampling.tokens = 30;
    return c;
}

void write_text(const QString& path) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    for (int i = 0; i < 120; ++i)
        f.write(QStringLiteral("the cat %1 sat on the mat; a dog %2 ran.\n").arg(i % 7).arg(i % 5).toUtf8());
}

}  // namespace

class TestWorkbenchSamples : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    std::string db_;
    int64_t first_ = 0;
    std::unique_ptr<MainWindow> w_;

    SamplesView* samples() const { return w_->plots()->samplesView(); }
    QPushButton* browserButton(const char* name) {
        auto* b = w_->runBrowser()->findChild<QPushButton*>(name);
        if (!b) qFatal("no button %s", name);
        return b;
    }
    void clickOpen(qint64 id) {
        w_->runBrowser()->refresh();
        w_->runBrowser()->selectRuns({id});
        QVERIFY(browserButton("openButton")->isEnabled());
        QTest::mouseClick(browserButton("openButton"), Qt::LeftButton);
    }
    void clickTrain() {
        QWidget* button = nullptr;
        for (auto* bar : w_->findChildren<QToolBar*>())
            if ((button = bar->widgetForAction(w_->trainAction()))) break;
        QVERIFY(button);
        QVERIFY2(button->isEnabled(), qPrintable(w_->blockReason()));
        QTest::mouseClick(button, Qt::LeftButton);
    }
    // Presses Generate and gives the text it wrote.
    void generate(QString& text) {
        const int before = samples()->sampleCount();
        QVERIFY(samples()->generateButton()->isEnabled());
        QTest::mouseClick(samples()->generateButton(), Qt::LeftButton);
        QVERIFY(!samples()->generateButton()->isEnabled());  // one generation at a time
        QTRY_VERIFY2_WITH_TIMEOUT(samples()->sampleCount() == before + 1, qPrintable(samples()->statusText()),
                                  kStateWaitMs);
        QVERIFY(samples()->newestSample()->generated);
        text = samples()->newestSample()->text;
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
        QTRY_COMPARE_WITH_TIMEOUT(w_->presetName(), QString("spiral-mlp"), kStateWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(w_->runBrowser()->rowCount(), 1, kStateWaitMs);
    }

    void aRunOnOtherDataSaysSamplesAreForText() {
        QVERIFY(!samples()->textExperiment());
        QVERIFY2(samples()->statusText().contains("text runs only"), qPrintable(samples()->statusText()));
        QVERIFY(!samples()->generateButton()->isEnabled());  // nothing to generate from
    }

    // Open lists the run's stored samples (one per evaluation) and loads its sample settings.
    void openListsTheStoredSamples() {
        clickOpen(first_);
        QVERIFY(samples()->textExperiment());
        QCOMPARE(samples()->promptEdit()->text(), QString("\\n"));  // the preset's prompt, a new line
        QCOMPARE(samples()->tokensSpin()->value(), 30);
        QTRY_COMPARE_WITH_TIMEOUT(samples()->sampleCount(), 2, kStateWaitMs);
        QCOMPARE(samples()->newestSample()->step, 20);
        QCOMPARE(samples()->newestSample()->prompt, QString("\n"));
        QVERIFY(!samples()->newestSample()->text.isEmpty());
        QTRY_VERIFY_WITH_TIMEOUT(
            samples()->textView()->toPlainText().contains(samples()->newestSample()->text), kStateWaitMs);
        QCOMPARE(samples()->runSelector()->currentData().toLongLong(), first_);
    }

    void anEmptyPromptBlocksTraining() {
        samples()->promptEdit()->clear();
        QVERIFY2(w_->blockReason().contains("prompt is empty"), qPrintable(w_->blockReason()));
        QVERIFY(!w_->trainAction()->isEnabled());
    }

    // The prompt and tokens typed in the tab are what the next run samples with, live.
    void trainingSamplesTheTabsPrompt() {
        QTest::keyClicks(samples()->promptEdit(), "the c");
        samples()->tokensSpin()->setValue(24);
        QVERIFY(w_->trainAction()->isEnabled());
        clickTrain();
        QVERIFY2(w_->controller()->busy(), qPrintable(w_->lastError()));
        QVERIFY(!samples()->generateButton()->isEnabled());  // Generate waits for the run
        QVERIFY2(samples()->statusText().contains("next run"), qPrintable(samples()->statusText()));
        QTRY_VERIFY_WITH_TIMEOUT(samples()->newestSample() && samples()->newestSample()->prompt == "the c",
                                 kStateWaitMs);
        const ShownSample live = *samples()->newestSample();
        QVERIFY(!live.generated);
        QVERIFY2(live.settings.startsWith("24 tokens"), qPrintable(live.settings));
        QTRY_VERIFY_WITH_TIMEOUT(samples()->textView()->toPlainText().contains("the c" + live.text),
                                 kStateWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(w_->controller()->state(), TrainingController::State::Idle, kStateWaitMs);

        const int64_t id = w_->controller()->run_ids().at(0);
        RunStore store(db_);
        const TrainConfig stored =
            train_config_from_json(parse_json_text(store.get_run(id).config_json, "stored run"));
        QCOMPARE(stored.samples.prompt, std::string("the c"));
        QCOMPARE(stored.samples.sampling.tokens, int64_t(24));
        // The ended run can be generated from at once.
        QCOMPARE(samples()->runSelector()->currentData().toLongLong(), id);
        QTRY_VERIFY_WITH_TIMEOUT(samples()->generateButton()->isEnabled(), kStateWaitMs);
    }

    // Generate on a stored run writes after the tab's prompt; the same seed writes the same text.
    void generateIsReproducibleForASeed() {
        const int64_t id = w_->controller()->run_ids().at(0);
        clickOpen(id);
        QTRY_COMPARE_WITH_TIMEOUT(samples()->sampleCount(), 2, kStateWaitMs);  // its two evaluations
        QCOMPARE(samples()->promptEdit()->text(), QString("the c"));
        samples()->seedSpin()->setValue(7);
        samples()->tokensSpin()->setValue(40);
        QString first, again;
        generate(first);
        QCOMPARE(first.size(), 40);  // one character per token
        const ShownSample* shown = samples()->newestSample();
        QCOMPARE(shown->prompt, QString("the c"));
        QCOMPARE(shown->step, int64_t(20));
        QVERIFY2(shown->settings.contains("seed 7"), qPrintable(shown->settings));
        QTRY_VERIFY_WITH_TIMEOUT(samples()->textView()->toPlainText().contains("the c" + first),
                                 kStateWaitMs);
        generate(again);
        QCOMPARE(again, first);
        // The text is the one `mpwb-cli generate` writes: the same load and sampler, on this thread.
        const TextGenerator::Result direct =
            TextGenerator::generate({db_, id, "the c", samples()->generateSettings()});
        QCOMPARE(QString::fromStdString(direct.text), first);
    }

    // A prompt the run's vocabulary cannot encode is refused with the reason in the tab.
    void anUnknownCharacterIsRefused() {
        samples()->promptEdit()->setText("the \\u00e9");
        QTest::mouseClick(samples()->generateButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(samples()->statusText().startsWith("Generate:"), kStateWaitMs);
        QVERIFY2(samples()->statusText().contains("prompt"), qPrintable(samples()->statusText()));
        QTRY_VERIFY_WITH_TIMEOUT(samples()->generateButton()->isEnabled(), kStateWaitMs);
    }

    void cleanupTestCase() { w_.reset(); }
};

QTEST_MAIN(TestWorkbenchSamples)
#include "test_workbench_samples.moc"
