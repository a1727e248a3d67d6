// Internal to mpwb_report: the data a report shows (collected from the run store) and the two
// renderings of it: browser HTML (inline CSS, data: URIs) and the QTextDocument HTML the PDF is
// printed from (QTextDocument knows only a subset of CSS, so it gets its own simpler markup).
#pragma once
#include "core/numeric/format.h"
#include "sessions/run_types.h"

#include <QByteArray>
#include <QString>
#include <QVector>
#include <optional>
#include <vector>

namespace mpwb::report_detail {

struct RunRow {
    Run run;
    QString label;  // "#12 name"
    std::optional<double> final_accuracy, best_accuracy;
    std::optional<std::int64_t> target_step;
    std::optional<double> target_seconds;
    std::optional<double> mean_samples_per_second;
    std::optional<double> speedup;
    std::int64_t skipped = 0, overflows = 0, steps = 0;
    std::optional<double> scale_min, scale_max;
    std::optional<double> mean_underflow;
    Format underflow_format = Format::FP16;
    std::optional<double> duration_seconds;
};

struct Figure {
    QString title;
    QString caption;
    QByteArray png;
    int width = 0, height = 0;  // display size in CSS pixels (the PNG is twice that)
};

struct ReportContent {
    QString title;
    QString generated;  // date and time
    QString database;
    double target_accuracy = 0;
    bool target_chosen = false;  // derived from the runs, not given
    std::vector<RunRow> rows;
    std::vector<ConfigDiffEntry> diff;
    std::vector<Figure> curves;
    std::vector<Figure> histograms;
};

QString to_browser_html(const ReportContent& c);
// For QTextDocument: images referenced as "img:<index>" (curves first, then histograms).
QString to_document_html(const ReportContent& c);

// Cell texts shared by both renderings.
QString percent_text(std::optional<double> fraction, int decimals = 2);
QString pow2_text(double value);
QString html_escape(const QString& s);

}  // namespace mpwb::report_detail
