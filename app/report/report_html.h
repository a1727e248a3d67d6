// Internal to mpwb_report: the data a report shows (collected from the run store) and the two
// renderings of it: browser HTML (inline CSS, data: URIs) and the QTextDocument HTML the PDF is
// printed from (QTextDocument knows only a subset of CSS, so it gets its own simpler markup).
#pragma once
#include "core/numeric/format.h"
#include "sessions/run_figures.h"
#include "sessions/run_types.h"
#include "sessions/scaling_summary.h"

#include <QByteArray>
#include <QString>
#include <QVector>
#include <optional>
#include <vector>

namespace mpwb::report_detail {

struct RunRow {
    Run run;
    QString label;       // "#12 name"
    RunFigures figures;  // sessions/run_figures.h: the same figures as the run table and `runs compare`
    std::optional<TargetReach> target;
    std::optional<double> speedup;
};

struct Figure {
    QString title;
    QString caption;
    QByteArray png;
    int width = 0, height = 0;  // display size in CSS pixels (the PNG is twice that)
};

// The scaling statistics of one run of a scaled recipe (report_scaling.h).
struct ScalingSection {
    QString run_label;
    std::vector<ScalingSummaryRow> summary;  // per layer and operand
    std::vector<Figure> figures;             // amax, scale, block-scale histograms
};

struct ReportContent {
    QString title;
    QString generated;  // date and time
    QString database;
    double target_accuracy = 0;
    bool target_chosen = false;  // derived from the runs, not given
    double smoothing = 0;        // EMA weight of the training curves (ReportRequest::smoothing)
    std::vector<RunRow> rows;
    std::vector<ConfigDiffEntry> diff;
    std::vector<Figure> curves;
    std::vector<Figure> histograms;
    std::vector<ScalingSection> scaling;  // only runs that stored scaling statistics
};

// "Training curves smoothed with EMA α = 0.6; ..." or "Training curves not smoothed." (report.cpp).
std::string smoothing_statement(double smoothing);

QString to_browser_html(const ReportContent& c);
// For QTextDocument: images referenced as "img:<index>" (curves first, then histograms, then
// the scaling sections' figures in order).
QString to_document_html(const ReportContent& c);

// Cell texts shared by both renderings.
QString percent_text(std::optional<double> fraction, int decimals = 2);
QString html_escape(const QString& s);

}  // namespace mpwb::report_detail
