// MainWindow's exports: the comparison report of the selected runs (HTML or PDF) and a run's
// final weights for PyTorch (safetensors and the script beside them).
#include "app/gui/main_window.h"

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QStatusBar>

#include "app/gui/plot_board.h"
#include "app/report/report.h"
#include "sessions/run_export.h"
#include "sessions/run_store.h"
#include "widgets/plots/series_plot.h"

namespace mpwb {

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

}  // namespace mpwb
