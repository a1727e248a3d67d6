// Internal to mpwb_report: the data a report shows (collected from the run store) and the two
// renderings of it: browser HTML (inline CSS, data: URIs) and the QTextDocument HTML the PDF is
// printed from (QTextDocument knows only a subset of CSS, so it gets its own simpler markup).
#pragma once
#include "core/numeric/format.h"
#include "sessions/recipe_advisor.h"
#include "sessions/run_figures.h"
#include "sessions/run_types.h"
#include "sessions/scaling_summary.h"
#include "sessions/stability_series.h"

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QVector>
#include <cstdint>
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
    int width = 0, height = 0;  // display size in CSS pixels (the PNG has more pixels: render_plot)
};

// One layer of a network as Network::inspect sees it at the dataset's input shape.
struct LayerRow {
    int index = 0;
    QString kind;
    QString output;  // "[64]", "[8, 14, 14]"; empty when the layer does not fit
    std::int64_t parameters = 0;
    QString error;  // the shape error, when the layer does not fit
};

// A network shown once for every run that trained it (same description, same input shape).
struct Architecture {
    QStringList runs;  // run labels
    QString name;
    QString input;  // the per-sample input shape, "[2]"; empty when the dataset cannot be read
    std::vector<LayerRow> layers;
    std::int64_t total_parameters = 0;
    QString error;  // why there is no layer table (unreadable description)
};

struct EventRow {
    std::int64_t step = 0;
    QString kind;
    QString text;  // core/train/event_text.h
};

struct RunEvents {
    QString run_label;
    std::vector<EventRow> shown;  // the first kMaxEventsPerRun
    std::size_t more = 0;         // left out
};

// One run's gradient exponent histograms of every layer and kind at its last statistics step.
struct HistogramGrid {
    QString run_label;
    std::int64_t step = 0;
    QString reference;          // the format whose zones the backgrounds show ("FP16")
    std::vector<Figure> cells;  // small plots; the title names layer and kind
};

// The scaling statistics of one run of a scaled recipe (report_scaling.h).
struct ScalingSection {
    QString run_label;
    std::vector<ScalingSummaryRow> summary;          // the run's own rows, per layer and operand
    std::vector<ScalingSummaryRow> what_if_summary;  // the what-if recipes' rows
    std::vector<Figure> figures;                     // amax, scale, block-scale histograms
    // The "gemm_precisions" event: {gemm, fprop, dgrad, wgrad} per GEMM; empty without one.
    QList<QStringList> gemm_precisions;
    AdvisorTable advisor;  // recipe_advisor of every row; shown when it has what-if columns
};

// One stored sample of a text run (a "sample" event: what the model wrote after an evaluation),
// as printable text (core/common/printable): the prompt and the continuation the model drew.
struct TextSample {
    std::int64_t step = 0;
    QString prompt;
    QString text;
    QString settings;  // "temperature 0.8, top-k 40, 200 tokens"
};

// One test window of a text run with what its final weights predict at each position: the
// texts are HTML already, one monospace cell per token (report_sections: display_token), wrong
// predictions marked.
struct TestWindow {
    std::int64_t index = 0;  // of the test part's windows
    QString input, predicted, target;
    int correct = 0, positions = 0;
};

// A text run's inputs, shown as tokens where an image run's would be images.
struct TextSamples {
    QString run_label;
    QString unit;                     // "character" or "byte": what one token is
    std::vector<TextSample> shown;    // the first and the last ones stored
    std::size_t more = 0;             // left out between them
    QString error;                    // why there are none (samples off, failed)
    std::vector<TestWindow> windows;  // a few test windows with the final weights' predictions
    std::int64_t test_windows = 0;    // in the test part
    QString windows_error;            // why there are none (no final weights, data unreadable)
};

// The instability indicators of the runs that stored them (report_stability.h): one figure per
// family of indicators, the runs overlaid, and each run's last values.
struct StabilitySection {
    std::vector<Figure> figures;
    std::vector<std::pair<QString, std::vector<StabilityLatest>>> latest;  // run label, its last values
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
    std::vector<Architecture> architectures;
    std::vector<ConfigDiffEntry> config;  // every setting of every run (ConfigDiffEntry layout)
    std::vector<RunEvents> events;
    std::vector<HistogramGrid> gradient_grids;
    std::vector<Figure> boundaries;  // 2-D runs with a stored decision boundary
    std::vector<Figure> curves;
    std::vector<Figure> histograms;
    std::vector<ScalingSection> scaling;    // only runs that stored scaling statistics
    StabilitySection stability;             // empty unless a run stored instability indicators
    std::vector<TextSamples> text_samples;  // text runs only
};

// "Training curves smoothed with EMA α = 0.6; ..." or "Training curves not smoothed." (report.cpp).
std::string smoothing_statement(double smoothing);

QString to_browser_html(const ReportContent& c);

// A table of cells that are HTML already; both renderings (and report_pdf's pagination, which
// splits a long table between its rows) build their markup from these.
struct Table {
    QStringList header;
    QList<QStringList> rows;
    // Column widths in percent, or empty: QTextDocument otherwise shares a wide table's width
    // out evenly and breaks numbers like "4.919e+06" inside narrow columns.
    QList<int> widths;
    // Per row, per cell: a CSS colour for the cell's background ("" for none); the browser
    // rendering uses them (the advisor's grades), the PDF prints the plain table.
    QList<QStringList> backgrounds;
};
Table runs_table(const ReportContent& c);
Table notes_table(const ReportContent& c);
Table summary_table(const ReportContent& c);
Table diff_table(const ReportContent& c);
Table config_table(const ReportContent& c);  // every setting; differing values in bold
Table architecture_table(const Architecture& a);
QString architecture_heading(const Architecture& a);
Table events_table(const RunEvents& e);
Table sqnr_table(const std::vector<ScalingSummaryRow>& summary);
// report_precision.cpp: the precision of each GEMM and pass, and the recipe advisor.
Table gemm_precision_table(const ScalingSection& section);
Table advisor_table(const AdvisorTable& advisor);
extern const QString kGemmPrecisionNote;
extern const QString kAdvisorNote;
extern const QString kWhatIfNote;
Table stability_table(const StabilitySection& section);  // report_stability.cpp
extern const QString kStabilityNote;
Table machine_table(const ReportContent& c);  // machine and library versions only
QString table_html(const Table& t, const QString& attrs, const QString& head_attrs = {});
QString target_note(const ReportContent& c);
extern const QString kScalingNote;
QString grid_note(const HistogramGrid& g);  // what the small multiples show
// The text samples section: its note and one sample as HTML (a monospace block, prompt in bold)
// that both renderings use.
QString text_samples_note(const TextSamples& s);
QString text_sample_html(const TextSample& sample);
QString test_windows_note(const TextSamples& s);
QString test_window_html(const TestWindow& window);
QString pretty_json(const std::string& json);
// Zero-width spaces after separators in long words, so QTextDocument can wrap them.
QString breakable(const QString& text);

// Cell texts shared by both renderings.
QString percent_text(std::optional<double> fraction, int decimals = 2);
QString html_escape(const QString& s);

}  // namespace mpwb::report_detail
