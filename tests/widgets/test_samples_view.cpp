// Tests of the Samples tab's widget alone (widgets/samples_view.h): the controls and the sample
// settings they stand for (escapes in the prompt field), the list newest first with at most
// kMaxShownSamples, sample events read safely whatever their detail holds, and the Generate
// button's request and refusals.
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTextEdit>
#include <QtTest>

#include "widgets/samples_view.h"

using namespace mpwb;

namespace {

ShownSample sample_at(int64_t step) {
    ShownSample s;
    s.run = QStringLiteral("fp32");
    s.step = step;
    s.prompt = QStringLiteral("Q: ");
    s.text = QStringLiteral("text of step %1").arg(step);
    return s;
}

}  // namespace

class TestSamplesView : public QObject {
    Q_OBJECT

private slots:
    void controlsRoundTripTheSettings() {
        SamplesView view;
        TextSampleConfig config;
        config.prompt = "Q:\n\tA \\";
        config.sampling = {.tokens = 77, .temperature = 0.5f, .top_k = 12, .seed = 0};
        view.setSampleConfig(config);
        QCOMPARE(view.promptEdit()->text(), QString("Q:\\n\\tA \\\\"));
        QCOMPARE(view.topKSpin()->text(), QString("12"));
        QCOMPARE(view.sampleConfig(), config);
        view.topKSpin()->setValue(0);
        QCOMPARE(view.topKSpin()->text(), QString("all"));
        view.seedSpin()->setValue(9);
        QCOMPARE(view.generateSettings().seed, uint64_t(9));
        QCOMPARE(view.sampleConfig().sampling.seed, uint64_t(0));  // the trainer seeds its own samples
    }

    void newestIsOnTopAndTheListIsBounded() {
        SamplesView view;
        for (int step = 1; step <= SamplesView::kMaxShownSamples + 5; ++step) view.addSample(sample_at(step));
        QCOMPARE(view.sampleCount(), SamplesView::kMaxShownSamples);
        QCOMPARE(view.newestSample()->step, int64_t(SamplesView::kMaxShownSamples + 5));
        QTRY_VERIFY(!view.textView()->toPlainText().isEmpty());
        const QString shown = view.textView()->toPlainText();
        const auto newest = shown.indexOf(QString("text of step %1").arg(SamplesView::kMaxShownSamples + 5));
        const auto older = shown.indexOf(QString("text of step %1").arg(SamplesView::kMaxShownSamples));
        QVERIFY(newest >= 0 && older > newest);
        QVERIFY(shown.endsWith("text of step 6"));  // the oldest kept is at the bottom; 1 to 5 left
    }

    void sampleEventsAreReadWhateverTheyHold() {
        const auto good = ShownSample::fromEvent(
            "r", 5, "sample",
            {{"prompt", "a"}, {"text", "bc"}, {"tokens", 2}, {"temperature", 0.8}, {"top_k", 0}});
        QVERIFY(good);
        QCOMPARE(good->text, QString("bc"));
        QCOMPARE(good->settings, QString("2 tokens · temperature 0.8 · top-k all"));
        const auto odd = ShownSample::fromEvent("r", 5, "sample", {{"prompt", 3}, {"tokens", "many"}});
        QVERIFY(odd);
        QVERIFY(odd->prompt.isEmpty() && odd->text.isEmpty());
        QVERIFY(ShownSample::fromEvent("r", 5, "sample", nlohmann::json::array()));
        const auto failed = ShownSample::fromEvent("r", 5, "sample_failed", {{"error", "no vocabulary"}});
        QVERIFY(failed && failed->failed && failed->text.contains("no vocabulary"));
        QVERIFY(!ShownSample::fromEvent("r", 5, "lr_changed", {{"to", 1}}));
    }

    void generateAsksForTheChosenRunAndWaitsWhenBlocked() {
        SamplesView view;
        QVERIFY(!view.generateButton()->isEnabled());  // no run yet
        view.addGenerateRun(3, "#3");
        view.addGenerateRun(4, "#4");
        QCOMPARE(view.generateRun(), qint64(4));
        view.setGenerateBlocked("a run is training");
        QVERIFY(!view.generateButton()->isEnabled());
        QVERIFY2(view.statusText().contains("next run"), qPrintable(view.statusText()));
        view.setGenerateBlocked({});
        std::vector<std::pair<qint64, std::string>> asked;
        connect(&view, &SamplesView::generateRequested, this,
                [&](qint64 run, const std::string& prompt, const SamplingSettings&) {
                    asked.emplace_back(run, prompt);
                });
        view.promptEdit()->setText("hi\\n");
        QTest::mouseClick(view.generateButton(), Qt::LeftButton);
        QCOMPARE(asked.size(), size_t(1));
        QCOMPARE(asked[0].first, qint64(4));
        QCOMPARE(asked[0].second, std::string("hi\n"));
        view.setTextExperiment(false);
        QVERIFY2(view.statusText().contains("text runs only"), qPrintable(view.statusText()));
        view.clearSamples();
        QVERIFY(!view.generateButton()->isEnabled());
    }
};

QTEST_MAIN(TestSamplesView)
#include "test_samples_view.moc"
