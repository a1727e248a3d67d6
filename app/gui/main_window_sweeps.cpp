// MainWindow's sweeps: Run › Run sweep… through mpwb-cli (SweepLauncher), and the
// hyperparameter view of a sweep's or the selected runs.
#include "app/gui/main_window.h"

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QStatusBar>

#include "app/gui/sweep_launcher.h"
#include "widgets/hparam_view.h"
#include "widgets/run_browser.h"

namespace mpwb {

void MainWindow::showHyperparameters(const QList<qint64>& ids) {
    if (hparams_->databasePath().isEmpty()) hparams_->setDatabase(QString::fromStdString(options_.db_path));
    hparams_->showRuns(ids);
    raiseHyperparameters();
}

void MainWindow::raiseHyperparameters() {
    docks_.hparams->show();
    // The plot and the table need more height than the bottom strip has by default.
    raiseBottomDock(docks_.hparams, height() * 45 / 100);
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

}  // namespace mpwb
