// GUI tests of the workbench as an application: it fits a 1366×768 screen (the window's
// minimum fits, the network dock shows every layer, the precision dock's numbers are not cut),
// View › Reset layout brings back docks the user moved or closed, the ETA hides while a run is
// paused, and the Help menu offers About, the shortcut list (read from the actions: Train's F5)
// and the documentation. The real MainWindow on an offscreen screen of 1366×768 (the platform's
// configuration file, written by main below); waits are on states.
#include <QAction>
#include <QDialog>
#include <QDockWidget>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStandardPaths>
#include <QScreen>
#include <QTableView>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolBar>
#include <QtTest>

#include <memory>

#include "app/gui/help_dialogs.h"
#include "app/gui/main_window.h"
#include "app/gui/training_controller.h"
#include "widgets/network_editor.h"
#include "widgets/precision_panel.h"

using namespace mpwb;

namespace {
constexpr int kStateWaitMs = 120000;  // ends a hang; the states come in well under a second
const QSize kScreen(1366, 768);

QMenu* menu_titled(QMainWindow& w, const QString& title) {
    for (QAction* a : w.menuBar()->actions())
        if (a->text() == title) return a->menu();
    return nullptr;
}

QWidget* toolbar_button(QMainWindow& w, QAction* action) {
    for (auto* bar : w.findChildren<QToolBar*>())
        if (QWidget* b = bar->widgetForAction(action)) return b;
    return nullptr;
}
}  // namespace

class TestWorkbenchLayout : public QObject {
    Q_OBJECT

private:
    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;

    // The default layout at the default size.
    void showDefault() {
        w_->resetLayout();
        QApplication::processEvents();
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        MainWindow::Options o;
        o.db_path = (tmp_.path() + "/runs.sqlite").toStdString();
        o.preset = "spiral-mlp";
        o.restore_layout = false;
        w_ = std::make_unique<MainWindow>(o);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QTRY_COMPARE_WITH_TIMEOUT(w_->presetName(), QString("spiral-mlp"), kStateWaitMs);
    }

    void fitsA1366x768Screen() {
        QCOMPARE(w_->screen()->size(), kScreen);
        const QSize size = w_->defaultSize();
        QVERIFY2(size.width() <= kScreen.width() && size.height() <= kScreen.height() - 30,
                 qPrintable(QStringLiteral("default %1x%2").arg(size.width()).arg(size.height())));
        const QSize least = w_->minimumSizeHint().expandedTo(w_->minimumSize());
        QVERIFY2(least.width() <= size.width() && least.height() <= size.height(),
                 qPrintable(QStringLiteral("minimum %1x%2").arg(least.width()).arg(least.height())));
        showDefault();
        QCOMPARE(w_->size(), size);
        // The network dock shows every layer of the preset without scrolling.
        auto* table = w_->networkEditor()->findChild<QTableView*>("layerTable");
        QVERIFY(table);
        const int rows = w_->networkEditor()->layerCount();
        QVERIFY(rows >= 5);
        QTRY_VERIFY2_WITH_TIMEOUT(
            table->rowViewportPosition(rows - 1) + table->rowHeight(rows - 1) <= table->viewport()->height(),
            qPrintable(QStringLiteral("last row ends at %1 of %2")
                           .arg(table->rowViewportPosition(rows - 1) + table->rowHeight(rows - 1))
                           .arg(table->viewport()->height())),
            kStateWaitMs);
    }

    // The exact values beside the scaler's power-of-two fields ("= 5.960464e-08") are shown
    // whole in the settings dock at the small size.
    void precisionNumbersAreNotCut() {
        showDefault();
        auto* dock = w_->findChild<QDockWidget*>("dockPrecision");
        dock->raise();
        QApplication::processEvents();
        PrecisionPanel* panel = w_->precisionPanel();
        QVERIFY(dock->width() < 640);
        QVERIFY2(!panel->sideBySide(), "the columns should stack in a narrow dock");
        int checked = 0;
        for (QLabel* label : panel->findChildren<QLabel*>()) {
            if (!label->text().startsWith("= ")) continue;
            ++checked;
            QVERIFY2(label->width() >= label->sizeHint().width(),
                     qPrintable(QStringLiteral("'%1' is %2 px wide, needs %3")
                                    .arg(label->text())
                                    .arg(label->width())
                                    .arg(label->sizeHint().width())));
        }
        QVERIFY(checked >= 3);  // initial, min and max scale
        // A wide dock puts the two columns side by side again.
        w_->resizeDocks({dock}, {1100}, Qt::Horizontal);
        QTRY_VERIFY(panel->sideBySide());
        showDefault();
    }

    void resetLayoutRestoresMovedAndClosedDocks() {
        auto* precision = w_->findChild<QDockWidget*>("dockPrecision");
        auto* events = w_->findChild<QDockWidget*>("dockEvents");
        auto* network = w_->findChild<QDockWidget*>("dockNetwork");
        w_->addDockWidget(Qt::LeftDockWidgetArea, precision);
        events->close();
        network->setFloating(true);
        w_->resize(900, 600);
        QCOMPARE(w_->dockWidgetArea(precision), Qt::LeftDockWidgetArea);
        QVERIFY(events->isHidden());

        QMenu* view = menu_titled(*w_, "&View");
        QVERIFY(view);
        QVERIFY(view->actions().contains(w_->resetLayoutAction()));
        w_->resetLayoutAction()->trigger();
        QCOMPARE(w_->dockWidgetArea(precision), Qt::RightDockWidgetArea);
        QCOMPARE(w_->dockWidgetArea(network), Qt::BottomDockWidgetArea);
        QVERIFY(!network->isFloating());
        QVERIFY(!events->isHidden());
        QCOMPARE(w_->size(), w_->defaultSize());
    }

    void etaHiddenWhilePaused() {
        w_->controller()->hold_after_step(0);
        QWidget* train = toolbar_button(*w_, w_->trainAction());
        QWidget* pause = toolbar_button(*w_, w_->pauseAction());
        QVERIFY(train && pause);
        QVERIFY2(train->isEnabled(), qPrintable(w_->blockReason()));
        QTest::mouseClick(train, Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(w_->controller()->state(), TrainingController::State::Running,
                                  kStateWaitMs);
        QVERIFY(w_->etaLabel()->isVisible());
        QTest::mouseClick(pause, Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(w_->controller()->state(), TrainingController::State::Paused, kStateWaitMs);
        QVERIFY(!w_->etaLabel()->isVisible());
        QTest::mouseClick(pause, Qt::LeftButton);  // now "Resume"
        QTRY_COMPARE_WITH_TIMEOUT(w_->controller()->state(), TrainingController::State::Running,
                                  kStateWaitMs);
        QVERIFY(w_->etaLabel()->isVisible());
        w_->stopTraining();
        QTRY_COMPARE_WITH_TIMEOUT(w_->controller()->state(), TrainingController::State::Idle, kStateWaitMs);
    }

    void helpMenuOffersAboutShortcutsAndDocumentation() {
        QMenu* help = menu_titled(*w_, "&Help");
        QVERIFY(help);
        QStringList names;
        for (QAction* a : help->actions()) names << a->objectName();
        for (const char* name : {"documentationAction", "shortcutsAction", "aboutAction"})
            QVERIFY2(names.contains(name), name);

        QDialog* shortcuts = w_->showShortcuts();
        auto* table = shortcuts->findChild<QTableWidget*>("shortcutTable");
        QVERIFY(table);
        QString train_keys;
        for (int r = 0; r < table->rowCount(); ++r)
            if (table->item(r, 0)->text() == "Train") train_keys = table->item(r, 1)->text();
        QVERIFY2(train_keys.contains("F5"), qPrintable(train_keys));
        QVERIFY(train_keys.contains("Ctrl+T"));
        QCOMPARE(table->rowCount(), int(shortcut_rows(menu_actions(w_->menuBar()->actions())).size()));
        shortcuts->close();

        QDialog* about = w_->showAbout();
        const QString text = static_cast<QMessageBox*>(about)->text();
        for (const char* library : {"Qt ", "QCustomPlot", "SQLite", "OpenBLAS", "nlohmann-json", "CUDA"})
            QVERIFY2(text.contains(library), library);
        QVERIFY(text.contains("GPL"));
        about->close();

        // Built from this source tree, the README is found there.
        QVERIFY(QFileInfo::exists(QDir(documentation_folder()).filePath("README.md")));
    }

    void cleanupTestCase() { w_.reset(); }
};

// The offscreen platform's screen is 800×800 unless a configuration file names another.
int main(int argc, char** argv) {
    QTemporaryDir config_dir;
    const QString config = config_dir.filePath("screen.json");
    QFile file(config);
    if (!file.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(config));
    file.write(QStringLiteral(R"({"screens": [{"name": "small", "x": 0, "y": 0, "width": %1, "height": %2,)"
                              R"( "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})")
                   .arg(kScreen.width())
                   .arg(kScreen.height())
                   .toUtf8());
    file.close();
    qputenv("QT_QPA_PLATFORM", "offscreen:configfile=" + config.toUtf8());
    QApplication app(argc, argv);
    TestWorkbenchLayout test;
    return QTest::qExec(&test, argc, argv);
}
#include "test_workbench_layout.moc"
