// MainWindow's layout: the docks around the plots, their default sizes for the screen, Reset
// layout, and the layout saved in QSettings.
#include "app/gui/main_window.h"

#include <QAction>
#include <QDockWidget>
#include <QGuiApplication>
#include <QLayout>
#include <QMenuBar>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>

#include <algorithm>

#include "app/gui/event_list.h"
#include "app/gui/sweep_launcher.h"
#include "widgets/dataset_panel.h"
#include "widgets/hparam_view.h"
#include "widgets/network_editor.h"
#include "widgets/precision_panel.h"
#include "widgets/run_browser.h"
#include "widgets/training_settings_panel.h"

namespace mpwb {

namespace {
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
}  // namespace

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

void MainWindow::raiseBottomDock(QDockWidget* dock, int height) {
    dock->raise();
    if (dock->height() < height) resizeDocks({dock}, {height}, Qt::Vertical);
}

}  // namespace mpwb
