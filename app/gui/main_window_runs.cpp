// MainWindow's stored runs: their curves and events on the board, their settings in the docks
// (Open, Train again), and Resume, which continues an INTERRUPTED run live from its checkpoint.
#include "app/gui/main_window.h"

#include <QDockWidget>
#include <QStatusBar>

#include "app/gui/event_list.h"
#include "app/gui/live_runs.h"
#include "app/gui/plot_board.h"
#include "app/gui/run_id_list.h"
#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/train/dataset_source.h"
#include "core/train/decision_boundary.h"
#include "core/train/event_text.h"
#include "sessions/run_store.h"
#include "sessions/run_vocabulary.h"
#include "widgets/run_browser.h"
#include "widgets/samples_view.h"

namespace mpwb {

namespace {
// A bottom dock's title bar and the tab bar under it, beyond its content's height.
constexpr int kDockChromeHeight = 60;

// Stored runs are shown (and a resume prepared) from a read-only connection; the run browser's
// writable one detects crashed runs.
RunStore::Options reading_options() {
    RunStore::Options o;
    o.read_only = true;
    o.detect_interrupted = false;
    return o;
}

// A stored run's settings and network, as it trained.
struct StoredExperiment {
    TrainConfig config;
    nlohmann::json network;
};

StoredExperiment stored_experiment(const Run& run) {
    const std::string what = "run " + std::to_string(run.id);
    return {train_config_from_json(parse_json_text(run.config_json, "configuration of " + what)),
            parse_json_text(run.network_json, "network of " + what)};
}

// A stored event row: its detail without the source RunRecorder added, and that source; a row
// whose JSON cannot be read keeps its stored text.
struct StoredEvent {
    QString source, text;
    nlohmann::json detail;
};

StoredEvent stored_event(const Event& e) {
    nlohmann::json detail;
    try {
        detail = parse_json_text(e.json, "event " + std::to_string(e.id));
    } catch (const JsonInputError&) {
        return {{}, QString::fromStdString(e.json), {}};
    }
    std::string source;
    if (detail.is_object() && detail.contains("source") && detail["source"].is_string()) {
        source = detail["source"].get<std::string>();
        detail.erase("source");
    }
    QString text = QString::fromStdString(event_text(e.kind, detail));
    return {QString::fromStdString(source), std::move(text), std::move(detail)};
}

// A stored text run Generate can sample from: one that ended (its final weights are committed
// before its status) and kept a vocabulary. A run whose weights are missing after all is refused
// by Generate with the reason.
bool can_generate_from(const Run& run) {
    if (run.status == RunStatus::Running) return false;
    try {
        return run_vocabulary(run).has_value();
    } catch (const std::exception&) {
        return false;  // a damaged vocabulary: Generate could not map ids to text
    }
}
}  // namespace

bool MainWindow::loadRunSettings(qint64 id) {
    try {
        RunStore store(options_.db_path, reading_options());
        const StoredExperiment stored = stored_experiment(store.get_run(id));
        preset_name_.clear();  // the preset menu may load the same preset again
        experiment_name_ = tr("rerun of #%1").arg(id);
        showExperiment(stored.config, stored.network, tr("Load run #%1").arg(id));
        return true;
    } catch (const std::exception& e) {
        last_error_ = tr("Run #%1's settings cannot be loaded: %2").arg(id).arg(QString::fromUtf8(e.what()));
        statusBar()->showMessage(last_error_, 15000);
        return false;
    }
}

bool MainWindow::openRuns(const QList<qint64>& requested) {
    const QList<qint64> ids = distinct_run_ids(requested);
    if (!openStoredRuns(ids)) return false;
    if (!loadRunSettings(ids.first()))
        return true;  // the curves are shown; the status bar says why not the settings
    statusBar()->showMessage(ids.size() == 1
                                 ? tr("Showing run #%1; the panels hold its settings").arg(ids.first())
                                 : tr("Showing %1 stored runs; the panels hold the settings of run #%2")
                                       .arg(ids.size())
                                       .arg(ids.first()),
                             10000);
    return true;
}

bool MainWindow::trainAgain(qint64 id) {
    if (controller_->busy()) {
        statusBar()->showMessage(tr("Cannot train again: a run is going"), 8000);
        return false;
    }
    return loadRunSettings(id) && startTraining();
}

bool MainWindow::openStoredRuns(const QList<qint64>& requested) {
    if (controller_->busy()) {
        statusBar()->showMessage(tr("Stop the run before opening stored runs"), 8000);
        return false;
    }
    const QList<qint64> ids = distinct_run_ids(requested);
    if (ids.isEmpty()) return false;
    if (ids.size() > kMaxOpenRuns) {
        showError(tr("Open runs"), tr("%1 runs are selected; the workbench shows at most %2 together")
                                       .arg(ids.size())
                                       .arg(kMaxOpenRuns));
        return false;
    }
    try {
        RunStore store(options_.db_path, reading_options());
        board_->clear();
        live_->forget();
        events_->clear();
        events_->beginBatch();
        // The run browser, where the runs came from, tall enough for its buttons (the strip was
        // sized for the network editor).
        raiseBottomDock(docks_.runs, std::min(browser_->minimumSizeHint().height() + kDockChromeHeight,
                                              height() * 45 / 100));
        for (qint64 id : ids) {
            const int index = board_->addStoredRun(store, id);
            const Run run = store.get_run(id);
            showStoredBoundary(store, run, index);
            const QString label = QStringLiteral("#%1 %2").arg(id).arg(QString::fromStdString(run.name));
            addStoredEvents(store, id, label);
            if (can_generate_from(run)) board_->samplesView()->addGenerateRun(id, label);
        }
        events_->endBatch();
        board_->replot();
        board_->showTab(tr("Curves"));
        statusBar()->showMessage(tr("Showing %n stored run(s)", nullptr, static_cast<int>(ids.size())), 8000);
        return true;
    } catch (const std::exception& e) {
        events_->endBatch();
        showError(tr("Open runs"), QString::fromUtf8(e.what()));
        return false;
    }
}

void MainWindow::addStoredEvents(RunStore& store, qint64 id, const QString& label) {
    for (const auto& e : store.events(id)) {
        // The stored row is the event's detail with its source added (RunRecorder).
        const StoredEvent shown = stored_event(e);
        const QString kind = QString::fromStdString(e.kind);
        events_->addEvent(label, e.step, kind, shown.source, shown.text, QString::fromStdString(e.json));
        if (auto sample = ShownSample::fromEvent(label, e.step, kind, shown.detail))
            board_->samplesView()->addSample(std::move(*sample));
    }
}

void MainWindow::showStoredBoundary(RunStore& store, const Run& run, int board_index) {
    const auto stored = store.boundary(run.id);
    if (!stored) return;
    try {
        // The data points come from the run's own dataset settings (the synthetic sets are
        // generated from their seed, so they are the points the run trained on).
        const Dataset data = load_dataset(stored_experiment(run).config.dataset);
        board_->setBoundaryPoints(board_index, data);
        board_->setBoundary(board_index, boundary_from_blob(stored->second));
    } catch (const std::exception& e) {
        // The curves are there; only the boundary cannot be shown (a CSV file that moved, a
        // damaged blob): say so and go on.
        statusBar()->showMessage(
            tr("Run #%1: decision boundary not shown: %2").arg(run.id).arg(QString::fromUtf8(e.what())),
            10000);
    }
}

bool MainWindow::resumeRun(qint64 id) {
    return launchUnlessBlocked(tr("Cannot resume"), [this, id] {
        // The run's own network and settings, and its newest checkpoint; the recorder reopens
        // the run itself when training starts (RunRecorder::Options::resume_run_id).
        RunStore store(options_.db_path, reading_options());
        const Run run = store.get_run(id);
        if (run.status != RunStatus::Interrupted)
            throw Error("run " + std::to_string(id) + " is " + to_string(run.status) + ", not INTERRUPTED");
        auto checkpoint = store.latest_checkpoint(id);
        if (!checkpoint) throw Error("run " + std::to_string(id) + " has no checkpoint");
        const StoredExperiment stored = stored_experiment(run);
        const QString precision = QString::fromStdString(run.precision);
        live_->begin({{QStringLiteral("#%1 %2").arg(id).arg(QString::fromStdString(run.name)), precision}});
        const int64_t step = checkpoint->step;
        ResumeSource resume{id, std::make_shared<const TrainingCheckpoint>(std::move(*checkpoint))};
        const bool started =
            controller_->continue_run(stored.network, stored.config, std::move(resume), run.name);
        if (started) statusBar()->showMessage(tr("Resuming run #%1 after step %2").arg(id).arg(step), 8000);
        return started;
    });
}

}  // namespace mpwb
