// LiveRuns: routing the controller's updates of the live runs into the window's widgets.
#include "app/gui/live_runs.h"

#include <QComboBox>
#include <QElapsedTimer>

#include <limits>

#include "app/gui/event_list.h"
#include "app/gui/plot_board.h"
#include "core/train/event_text.h"
#include "core/train/run_status.h"
#include "widgets/precision_panel.h"
#include "widgets/samples_view.h"

namespace mpwb {

LiveRuns::LiveRuns(PlotBoard* board, EventList* events, PrecisionPanel* precision, QObject* parent)
    : QObject(parent), board_(board), events_(events), precision_(precision) {}

void LiveRuns::begin(const std::vector<std::pair<QString, QString>>& runs) {
    board_->clear();
    forget();
    for (const auto& [label, precision] : runs) {
        board_runs_.push_back(board_->addRun(label, precision, reference_format_for(precision)));
        labels_.push_back(label);
        text_runs_.push_back(false);
    }
    // The gradient view starts on the mixed run of a comparison: its gradients are the ones
    // the format can lose.
    board_->runSelector()->setCurrentIndex(static_cast<int>(runs.size()) - 1);
    precision_->clearEvents();
    events_->clear();
    board_->showTab(tr("Curves"));
}

void LiveRuns::forget() {
    board_runs_.clear();
    labels_.clear();
    text_runs_.clear();
}

void LiveRuns::route(const std::vector<RunUpdate>& updates) {
    QElapsedTimer timer;
    timer.start();
    for (const auto& u : updates) {
        if (u.slot < 0 || u.slot >= static_cast<int>(board_runs_.size())) continue;
        // The readout follows the run whose scale can be tuned: the mixed side of a comparison.
        routeOne(u, updates.size() == 1 || u.slot == 1);
    }
    board_->replot();
    update_seconds_ += static_cast<double>(timer.nsecsElapsed()) * 1e-9;
}

void LiveRuns::routeOne(const RunUpdate& u, bool readout_run) {
    const int run = board_runs_[static_cast<size_t>(u.slot)];
    const QString label = labels_[static_cast<size_t>(u.slot)];
    if (u.run_id && board_->runId(run) != u.run_id) board_->setRunId(run, u.run_id);
    if (u.start && u.dataset) {
        board_->setBoundaryPoints(run, *u.dataset);
        text_runs_[static_cast<size_t>(u.slot)] = u.dataset->vocabulary.has_value();
    }
    board_->appendSteps(run, u.steps);
    board_->appendEvals(run, u.evals);
    board_->appendStats(run, u.stats);
    board_->appendScaling(run, u.scaling);
    board_->appendStability(run, u.stability);
    if (u.boundary) board_->setBoundary(run, *u.boundary);
    if (readout_run && !u.steps.empty()) showReadout(u);
    addEvents(u, label, readout_run);
    if (u.end) {
        reportEnd(u, label);
        // A text run that took a step has final weights to generate from.
        if (u.run_id && u.end->steps > 0 && text_runs_[static_cast<size_t>(u.slot)])
            board_->samplesView()->addGenerateRun(u.run_id, tr("#%1 %2").arg(u.run_id).arg(label));
    }
    reportErrors(u, label);
}

// The newest step's scale, skips and overflows, and the newest activation-gradient headroom.
void LiveRuns::showReadout(const RunUpdate& u) {
    const auto& m = u.steps.back();
    float headroom = std::numeric_limits<float>::quiet_NaN();
    for (auto it = u.stats.rbegin(); it != u.stats.rend(); ++it)
        if (it->kind == GradientKind::Activation) {
            headroom = it->stats.headroom_log2;
            break;
        }
    precision_->setReadout(m.loss_scale, m.skipped_count, m.overflow_count, headroom);
}

void LiveRuns::addEvents(const RunUpdate& u, const QString& label, bool readout_run) {
    if (u.events.empty()) return;
    events_->beginBatch();  // one repaint per batch
    for (const auto& e : u.events) {
        const QString text = QString::fromStdString(event_text(e.kind, e.detail));
        const QString json = QString::fromStdString(e.detail.dump());
        const QString kind = QString::fromStdString(e.kind);
        const QString source = QString::fromStdString(e.source);
        events_->addEvent(label, e.step, kind, source, text, json);
        if (readout_run) precision_->addEvent(e.step, kind, source, text, json);
        if (auto sample = ShownSample::fromEvent(label, e.step, kind, e.detail))
            board_->samplesView()->addSample(std::move(*sample));
    }
    events_->endBatch();
}

void LiveRuns::reportEnd(const RunUpdate& u, const QString& label) {
    const auto& s = *u.end;
    QString text = tr("%1: %2 after %3 steps, test accuracy %4, %5 samples/s")
                       .arg(label, QString::fromUtf8(run_status_name(s.status)))
                       .arg(s.steps)
                       .arg(s.test_accuracy, 0, 'f', 4)
                       .arg(s.samples_per_second, 0, 'f', 0);
    if (u.run_id) text += tr(" (run #%1)").arg(u.run_id);
    emit runEnded(text);
}

void LiveRuns::reportErrors(const RunUpdate& u, const QString& label) {
    for (const auto& err : u.errors) {
        const QString text = tr("%1: %2").arg(label, QString::fromStdString(err));
        events_->addEvent(label, u.steps.empty() ? 0 : u.steps.back().step, tr("error"), tr("workbench"),
                          QString::fromStdString(err), {});
        // What is kept depends on how far the run got (nothing, an empty row, or its steps).
        // A recording failure while the run trains on is no failure of the run.
        const bool recording_only = err.rfind("recording failed:", 0) == 0;
        emit runFailed(
            recording_only ? tr("Recording stopped") : tr("Run failed"),
            u.kept.empty() ? text : text + QStringLiteral("\n\n") + QString::fromStdString(u.kept));
    }
}

}  // namespace mpwb
