// MainWindow: construction and signal wiring, the actions and menus, the experiment shown in the
// docks (a preset or a stored run's settings), the Help menu and error boxes. The other concerns
// have their own files (see main_window.h).
#include "app/gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDialog>
#include <QDir>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTimer>
#include <QToolBar>
#include <QUrl>
#include <QWindow>

#include "app/gui/event_list.h"
#include "app/gui/help_dialogs.h"
#include "app/gui/live_runs.h"
#include "app/gui/plot_board.h"
#include "app/gui/sweep_launcher.h"
#include "core/backend/backend.h"
#include "core/backend/default_backend.h"
#include "core/train/dataset_source.h"
#include "resources/presets.h"
#include "widgets/dataset_panel.h"
#include "widgets/hparam_view.h"
#include "widgets/network_editor.h"
#include "widgets/output_guard.h"
#include "widgets/precision_panel.h"
#include "widgets/run_browser.h"
#include "widgets/samples_view.h"
#include "widgets/training_settings_panel.h"

namespace mpwb {

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
    live_ = new LiveRuns(board_, events_, precision_, this);

    connectController();
    connectPanels();
    connectRunBrowser();
    connectSamples();
    connectPrecisionRules();

    default_state_ = saveState(1);
    resize(defaultSize());
    if (options_.restore_layout) restoreLayout();
    layout_restored_ = options_.restore_layout && QSettings().contains(QStringLiteral("mainwindow/state"));
    // The slow parts (the default dataset's preview, the database, the device probe) wait until
    // the window is on screen, so it appears at once.
    connect(this, &MainWindow::firstExposed, this, [this] {
        // Sized once the first layout has been applied (its layout requests come first).
        if (!layout_restored_) QTimer::singleShot(0, this, &MainWindow::applyDefaultDockSizes);
        QTimer::singleShot(0, this, &MainWindow::finishStartup);
    });
    updateActions();
}

MainWindow::~MainWindow() {
    controller_->stop();
    controller_->wait();
}

void MainWindow::connectController() {
    connect(controller_, &TrainingController::updates, live_, &LiveRuns::route);
    connect(controller_, &TrainingController::stateChanged, this, &MainWindow::onStateChanged);
    connect(controller_, &TrainingController::progress, this, &MainWindow::onProgress);
    connect(controller_, &TrainingController::message, this,
            [this](const QString& m) { statusBar()->showMessage(m, 8000); });
    connect(live_, &LiveRuns::runEnded, this,
            [this](const QString& text) { statusBar()->showMessage(text, 15000); });
    connect(live_, &LiveRuns::runFailed, this, &MainWindow::showError);
}

void MainWindow::connectPanels() {
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
}

void MainWindow::connectRunBrowser() {
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
}

// Once the window is on screen: the default experiment, the database and the device.
void MainWindow::finishStartup() {
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
    if (browser_->databasePath().isEmpty()) browser_->setDatabase(QString::fromStdString(options_.db_path));
    if (hparams_->databasePath().isEmpty()) hparams_->setDatabase(QString::fromStdString(options_.db_path));
    if (device_label_->text().isEmpty()) {
        std::string why_not_gpu;
        auto backend = make_default_backend(&why_not_gpu);
        device_label_->setText(QString::fromStdString(backend->device_name()));
        if (backend->name() != "cuda")
            device_label_->setToolTip(tr("No GPU: %1").arg(QString::fromStdString(why_not_gpu)));
        backend_label_->setText(tr("backend: %1").arg(QString::fromStdString(backend->name())));
    }
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
    precision_->setPrecisionRules(c.precision_rules);
    precision_->setWhatIf(c.what_if);
    syncEditorPrecision();
    precision_->setLearningRate(c.lr);
    board_->samplesView()->setSampleConfig(c.samples);
    board_->samplesView()->setTextExperiment(c.dataset.is_text());
    updateActions();
}

TrainConfig MainWindow::currentConfig() const {
    TrainConfig c = base_config_;
    c.dataset = dataset_->datasetSpec();
    c = training_->applyTo(c);
    c = precision_->applyTo(c);
    applySampleSettings(c);
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
    if (dataset_->datasetSpec().is_text() && board_->samplesView()->prompt().empty())
        return tr("samples: the prompt is empty");
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
    board_->samplesView()->setGenerateBlocked(busy ? tr("a run is training") : QString());
}

void MainWindow::onDatasetChanged() {
    editor_->setInputShape(dataset_->sampleShape());
    editor_->setClassCount(dataset_->classCount());
    board_->samplesView()->setTextExperiment(dataset_->datasetSpec().is_text());
    updateActions();
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

double MainWindow::updateSeconds() const { return live_->updateSeconds(); }

}  // namespace mpwb
