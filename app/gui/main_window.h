// MainWindow: the workbench. Dockable panels (network editor, dataset, precision, training
// settings, run browser, event list) around the PlotBoard; a toolbar and shortcuts for Train,
// Pause, Stop and Compare (FP32 vs the selected mixed policy); a status bar with device, backend,
// run state, progress and ETA (hidden while paused). Stored runs open with their network and
// settings in the docks, and train again from there. A Help menu (About, shortcuts, the local
// documentation). The window only wires widgets to the TrainingController: it never touches the
// engine itself. The dock layout is saved and restored with QSettings; View › Reset layout
// brings back the default one, sized to the screen (it fits 1366×768).
//
// One file per concern: main_window.cpp (construction, actions, experiment, help, errors),
// main_window_layout.cpp (docks, sizes, saved layout), main_window_training.cpp (train, compare,
// pause, stop, status bar; the live runs' updates go through LiveRuns), main_window_runs.cpp
// (stored runs: open, load settings, train again, resume), main_window_exports.cpp (report and
// PyTorch export), main_window_sweeps.cpp (sweeps and the hyperparameter view) and
// main_window_samples.cpp (the Samples tab's settings and Generate).
#pragma once
#include <QElapsedTimer>
#include <QList>
#include <QMainWindow>
#include <QString>
#include <QStringList>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/text_generator.h"
#include "app/gui/training_controller.h"
#include "core/train/train_config.h"

class QAction;
class QDialog;
class QDockWidget;
class QLabel;
class QProgressBar;
class QTableWidget;

namespace mpwb {

class DatasetPanel;
class EventList;
class HparamView;
class LiveRuns;
class SweepLauncher;
class SweepProgress;
class NetworkEditor;
class PlotBoard;
class PrecisionPanel;
class RunBrowser;
class RunStore;
class TrainingSettingsPanel;
struct Run;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        std::string db_path;         // the run store (resolved by main: --db or the default)
        QString preset;              // empty: fashion-mlp when Fashion-MNIST is installed, else spiral-mlp
        bool restore_layout = true;  // QSettings window geometry and dock state
        bool record = true;          // record runs into the store
        double chunk_seconds = 0.1;  // comparison turn length
    };

    explicit MainWindow(Options options, QWidget* parent = nullptr);
    ~MainWindow() override;

    // The experiment of a built-in preset: network, dataset and training settings.
    void loadPreset(const QString& name);
    // Network, dataset, precision and training settings as the panels show them.
    TrainConfig currentConfig() const;
    // Why Train is disabled (empty when it is enabled).
    QString blockReason() const;

    bool startTraining();
    bool startComparison();
    void togglePause();
    void stopTraining();
    // Shows stored runs' curves together (run browser "Compare", the hyperparameter view's
    // overlay), each run once; refused while training or past kMaxOpenRuns (run_id_list.h). The
    // docks keep their settings.
    bool openStoredRuns(const QList<qint64>& ids);
    // Run browser "Open": openStoredRuns, then the first run's network and settings in the docks.
    bool openRuns(const QList<qint64>& ids);
    // A stored run's network, dataset, precision, scaler, recipe and training settings into the
    // docks; the network replaces the editor's as one undoable step. False with the reason in
    // lastError() (and the status bar) when the run's stored settings cannot be read.
    bool loadRunSettings(qint64 id);
    // "Train again with these settings": loadRunSettings, then Train.
    bool trainAgain(qint64 id);
    // View › Reset layout: the default dock layout and window size.
    void resetLayout();
    // Help menu: the About box and the shortcut list (non-modal, returned for tests); the local
    // documentation's README through the desktop (false when none is found).
    QDialog* showAbout();
    QDialog* showShortcuts();
    bool openDocumentation();
    // The window size the default layout is made for: 1580×960 where the screen allows it,
    // else what its free area holds.
    QSize defaultSize() const;
    // Writes a comparison report without a dialog; returns the files written (empty on error,
    // with the message in the status bar and lastError()).
    QStringList exportReport(const QList<qint64>& ids, const QString& path);
    // Writes a run's final weights as safetensors at `safetensors_path` and the PyTorch script
    // beside it (same name, .py); never overwrites. Returns the files written (empty on error,
    // shown in a message box).
    QStringList exportForPyTorch(qint64 id, const QString& safetensors_path);
    // Runs a sweep spec through mpwb-cli into this window's database (no dialogs); when it
    // ends, its runs open in the hyperparameter view. False with the reason in lastError().
    bool startSweep(const QString& spec_path, int jobs);
    // The runs, or a sweep's runs, in the hyperparameter view, raised.
    void showHyperparameters(const QList<qint64>& ids);
    bool showSweep(qint64 sweep_id);
    // Continues an INTERRUPTED run from its newest checkpoint, live, like a new run (refused
    // while training). The network and settings are the run's own.
    bool resumeRun(qint64 id);
    // The Samples tab's Generate: text from a finished text run's final weights, drawn off the GUI
    // thread; the tab shows it when it comes. False (the reason in the tab) while a run trains or
    // a generation is in progress.
    bool generateSample(qint64 run_id, const std::string& prompt, const SamplingSettings& settings);
    bool generating() const { return generator_->busy(); }

    NetworkEditor* networkEditor() const { return editor_; }
    PrecisionPanel* precisionPanel() const { return precision_; }
    TrainingSettingsPanel* trainingPanel() const { return training_; }
    RunBrowser* runBrowser() const { return browser_; }
    HparamView* hparamView() const { return hparams_; }
    SweepLauncher* sweepLauncher() const { return sweeps_; }
    QAction* sweepAction() const { return sweep_action_; }
    PlotBoard* plots() const { return board_; }
    TrainingController* controller() const { return controller_; }
    QTableWidget* eventList() const;
    EventList* eventPanel() const { return events_; }
    QLabel* etaLabel() const { return eta_label_; }
    QAction* trainAgainAction() const { return train_again_; }
    QAction* resetLayoutAction() const { return reset_layout_; }
    QAction* trainAction() const { return train_; }
    QAction* pauseAction() const { return pause_; }
    QAction* stopAction() const { return stop_; }
    QAction* compareAction() const { return compare_; }
    QString lastError() const { return last_error_; }
    QString presetName() const { return preset_name_; }
    // GUI-thread seconds spent routing updates into the widgets (benchmark figure).
    double updateSeconds() const;

signals:
    // The first time the window is exposed (startup timing).
    void firstExposed();

protected:
    void closeEvent(QCloseEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    // main_window.cpp: the signal wiring of the constructor, and what waits for the first expose.
    void connectController();
    void connectPanels();
    void connectRunBrowser();
    void finishStartup();
    void buildActions();
    void buildHelpMenu();
    // Network, dataset, precision and training settings into the docks; the network as one
    // undoable edit named undo_text.
    void showExperiment(const TrainConfig& config, const nlohmann::json& network, const QString& undo_text);
    void updateActions();
    // main_window_precision.cpp: precision rules between the panel, the editor and the advisor.
    void connectPrecisionRules();
    void syncEditorPrecision();
    void onDatasetChanged();
    void showError(const QString& title, const QString& text);

    // main_window_layout.cpp
    void buildDocks();
    // The docks' default sizes for the window's size (after the first show and Reset layout).
    void applyDefaultDockSizes();
    // A bottom dock raised and, when shorter, grown to `height`.
    void raiseBottomDock(QDockWidget* dock, int height);
    void saveLayout();
    void restoreLayout();

    // main_window_training.cpp
    void buildStatusBar();
    // Starts runs through `launch` unless blockReason() says why not (then in the status bar,
    // after `what`); what `launch` throws is shown in an error box titled `what`.
    bool launchUnlessBlocked(const QString& what, const std::function<bool()>& launch);
    void onStateChanged(TrainingController::State state);
    void onProgress(double fraction, double eta_seconds);

    // main_window_runs.cpp
    // A stored run's decision boundary with its dataset's points, when the store has one.
    void showStoredBoundary(RunStore& store, const Run& run, int board_index);
    // The run's events into the event list, each row labelled `label`.
    void addStoredEvents(RunStore& store, qint64 id, const QString& label);

    // main_window_exports.cpp
    void onReportRequested(const QList<qint64>& ids);
    void onPyTorchExportRequested(qint64 id);

    // main_window_samples.cpp
    void connectSamples();
    void showGenerated(const TextGenerator::Result& result);
    // The Samples tab's settings into the configuration of the next run (text runs only).
    void applySampleSettings(TrainConfig& config) const;

    // main_window_sweeps.cpp
    void onSweepActionTriggered();
    void raiseHyperparameters();
    void onSweepFinished(qint64 sweep_id, bool ok, const QString& message);

    Options options_;
    TrainingController* controller_ = nullptr;
    PlotBoard* board_ = nullptr;
    NetworkEditor* editor_ = nullptr;
    DatasetPanel* dataset_ = nullptr;
    PrecisionPanel* precision_ = nullptr;
    TrainingSettingsPanel* training_ = nullptr;
    RunBrowser* browser_ = nullptr;
    HparamView* hparams_ = nullptr;
    SweepLauncher* sweeps_ = nullptr;
    SweepProgress* sweep_progress_ = nullptr;
    QAction* sweep_action_ = nullptr;
    EventList* events_ = nullptr;
    QAction* train_ = nullptr;
    QAction* train_again_ = nullptr;
    QAction* reset_layout_ = nullptr;
    QAction* pause_ = nullptr;
    QAction* stop_ = nullptr;
    QAction* compare_ = nullptr;
    QLabel* device_label_ = nullptr;
    QLabel* backend_label_ = nullptr;
    QLabel* state_label_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QElapsedTimer progress_clock_;  // since the progress bar and ETA last changed
    QLabel* eta_label_ = nullptr;
    LiveRuns* live_ = nullptr;
    TextGenerator* generator_ = nullptr;

    TrainConfig base_config_;  // the preset's settings the panels do not show
    QString preset_name_;
    // What new runs are named after: the preset, or the stored run whose settings were loaded.
    QString experiment_name_;
    QByteArray default_state_;  // the docks as built, for Reset layout
    bool exposed_ = false;
    bool layout_restored_ = false;
    // The docks by what they hold; each also has an objectName ("dockRuns"), which the saved
    // layout and the tests find it by.
    struct Docks {
        QDockWidget* network = nullptr;
        QDockWidget* runs = nullptr;
        QDockWidget* events = nullptr;
        QDockWidget* precision = nullptr;
        QDockWidget* training = nullptr;
        QDockWidget* dataset = nullptr;
        QDockWidget* hparams = nullptr;
        // In the View menu's order.
        std::array<QDockWidget*, 7> all() const {
            return {network, runs, hparams, events, precision, training, dataset};
        }
    };
    Docks docks_;
    QString last_error_;
};

}  // namespace mpwb
