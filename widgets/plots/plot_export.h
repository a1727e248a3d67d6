// Export of any plot to a file, chosen by the suffix of the path: .png (QCustomPlot::savePng),
// .pdf (savePdf, vector) or .csv (PlotWidget::csv(), or every graph's data for a plain
// QCustomPlot). Used by the plots' context menu and by the report generator.
#pragma once
#include <QString>

class QCustomPlot;

namespace mpwb {

// Writes `plot` to `path`. width/height 0: the widget's size, or its export size when it was
// never shown. Returns false and fills *error (naming the file and the reason) on failure:
// unknown suffix, folder missing, file not writable.
bool export_plot(QCustomPlot* plot, const QString& path, QString* error = nullptr, int width = 0,
                 int height = 0);

// The CSV text export_plot writes for `plot`.
QString plot_csv(QCustomPlot* plot);

}  // namespace mpwb
