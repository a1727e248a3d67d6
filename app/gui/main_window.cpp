// MainWindow: docks, actions, status bar, and the routing of controller updates into the plots,
// the event list and the precision panel's readout.
#include "app/gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDesktopServices>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QInputDialog>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTableWidget>
#include <QTimer>
#include <QToolBar>
#include <QUrl>
#include <QWindow>

#include <cmath>
#include <limits>

#include "app/gui/event_list.h"
#include "app/gui/help_dialogs.h"
#include "app/gui/plot_board.h"
#include "app/gui/run_id_list.h"
#include "app/gui/sweep_launcher.h"
#include "app/report/report.h"
#include "core/backend/default_backend.h"
#include "core/backend/backend.h"
#include "core/common/json_input.h"
#include "core/common/error.h"
#include "core/train/dataset_source.h"
#include "core/train/decision_boundary.h"
#include "core/train/event_text.h"
#include "resources/presets.h"
#include "sessions/run_export.h"
#include "sessions/run_store.h"
#include "widgets/dataset_panel.h"
#include "widgets/hparam_view.h"
#include "widgets/live_label.h"
#include "widgets/network_editor.h"
#include "widgets/output_guard.h"
#include "widgets/precision_panel.h"
#include "widgets/run_browser.h"
#include "widgets/training_settings_panel.h"

namespace mpwb {

namespace {
// A bottom dock's title bar and the tab bar under it, beyond its content's height.
constexpr int kDockChromeHeight = 60;

QString eta_text(double seconds) {
    if (seconds < 0 || !std::isfinite(seconds)) return QObject::tr("ETA –");
    const int s = static_cast<int>(std::lround(seconds));
    if (s >= 3600) return QObject::tr("ETA %1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
    if (s >= 60) return QObject::tr("ETA %1 min %2 s").arg(s / 60).arg(s % 60);
    return QObject::tr("ETA %1 s").arg(s);
}

// Every dock's content scrolls when the dock is smaller than it (a 768-pixel screen is shorter
// than the settings panels), so the window fits small screens and nothing is cut off; the right
// column's settings panels keep a readable width.
QDockWidget* make_dock(QMainWindow* window, const QString& title, const QString& name, QWidget* content,
                       Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, window);
    dock->setObjectName(name);  // saveState/restoreState find docks by name
    if (area == Qt::RightDockWidgetArea) content->setMinimumWidth(300);
    auto* area_widget = new QScrollArea;
    area_widget->setWidgetResizable(true);
    area_widget->setFrameShape(QFrame::NoFrame);
    area_widget->setWidget(content);
    dock->setWidget(area_widget);
    window->addDockWidget(area, dock);
    return dock;
}
// Stored runs are shown (and a resume prepared) from a read-only connection; the run browser's
// writable one detects crashed runs.
RunStore::Options reading_options() {
    RunStore::Options o;
    o.read_only = true;
    o.detect_interrupted = false;
    return o;
}
}  // namespace

MainWindow::MainWindow(Options options, QWidget* parent) : QMainWindow(parent), options_(std::move(options)) {
    setWindowTitle(tr("MP Workbench"));
    setObjectName(QStringLiteral("MainWindow"));
    setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);

    TrainingController::Options co;
    co.db_path = options_.db_path;
    co.record = options_.record;
    co.chunk_seconds = options_.chunk_seconds;
    controller_ = new TrainingController(co, this);
    options_.db_path = controller_->db_path();
    set_guarded_database(QString::fromStdString(options_.db_path));

    board_ = new PlotBoard(this);
    setCentralWidget(board_);
    buildActions();
    buildDocks();
    buildStatusBar();

    connect(controller_, &TrainingController::updates, this, &MainWindow::onUpdates);
    connect(controller_, &TrainingController::stateChanged, this, &MainWindow::onStateChanged);
    connect(controller_, &TrainingController::progress, this, &MainWindow::onProgress);
    connect(controller_, &TrainingController::message, this,
            [this](const QString& m) { statusBar()->showMessage(m, 8000); });

    connect(editor_, &NetworkEditor::validityChanged, this, &MainWindow::updateActions);
    connect(editor_, &NetworkEditor::networkChanged, this, &MainWindow::updateActions);
    connect(editor_, &NetworkEditor::presetLoaded, this, [this](const QString& name) {
        if (name != preset_name_) loadPreset(name);
    });
    connect(dataset_, &DatasetPanel::datasetChanged, this, &MainWindow::onDatasetChanged);
    connect(training_, &TrainingSettingsPanel::settingsChanged, this, &MainWindow::updateActions);
    connect(precision_, &PrecisionPanel::settingsChanged, this, &MainWindow::updateActions);

    // Live tuning: the panel emits only valid values; the trainer may still refuse (ConfigError).
    auto guarded = [this](const QString& what, auto&& call) {
        try {
            call();
            statusBar()->showMessage(tr("%1: applied at the next step").arg(what), 5000);
        } catch (const std::exception& e) {
            statusBar()->showMessage(tr("%1 refused: %2").arg(what, QString::fromUtf8(e.what())), 10000);
            last_error_ = QString::fromUtf8(e.what());
        }
    };
    connect(precision_, &PrecisionPanel::scalerConfigRequested, this,
            [this, guarded](const LossScalerConfig& c) {
                guarded(tr("Scaler settings"), [&] { controller_->request_scaler_config(c); });
            });
    connect(precision_, &PrecisionPanel::recipeConfigRequested, this,
            [this, guarded](const ScaledRecipeConfig& c) {
                guarded(tr("Recipe settings"), [&] { controller_->request_recipe_config(c); });
            });
    connect(precision_, &PrecisionPanel::lossScaleRequested, this, [this, guarded](double s) {
        guarded(tr("Loss scale"), [&] { controller_->request_loss_scale(s); });
    });
    connect(precision_, &PrecisionPanel::learningRateRequested, this, [this, guarded](float lr) {
        guarded(tr("Learning rate"), [&] { controller_->request_learning_rate(lr); });
    });

    connect(browser_, &RunBrowser::openRunsRequested, this, &MainWindow::openRuns);
    connect(browser_, &RunBrowser::trainAgainRequested, this, &MainWindow::trainAgain);
    connect(browser_, &RunBrowser::selectionChanged, this, &MainWindow::updateActions);
    connect(browser_, &RunBrowser::compareRequested, this,
            [this](const QList<qint64>& ids) { openStoredRuns(ids); });
    connect(browser_, &RunBrowser::reportRequested, this, &MainWindow::onReportRequested);
    connect(browser_, &RunBrowser::pytorchExportRequested, this, &MainWindow::onPyTorchExportRequested);
    connect(browser_, &RunBrowser::hparamsRequested, this, &MainWindow::showHyperparameters);
    connect(browser_, &RunBrowser::resumeRequested, this, &MainWindow::resumeRun);
    // The curves of runs picked in the hyperparameter view, which stays in front.
    connect(hparams_, &HparamView::overlayRequested, this, [this](const QList<qint64>& ids) {
        openStoredRuns(ids);
        docks_.hparams->raise();
    });
    connect(sweeps_, &SweepLauncher::finished, this, &MainWindow::onSweepFinished);

    default_state_ = saveState(1);
    resize(defaultSize());
    if (options_.restore_layout) restoreLayout();
    layout_restored_ = options_.restore_layout && QSettings().contains(QStringLiteral("mainwindow/state"));

    // The slow parts (the default dataset's preview, the database, the device probe) wait until
    // the window is on screen, so it appears at once.
    connect(this, &MainWindow::firstExposed, this, [this] {
        // Sized once the first layout has been applied (its layout requests come first).
        if (!layout_restored_) QTimer::singleShot(0, this, &MainWindow::applyDefaultDockSizes);
        QTimer::singleShot(0, this, [this] {
            if (experiment_name_.isEmpty()) {
                QString preset = options_.preset;
                if (preset.isEmpty())
                    preset = QFileInfo::exists(QString::fromUtf8(kDefaultFashionMnistPath))
                                 ? QStringLiteral("fashion-mlp")
                                 : QStringLiteral("spiral-mlp");
                loadPreset(preset);
                // The bottom strip fits the network, which only now has its layers.
                if (!layout_restored_) QTimer::singleShot(0, this, &MainWindow::applyDefaultDockSizes);
            }
            if (browser_->databasePath().isEmpty())
                browser_->setDatabase(QString::fromStdString(options_.db_path));
            if (hparams_->databasePath().isEmpty())
                hparams_->setDatabase(QString::fromStdString(options_.db_path));
            if (device_label_->text().isEmpty()) {
                std::string why_not_gpu;
                auto backend = make_default_backend(&why_not_gpu);
                device_label_->setText(QString::fromStdString(backend->device_name()));
                if (backend->name() != "cuda")
                    device_label_->setToolTip(tr("No GPU: %1").arg(QString::fromStdString(why_not_gpu)));
                backend_label_->setText(tr("backend: %1").arg(QString::fromStdString(backend->name())));
            }
        });
    });
    updateActions();
}

MainWindow::~MainWindow() {
    controller_->stop();
    controller_->wait();
}

void MainWindow::buildActions() {
    auto* bar = addToolBar(tr("Training"));
    bar->setObjectName(QStringLiteral("trainingToolbar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    auto* style = QApplication::style();
    train_ = new QAction(style->standardIcon(QStyle::SP_MediaPlay), tr("Train"), this);
    train_->setObjectName(QStringLiteral("trainAction"));
    train_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_T), QKeySequence(Qt::Key_F5)});
    train_->setToolTip(tr("Train the network in the selected precision (Ctrl+T, F5)"));
    pause_ = new QAction(style->standardIcon(QStyle::SP_MediaPause), tr("Pause"), this);
    pause_->setObjectName(QStringLiteral("pauseAction"));
    pause_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_P), QKeySequence(Qt::Key_F6)});
    pause_->setToolTip(tr("Pause or resume between steps (Ctrl+P, F6)"));
    stop_ = new QAction(style->standardIcon(QStyle::SP_MediaStop), tr("Stop"), this);
    stop_->setObjectName(QStringLiteral("stopAction"));
    stop_->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Period), QKeySequence(Qt::SHIFT | Qt::Key_F5)});
    stop_->setToolTip(tr("Stop after the current step; the run keeps its data (Ctrl+., Shift+F5)"));
    compare_ = new QAction(style->standardIcon(QStyle::SP_BrowserReload), tr("Compare FP32 vs mixed"), this);
    compare_->setObjectName(QStringLiteral("compareAction"));
    compare_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    compare_->setToolTip(
        tr("Train FP32 and the selected mixed policy side by side: same network, seed, "
           "initial weights and batch order (Ctrl+Shift+C)"));
    for (auto* a : {train_, pause_, stop_, compare_}) {
        a->setShortcutContext(Qt::ApplicationShortcut);
        bar->addAction(a);
        addAction(a);
    }
    connect(train_, &QAction::triggered, this, &MainWindow::startTraining);
    connect(pause_, &QAction::triggered, this, &MainWindow::togglePause);
    connect(stop_, &QAction::triggered, this, &MainWindow::stopTraining);
    connect(compare_, &QAction::triggered, this, &MainWindow::startComparison);

    auto* file = menuBar()->addMenu(tr("&File"));
    auto* report = file->addAction(tr("Export report of selected runs…"));
    connect(report, &QAction::triggered, this, [this] { onReportRequested(browser_->selectedRunIds()); });
    file->addSeparator();
    auto* quit = file->addAction(tr("Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);
    auto* run = menuBar()->addMenu(tr("&Run"));
    for (auto* a : {train_, pause_, stop_, compare_}) run->addAction(a);
    run->addSeparator();
    train_again_ = run->addAction(tr("Train again with these settings"));
    train_again_->setObjectName(QStringLiteral("trainAgainAction"));
    train_again_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T));
    train_again_->setToolTip(
        tr("Load the run selected in the run browser into the panels and train a new run with it"));
    connect(train_again_, &QAction::triggered, this, [this] {
        const auto ids = browser_->selectedRunIds();
        if (ids.size() == 1) trainAgain(ids.first());
    });
    sweep_action_ = run->addAction(tr("Run sweep…"));
    sweep_action_->setObjectName(QStringLiteral("sweepAction"));
    sweep_action_->setToolTip(tr("Run a sweep spec (docs/SWEEPS.md) through mpwb-cli into the run database"));
    connect(sweep_action_, &QAction::triggered, this, &MainWindow::onSweepActionTriggered);
}

void MainWindow::buildDocks() {
    editor_ = new NetworkEditor;
    dataset_ = new DatasetPanel;
    precision_ = new PrecisionPanel;
    training_ = new TrainingSettingsPanel;
    browser_ = new RunBrowser;
    hparams_ = new HparamView;
    sweeps_ = new SweepLauncher(this);
    events_ = new EventList;

    // The plots get the middle; the network editor (palette, table and form side by side) fits
    // the wide bottom strip, tabbed with the run browser and the event list; the settings
    // panels share the right column.
    docks_.network =
        make_dock(this, tr("Network"), QStringLiteral("dockNetwork"), editor_, Qt::BottomDockWidgetArea);
    docks_.runs = make_dock(this, tr("Runs"), QStringLiteral("dockRuns"), browser_, Qt::BottomDockWidgetArea);
    docks_.hparams = make_dock(this, tr("Hyperparameters"), QStringLiteral("dockHparams"), hparams_,
                               Qt::BottomDockWidgetArea);
    docks_.events =
        make_dock(this, tr("Events"), QStringLiteral("dockEvents"), events_, Qt::BottomDockWidgetArea);
    docks_.precision = make_dock(this, tr("Precision"), QStringLiteral("dockPrecision"), precision_,
                                 Qt::RightDockWidgetArea);
    docks_.training =
        make_dock(this, tr("Training"), QStringLiteral("dockTraining"), training_, Qt::RightDockWidgetArea);
    docks_.dataset =
        make_dock(this, tr("Dataset"), QStringLiteral("dockDataset"), dataset_, Qt::RightDockWidgetArea);
    tabifyDockWidget(docks_.network, docks_.runs);
    tabifyDockWidget(docks_.runs, docks_.hparams);
    tabifyDockWidget(docks_.hparams, docks_.events);
    docks_.network->raise();
    tabifyDockWidget(docks_.precision, docks_.training);
    tabifyDockWidget(docks_.training, docks_.dataset);
    docks_.precision->raise();

    auto* view = menuBar()->addMenu(tr("&View"));
    for (auto* d : docks_.all()) view->addAction(d->toggleViewAction());
    view->addSeparator();
    reset_layout_ = view->addAction(tr("Reset layout"));
    reset_layout_->setObjectName(QStringLiteral("resetLayoutAction"));
    reset_layout_->setToolTip(tr("Put every panel back where it starts and the window at its default size"));
    connect(reset_layout_, &QAction::triggered, this, &MainWindow::resetLayout);
    buildHelpMenu();
}

void MainWindow::buildHelpMenu() {
    auto* help = menuBar()->addMenu(tr("&Help"));
    auto* docs = help->addAction(tr("Documentation"), this, &MainWindow::openDocumentation);
    docs->setObjectName(QStringLiteral("documentationAction"));
    docs->setShortcut(QKeySequence::HelpContents);
    auto* keys = help->addAction(tr("Keyboard shortcuts"), this, &MainWindow::showShortcuts);
    keys->setObjectName(QStringLiteral("shortcutsAction"));
    help->addSeparator();
    auto* about = help->addAction(tr("About MP Workbench"), this, &MainWindow::showAbout);
    about->setObjectName(QStringLiteral("aboutAction"));
    about->setMenuRole(QAction::AboutRole);
}

QDialog* MainWindow::showAbout() {
    auto* box = new QMessageBox(QMessageBox::NoIcon, tr("About MP Workbench"),
                                about_text(device_label_->text()), QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("aboutBox"));
    box->setTextFormat(Qt::RichText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setModal(false);
    box->show();
    return box;
}

QDialog* MainWindow::showShortcuts() {
    QList<QAction*> actions = menu_actions(menuBar()->actions());
    auto* dialog = make_shortcuts_dialog(shortcut_rows(actions), this);
    dialog->show();
    return dialog;
}

bool MainWindow::openDocumentation() {
    const QString folder = documentation_folder();
    if (folder.isEmpty()) {
        showError(tr("Documentation"), tr("No local documentation was found next to the program."));
        return false;
    }
    const QString readme = QDir(folder).filePath(QStringLiteral("README.md"));
    const QString target = QFileInfo::exists(readme) ? readme : folder;
    if (!QDesktopServices::openUrl(QUrl::fromLocalFile(target))) {
        showError(tr("Documentation"),
                  tr("No program to open %1; the documentation is in %2").arg(target, folder));
        return false;
    }
    statusBar()->showMessage(tr("Opened %1").arg(target), 8000);
    return true;
}

QSize MainWindow::defaultSize() const {
    const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
    const QRect free = s ? s->availableGeometry() : QRect(0, 0, 1600, 1000);
    // Leave room for the window frame and title bar the window manager adds.
    return {std::min(1580, free.width() - 20), std::min(960, free.height() - 40)};
}

void MainWindow::applyDefaultDockSizes() {
    constexpr int kMinNetworkDockHeight = 160;
    // The settings column takes about a third of the width; the bottom strip is as tall as
    // the network editor needs to show every layer of the network, up to 40% of the height.
    resizeDocks({docks_.precision}, {std::clamp(width() / 3, 380, 620)}, Qt::Horizontal);
    const QWidget* shown = docks_.network->widget();  // the editor's scroll area
    // The dock's title and tab bar are outside the measured area: grow by what is missing and
    // measure again once laid out, a few times at most (the first growth is taken by the tab bar).
    // Start small (the layer palette would otherwise ask for room for every kind) and grow.
    int request = kMinNetworkDockHeight;
    resizeDocks({docks_.network}, {request}, Qt::Vertical);
    for (int pass = 0; pass < 4; ++pass) {
        layout()->activate();
        const int missing = editor_->heightForAllLayers() - shown->height();
        if (missing == 0 || (missing < 0 && pass > 0)) break;  // only the first pass shrinks it
        request = std::clamp(request + missing, kMinNetworkDockHeight, height() * 40 / 100);
        resizeDocks({docks_.network}, {request}, Qt::Vertical);
    }
    layout()->activate();
}

void MainWindow::resetLayout() {
    for (auto* d : docks_.all()) d->setFloating(false);
    restoreState(default_state_, 1);
    if (isMaximized() || isFullScreen()) showNormal();
    resize(defaultSize());
    docks_.network->raise();
    docks_.precision->raise();
    // Sized once the restored layout has been applied (its layout requests come first).
    QTimer::singleShot(0, this, &MainWindow::applyDefaultDockSizes);
    statusBar()->showMessage(tr("Layout reset"), 5000);
}

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

void MainWindow::loadPreset(const QString& name) {
    Preset preset;
    try {
        preset = load_preset(name.toStdString());
    } catch (const std::exception& e) {
        showError(tr("Preset"), QString::fromUtf8(e.what()));
        return;
    }
    preset_name_ = name;
    experiment_name_ = name;
    TrainConfig c = preset.training;
    // The workbench shows gradient statistics and test curves: give presets that leave them off
    // a cadence that draws a useful histogram and heatmap without slowing the run.
    if (c.stats_every == 0) c.stats_every = 25;
    if (c.eval_every == 0 && !c.dataset.is_synthetic()) c.eval_every = 200;
    showExperiment(c, preset.network, tr("Load preset %1").arg(name));
    statusBar()->showMessage(tr("Preset %1: %2").arg(name, QString::fromStdString(preset.description)), 8000);
}

void MainWindow::showExperiment(const TrainConfig& c, const nlohmann::json& network,
                                const QString& undo_text) {
    base_config_ = c;
    dataset_->setDatasetSpec(c.dataset);
    editor_->setInputShape(dataset_->sampleShape());
    editor_->setClassCount(dataset_->classCount());
    editor_->setNetworkJson(network, undo_text);
    training_->setFromConfig(c);
    precision_->setPrecision(c.precision);
    precision_->setWeightGradFormat(c.weight_grad_format);
    // A configuration without a scaler trains with the policy's default one: show that one, not
    // whatever the fields held before.
    precision_->setScalerConfig(c.scaler ? *c.scaler : c.effective_scaler());
    precision_->setRecipeConfig(c.recipe);
    precision_->setLearningRate(c.lr);
    updateActions();
}

bool MainWindow::loadRunSettings(qint64 id) {
    try {
        RunStore store(options_.db_path, reading_options());
        const Run run = store.get_run(id);
        const std::string what = "run " + std::to_string(id);
        const TrainConfig config =
            train_config_from_json(parse_json_text(run.config_json, "configuration of " + what));
        const nlohmann::json network = parse_json_text(run.network_json, "network of " + what);
        preset_name_.clear();  // the preset menu may load the same preset again
        experiment_name_ = tr("rerun of #%1").arg(id);
        showExperiment(config, network, tr("Load run #%1").arg(id));
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

TrainConfig MainWindow::currentConfig() const {
    TrainConfig c = base_config_;
    c.dataset = dataset_->datasetSpec();
    c = training_->applyTo(c);
    c = precision_->applyTo(c);
    return c;
}

QString MainWindow::blockReason() const {
    if (controller_->busy()) return tr("a run is going");
    if (!editor_->isValid()) {
        const QString s = editor_->summaryText();
        return tr("the network has errors: %1").arg(s.isEmpty() ? tr("see the Network panel") : s);
    }
    if (!dataset_->isValid()) return tr("dataset: %1").arg(dataset_->errorText());
    if (!training_->errorText().isEmpty()) return tr("training settings: %1").arg(training_->errorText());
    if (!precision_->scalerError().isEmpty()) return tr("loss scaler: %1").arg(precision_->scalerError());
    if (PrecisionPolicy::make(precision_->precision()).scaled() && !precision_->recipeIssues().empty())
        return tr("recipe: %1").arg(QString::fromStdString(precision_->recipeIssues().front().message));
    return {};
}

void MainWindow::updateActions() {
    const bool busy = controller_->busy();
    const QString why = blockReason();
    train_->setEnabled(why.isEmpty());
    train_again_->setEnabled(!busy && browser_->selectedRunIds().size() == 1);
    compare_->setEnabled(why.isEmpty());
    train_->setStatusTip(why.isEmpty() ? QString() : tr("Train is disabled: %1").arg(why));
    if (!why.isEmpty() && !busy) state_label_->setToolTip(tr("Train is disabled: %1").arg(why));
    pause_->setEnabled(busy && controller_->state() != TrainingController::State::Stopping);
    stop_->setEnabled(busy && controller_->state() != TrainingController::State::Stopping);
    pause_->setText(controller_->state() == TrainingController::State::Paused ? tr("Resume") : tr("Pause"));
    precision_->setRunning(busy);
}

void MainWindow::onDatasetChanged() {
    editor_->setInputShape(dataset_->sampleShape());
    editor_->setClassCount(dataset_->classCount());
    updateActions();
}

void MainWindow::beginLive(const std::vector<std::pair<QString, QString>>& runs) {
    board_->clear();
    live_runs_.clear();
    live_labels_.clear();
    for (const auto& [label, precision] : runs) {
        live_runs_.push_back(board_->addRun(label, precision, reference_format_for(precision)));
        live_labels_.push_back(label);
    }
    // The gradient view starts on the mixed run of a comparison: its gradients are the ones
    // the format can lose.
    board_->runSelector()->setCurrentIndex(static_cast<int>(runs.size()) - 1);
    precision_->clearEvents();
    events_->clear();
    board_->showTab(tr("Curves"));
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
        beginLive({{precision, precision}});
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
        beginLive({{QStringLiteral("fp32"), QStringLiteral("fp32")}, {low, low}});
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

void MainWindow::onUpdates(const std::vector<RunUpdate>& updates) {
    QElapsedTimer timer;
    timer.start();
    for (const auto& u : updates) {
        if (u.slot < 0 || u.slot >= static_cast<int>(live_runs_.size())) continue;
        const int run = live_runs_[static_cast<size_t>(u.slot)];
        const QString label = live_labels_[static_cast<size_t>(u.slot)];
        if (u.run_id && board_->runId(run) != u.run_id) board_->setRunId(run, u.run_id);
        if (u.start && u.dataset) board_->setBoundaryPoints(run, *u.dataset);
        board_->appendSteps(run, u.steps);
        board_->appendEvals(run, u.evals);
        board_->appendStats(run, u.stats);
        board_->appendScaling(run, u.scaling);
        if (u.boundary) board_->setBoundary(run, *u.boundary);
        // The readout follows the run whose scale can be tuned: the mixed side of a comparison.
        const bool readout_run = updates.size() == 1 || u.slot == 1;
        if (readout_run && !u.steps.empty()) {
            const auto& m = u.steps.back();
            float headroom = std::numeric_limits<float>::quiet_NaN();
            for (auto it = u.stats.rbegin(); it != u.stats.rend(); ++it)
                if (it->kind == GradientKind::Activation) {
                    headroom = it->stats.headroom_log2;
                    break;
                }
            precision_->setReadout(m.loss_scale, m.skipped_count, m.overflow_count, headroom);
        }
        if (!u.events.empty()) events_->beginBatch();  // one repaint per batch
        for (const auto& e : u.events) {
            const QString text = QString::fromStdString(event_text(e.kind, e.detail));
            const QString json = QString::fromStdString(e.detail.dump());
            addEventRow(label, e.step, QString::fromStdString(e.kind), QString::fromStdString(e.source), text,
                        json);
            if (readout_run)
                precision_->addEvent(e.step, QString::fromStdString(e.kind), QString::fromStdString(e.source),
                                     text, json);
        }
        if (!u.events.empty()) events_->endBatch();
        if (u.end) {
            const auto& s = *u.end;
            QString text = tr("%1: %2 after %3 steps, test accuracy %4, %5 samples/s")
                               .arg(label, QString::fromUtf8(run_status_name(s.status)))
                               .arg(s.steps)
                               .arg(s.test_accuracy, 0, 'f', 4)
                               .arg(s.samples_per_second, 0, 'f', 0);
            if (u.run_id) text += tr(" (run #%1)").arg(u.run_id);
            statusBar()->showMessage(text, 15000);
        }
        for (const auto& err : u.errors) {
            const QString text = tr("%1: %2").arg(label, QString::fromStdString(err));
            addEventRow(label, u.steps.empty() ? 0 : u.steps.back().step, tr("error"), tr("workbench"),
                        QString::fromStdString(err), {});
            // What is kept depends on how far the run got (nothing, an empty row, or its steps).
            // A recording failure while the run trains on is no failure of the run.
            const bool recording_only = err.rfind("recording failed:", 0) == 0;
            showError(recording_only ? tr("Recording stopped") : tr("Run failed"),
                      u.kept.empty() ? text : text + QStringLiteral("\n\n") + QString::fromStdString(u.kept));
        }
    }
    board_->replot();
    update_seconds_ += static_cast<double>(timer.nsecsElapsed()) * 1e-9;
}

void MainWindow::addEventRow(const QString& run, int64_t step, const QString& kind, const QString& source,
                             const QString& text, const QString& json) {
    events_->addEvent(run, step, kind, source, text, json);
}

QTableWidget* MainWindow::eventList() const { return events_->table(); }

void MainWindow::showError(const QString& title, const QString& text) {
    last_error_ = text;
    statusBar()->showMessage(text, 20000);
    // Non-blocking, so a failing run never freezes the event loop (or a test).
    auto* box = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setModal(false);
    box->show();
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
        live_runs_.clear();
        live_labels_.clear();
        events_->clear();
        events_->beginBatch();
        docks_.runs->raise();  // the run browser, where the runs came from
        // Tall enough for its buttons (the strip was sized for the network editor).
        const int wanted =
            std::min(browser_->minimumSizeHint().height() + kDockChromeHeight, height() * 45 / 100);
        if (docks_.runs->height() < wanted) resizeDocks({docks_.runs}, {wanted}, Qt::Vertical);
        for (qint64 id : ids) {
            const int index = board_->addStoredRun(store, id);
            const Run run = store.get_run(id);
            showStoredBoundary(store, run, index);
            const QString label = QStringLiteral("#%1 %2").arg(id).arg(QString::fromStdString(run.name));
            for (const auto& e : store.events(id)) {
                // The stored row is the event's detail with its source added (RunRecorder).
                nlohmann::json detail;
                try {
                    detail = parse_json_text(e.json, "event " + std::to_string(e.id));
                } catch (const JsonInputError&) {
                    detail = nlohmann::json::value_t::discarded;  // shown as its stored text
                }
                std::string source;
                if (detail.is_object() && detail.contains("source") && detail["source"].is_string()) {
                    source = detail["source"].get<std::string>();
                    detail.erase("source");
                }
                const QString text = detail.is_discarded()
                                         ? QString::fromStdString(e.json)
                                         : QString::fromStdString(event_text(e.kind, detail));
                addEventRow(label, e.step, QString::fromStdString(e.kind), QString::fromStdString(source),
                            text, QString::fromStdString(e.json));
            }
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

void MainWindow::showStoredBoundary(RunStore& store, const Run& run, int board_index) {
    const auto stored = store.boundary(run.id);
    if (!stored) return;
    try {
        // The data points come from the run's own dataset settings (the synthetic sets are
        // generated from their seed, so they are the points the run trained on).
        const TrainConfig config = train_config_from_json(
            parse_json_text(run.config_json, "configuration of run " + std::to_string(run.id)));
        const Dataset data = load_dataset(config.dataset);
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

QStringList MainWindow::exportReport(const QList<qint64>& ids, const QString& path) {
    QStringList written;
    try {
        ReportRequest r;
        r.database = options_.db_path;
        r.run_ids.assign(ids.begin(), ids.end());
        r.output = path.toStdString();
        r.smoothing = board_->lossPlot()->smoothing();  // the report says what the user chose
        for (const auto& f : write_report(r)) written << QString::fromStdString(f);
        statusBar()->showMessage(tr("Report written: %1").arg(written.join(QStringLiteral(", "))), 10000);
    } catch (const std::exception& e) {
        showError(tr("Report"), QString::fromUtf8(e.what()));
    }
    return written;
}

QStringList MainWindow::exportForPyTorch(qint64 id, const QString& safetensors_path) {
    QStringList written;
    try {
        const QFileInfo weights(safetensors_path);
        const QString script = weights.dir().filePath(weights.completeBaseName() + QStringLiteral(".py"));
        RunStore store(options_.db_path);
        const ExportedModel model =
            export_run_for_pytorch(store, id, safetensors_path.toStdString(), script.toStdString(),
                                   ("mpwb " + QApplication::applicationVersion()).toStdString());
        written << QString::fromStdString(model.safetensors_path)
                << QString::fromStdString(model.script_path);
        statusBar()->showMessage(tr("Run #%1 exported for PyTorch (%2 tensors, weights of step %3): %4")
                                     .arg(id)
                                     .arg(model.tensors)
                                     .arg(model.step)
                                     .arg(written.join(QStringLiteral(", "))),
                                 10000);
    } catch (const std::exception& e) {
        showError(tr("Export for PyTorch"), QString::fromUtf8(e.what()));
    }
    return written;
}

void MainWindow::onPyTorchExportRequested(qint64 id) {
    const QString suggested = QDir::home().filePath(QStringLiteral("mpwb-run-%1.safetensors").arg(id));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export run #%1 for PyTorch").arg(id),
                                                      suggested, tr("safetensors weights (*.safetensors)"),
                                                      nullptr, QFileDialog::DontConfirmOverwrite);
    if (!path.isEmpty()) exportForPyTorch(id, path);  // refuses an existing file with its name
}

void MainWindow::onReportRequested(const QList<qint64>& ids) {
    if (ids.isEmpty()) {
        statusBar()->showMessage(tr("Select one or more runs in the run browser first"), 8000);
        return;
    }
    const QString suggested = QDir::home().filePath(
        QStringLiteral("mpwb-report-%1.html")
            .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmm"))));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export report"), suggested,
                                                      tr("HTML report (*.html);;PDF report (*.pdf)"));
    if (!path.isEmpty()) exportReport(ids, path);
}

void MainWindow::showHyperparameters(const QList<qint64>& ids) {
    if (hparams_->databasePath().isEmpty()) hparams_->setDatabase(QString::fromStdString(options_.db_path));
    hparams_->showRuns(ids);
    raiseHyperparameters();
}

void MainWindow::raiseHyperparameters() {
    docks_.hparams->show();
    docks_.hparams->raise();
    // The plot and the table need more height than the bottom strip has by default.
    const int wanted = height() * 45 / 100;
    if (docks_.hparams->height() < wanted) resizeDocks({docks_.hparams}, {wanted}, Qt::Vertical);
}

bool MainWindow::showSweep(qint64 sweep_id) {
    if (hparams_->databasePath().isEmpty()) hparams_->setDatabase(QString::fromStdString(options_.db_path));
    if (!hparams_->showSweep(sweep_id)) return false;
    raiseHyperparameters();
    return true;
}

void MainWindow::onSweepActionTriggered() {
    const QString spec = QFileDialog::getOpenFileName(this, tr("Run sweep"), QDir::homePath(),
                                                      tr("Sweep spec (*.json);;All files (*)"));
    if (spec.isEmpty()) return;
    bool ok = false;
    const int jobs =
        QInputDialog::getInt(this, tr("Run sweep"), tr("Training processes at a time:"), 2, 1, 64, 1, &ok);
    if (ok) startSweep(spec, jobs);
}

bool MainWindow::startSweep(const QString& spec_path, int jobs) {
    if (!sweeps_->start(spec_path, jobs, QString::fromStdString(options_.db_path))) {
        showError(tr("Run sweep"), sweeps_->errorText());
        return false;
    }
    sweep_action_->setEnabled(false);
    sweep_progress_->show();
    statusBar()->showMessage(
        tr("Sweep %1 started with %2 jobs").arg(QFileInfo(spec_path).fileName()).arg(jobs), 8000);
    return true;
}

void MainWindow::onSweepFinished(qint64 sweep_id, bool ok, const QString& message) {
    sweep_action_->setEnabled(true);
    browser_->refresh();
    if (!ok) showError(tr("Sweep"), message);
    statusBar()->showMessage(message, 20000);
    if (sweep_id > 0) showSweep(sweep_id);
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
        const std::string what = "run " + std::to_string(id);
        const TrainConfig config =
            train_config_from_json(parse_json_text(run.config_json, "configuration of " + what));
        const nlohmann::json network = parse_json_text(run.network_json, "network of " + what);
        const QString precision = QString::fromStdString(run.precision);
        beginLive({{QStringLiteral("#%1 %2").arg(id).arg(QString::fromStdString(run.name)), precision}});
        const int64_t step = checkpoint->step;
        ResumeSource resume{id, std::make_shared<const TrainingCheckpoint>(std::move(*checkpoint))};
        const bool started = controller_->continue_run(network, config, std::move(resume), run.name);
        if (started) statusBar()->showMessage(tr("Resuming run #%1 after step %2").arg(id).arg(step), 8000);
        return started;
    });
}

void MainWindow::saveLayout() {
    QSettings s;
    s.setValue(QStringLiteral("mainwindow/geometry"), saveGeometry());
    s.setValue(QStringLiteral("mainwindow/state"), saveState(1));
}

void MainWindow::restoreLayout() {
    QSettings s;
    restoreGeometry(s.value(QStringLiteral("mainwindow/geometry")).toByteArray());
    restoreState(s.value(QStringLiteral("mainwindow/state")).toByteArray(), 1);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (controller_->busy()) {
        controller_->stop();  // the runs end as STOPPED with everything recorded so far
        controller_->wait();
    }
    if (options_.restore_layout) saveLayout();
    QMainWindow::closeEvent(event);
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (auto* w = windowHandle()) w->installEventFilter(this);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
    if (!exposed_ && event->type() == QEvent::Expose && watched == windowHandle() &&
        windowHandle()->isExposed()) {
        exposed_ = true;
        emit firstExposed();
    }
    return QMainWindow::eventFilter(watched, event);
}

}  // namespace mpwb
