// export_plot: PNG/PDF/CSV export of any QCustomPlot, chosen by the file suffix.
#include "widgets/plots/plot_export.h"
#include "widgets/output_guard.h"

#include "widgets/plots/plot_widget.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <qcustomplot.h>

namespace mpwb {
namespace {

QSize effective_size(QCustomPlot* plot, int width, int height) {
    if (width > 0 && height > 0) return {width, height};
    // A widget that was never shown has a meaningless default geometry; use its export size.
    if (!plot->isVisible() || plot->width() < 50 || plot->height() < 50) {
        if (auto* p = qobject_cast<PlotWidget*>(plot)) return p->exportSize();
        return {900, 520};
    }
    return plot->size();
}

bool fail(QString* error, const QString& message) {
    if (error) *error = message;
    return false;
}

}  // namespace

QString plot_csv(QCustomPlot* plot) {
    if (auto* p = qobject_cast<PlotWidget*>(plot)) return p->csv();
    return graphs_csv(*plot);
}

bool export_plot(QCustomPlot* plot, const QString& path, QString* error, int width, int height) {
    if (!plot) return fail(error, QStringLiteral("no plot to export"));
    const QFileInfo info(path);
    const QString suffix = info.suffix().toLower();
    if (const QString refusal = output_refusal(path, QStringLiteral("the plot")); !refusal.isEmpty())
        return fail(error, refusal);
    if (!info.absoluteDir().exists())
        return fail(
            error,
            QStringLiteral("cannot write %1: the folder %2 does not exist").arg(path, info.absolutePath()));
    const QSize size = effective_size(plot, width, height);
    // Ranges that follow the data are updated in beforeReplot; savePng/savePdf only draw.
    if (suffix == QLatin1String("png") || suffix == QLatin1String("pdf"))
        plot->replot(QCustomPlot::rpImmediateRefresh);
    if (suffix == QLatin1String("png")) {
        if (!plot->savePng(path, size.width(), size.height()))
            return fail(error, QStringLiteral("cannot write %1 (not writable?)").arg(path));
        return true;
    }
    if (suffix == QLatin1String("pdf")) {
        if (!plot->savePdf(path, size.width(), size.height(), QCP::epNoCosmetic,
                           QStringLiteral("MP Workbench")))
            return fail(error, QStringLiteral("cannot write %1 (not writable?)").arg(path));
        return true;
    }
    if (suffix == QLatin1String("csv")) {
        QSaveFile file(path);
        if (!file.open(QIODevice::WriteOnly | QIODevice::Text))
            return fail(error, QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
        file.write(plot_csv(plot).toUtf8());
        if (!file.commit())
            return fail(error, QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
        return true;
    }
    return fail(error, QStringLiteral("cannot export to %1: unknown file type \"%2\" (use .png, "
                                      ".pdf or .csv)")
                           .arg(path, info.suffix()));
}

}  // namespace mpwb
