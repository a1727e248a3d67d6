// MainWindow's Samples tab: its prompt and settings become the next text run's samples
// (TrainConfig.samples), and Generate samples from a finished run through the TextGenerator. The
// samples of live and stored runs reach the tab through LiveRuns and openStoredRuns.
#include <QStatusBar>

#include "app/gui/main_window.h"
#include "app/gui/plot_board.h"
#include "widgets/samples_view.h"

namespace mpwb {

void MainWindow::connectSamples() {
    generator_ = new TextGenerator(this);
    SamplesView* samples = board_->samplesView();
    connect(samples, &SamplesView::generateRequested, this, &MainWindow::generateSample);
    connect(samples, &SamplesView::settingsChanged, this, &MainWindow::updateActions);
    connect(generator_, &TextGenerator::finished, this, &MainWindow::showGenerated);
}

void MainWindow::applySampleSettings(TrainConfig& config) const {
    // Other runs keep the preset's settings, which they never use: an emptied prompt field must
    // not make a spiral run invalid.
    if (config.dataset.is_text()) config.samples = board_->samplesView()->sampleConfig();
}

bool MainWindow::generateSample(qint64 run_id, const std::string& prompt, const SamplingSettings& settings) {
    SamplesView* samples = board_->samplesView();
    QString why;
    if (controller_->busy())
        why = tr("a run is training; Generate waits until it ends");
    else if (generator_->busy())
        why = tr("a generation is in progress");
    else if (run_id <= 0)
        why = tr("no run to generate from: open a finished text run or train one");
    if (why.isEmpty() && generator_->start({options_.db_path, run_id, prompt, settings})) {
        samples->setGenerating(true);
        return true;
    }
    last_error_ = tr("Generate: %1").arg(why);
    samples->showGenerateError(last_error_);
    return false;
}

void MainWindow::showGenerated(const TextGenerator::Result& result) {
    SamplesView* samples = board_->samplesView();
    samples->setGenerating(false);
    if (!result.error.empty()) {
        last_error_ = tr("Generate: %1").arg(QString::fromStdString(result.error));
        samples->showGenerateError(last_error_);
        return;
    }
    const SamplingSettings& s = result.request.sampling;
    ShownSample shown;
    shown.run = tr("#%1").arg(result.request.run_id);
    shown.step = result.step;
    shown.prompt = QString::fromStdString(result.prompt);
    shown.text = QString::fromStdString(result.text);
    shown.settings =
        ShownSample::settingsText(s.tokens, s.temperature, s.top_k) + tr(" · seed %1").arg(s.seed);
    shown.generated = true;
    samples->addSample(std::move(shown));
    statusBar()->showMessage(tr("Generated %1 tokens from run #%2").arg(s.tokens).arg(result.request.run_id),
                             5000);
}

}  // namespace mpwb
