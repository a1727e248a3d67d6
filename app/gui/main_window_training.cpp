// MainWindow's training: Train, Compare, Pause and Stop, and the status bar that follows the
// live runs (state, progress, ETA). Their updates go through LiveRuns.
#include "app/gui/main_window.h"

#include <QAction>
#include <QLabel>
#include <QProgressBar>
#include <QStatusBar>

#include <cmath>

#include "app/gui/live_runs.h"
#include "app/gui/plot_board.h"
#include "app/gui/sweep_launcher.h"
#include "widgets/live_label.h"
#include "widgets/network_editor.h"
#include "widgets/precision_panel.h"
#include "widgets/run_browser.h"

namespace mpwb {

namespace {
QString eta_text(double seconds) {
    if (seconds < 0 || !std::isfinite(seconds)) return QObject::tr("ETA –");
    const int s = static_cast<int>(std::lround(seconds));
    if (s >= 3600) return QObject::tr("ETA %1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
    if (s >= 60) return QObject::tr("ETA %1 min %2 s").arg(s / 60).arg(s % 60);
    return QObject::tr("ETA %1 s").arg(s);
}
}  // namespace

void MainWindow::buildStatusBar() {
    device_label_ = new QLabel;
    backend_label_ = new QLabel;
    state_label_ = new QLabel(tr("Idle"));
    state_label_->setObjectName(QStringLiteral("stateLabel"));
    state_label_->setMinimumWidth(90);
    progress_ = new QProgressBar;
    progress_->setRange(0, 100);
    progress_->setValue(0);
    progress_->setMaximumWidth(220);
    progress_->setTextVisible(true);
    progress_->setFormat(QStringLiteral("%p%"));
    eta_label_ = new QLabel(tr("ETA –"));
    fix_label_size(eta_label_, {eta_text(99 * 3600 + 59 * 60), eta_text(59 * 60 + 59), tr("done")});
    sweep_progress_ = new SweepProgress(sweeps_);
    statusBar()->addPermanentWidget(sweep_progress_);
    statusBar()->addPermanentWidget(device_label_);
    statusBar()->addPermanentWidget(backend_label_);
    statusBar()->addPermanentWidget(state_label_);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(eta_label_);
}

bool MainWindow::launchUnlessBlocked(const QString& what, const std::function<bool()>& launch) {
    const QString why = blockReason();
    if (!why.isEmpty()) {
        statusBar()->showMessage(tr("%1: %2").arg(what, why), 8000);
        return false;
    }
    try {
        return launch();
    } catch (const std::exception& e) {
        showError(what, QString::fromUtf8(e.what()));
        return false;
    }
}

bool MainWindow::startTraining() {
    return launchUnlessBlocked(tr("Cannot train"), [this] {
        const TrainConfig c = currentConfig();
        const QString precision = QString::fromStdString(precision_name(c.precision));
        live_->begin({{precision, precision}});
        return controller_->start(editor_->networkJson(), c,
                                  experiment_name_.toStdString() + " " + precision.toStdString());
    });
}

bool MainWindow::startComparison() {
    return launchUnlessBlocked(tr("Cannot compare"), [this] {
        // FP32 selected: compare against FP16 mixed, the policy the paper is about. The panel
        // switches to it too, so its scaler fields (and live Apply) are the mixed run's.
        if (precision_->precision() == PrecisionKind::FP32)
            precision_->setPrecision(PrecisionKind::FP16Mixed);
        TrainConfig c = currentConfig();
        if (c.precision == PrecisionKind::FP32 || c.precision == PrecisionKind::TF32)
            c.precision = PrecisionKind::FP16Mixed;
        const PrecisionKind mixed = c.precision;
        const QString low = QString::fromStdString(precision_name(mixed));
        live_->begin({{QStringLiteral("fp32"), QStringLiteral("fp32")}, {low, low}});
        return controller_->start_comparison(editor_->networkJson(), c, mixed,
                                             experiment_name_.toStdString());
    });
}

void MainWindow::togglePause() {
    if (controller_->state() == TrainingController::State::Paused)
        controller_->resume();
    else
        controller_->pause();
    updateActions();
}

void MainWindow::stopTraining() {
    controller_->stop();
    updateActions();
}

void MainWindow::onStateChanged(TrainingController::State state) {
    static const char* names[] = {"Idle", "Starting", "Running", "Paused", "Stopping"};
    QString text = tr(names[static_cast<int>(state)]);
    if (controller_->comparing() && state != TrainingController::State::Idle) text += tr(" (comparison)");
    state_label_->setText(text);
    // A paused run has no time left to estimate.
    eta_label_->setVisible(state != TrainingController::State::Paused);
    // Points still waiting for their plot's drawing turn are drawn when the run pauses or ends.
    if (state == TrainingController::State::Paused) board_->flushAll();
    if (state == TrainingController::State::Idle) {
        board_->flushAll();
        browser_->refresh();
        eta_label_->setText(tr("done"));
    }
    updateActions();
}

void MainWindow::onProgress(double fraction, double eta_seconds) {
    // QProgressBar repaints synchronously (window flush included) on every visible change:
    // four times a second is enough to watch, and leaves the GUI thread to the plots.
    const bool finished = fraction >= 1.0;
    if (!finished && progress_clock_.isValid() && progress_clock_.elapsed() < 250) return;
    progress_clock_.start();
    progress_->setValue(static_cast<int>(std::floor(fraction * 100)));
    if (controller_->busy()) eta_label_->setText(eta_text(eta_seconds));
}

}  // namespace mpwb
