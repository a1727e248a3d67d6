// write_report: collects the runs from the store, computes the summary, renders the plots
// offscreen and writes HTML, PDF and CSV (see report.h).
#include "app/report/report.h"

#include "app/report/report_html.h"
#include "app/report/report_pdf.h"
#include "app/report/report_scaling.h"
#include "app/report/report_stability.h"
#include "app/report/report_sections.h"
#include "core/numeric/exponent_histogram.h"
#include "core/common/text_format.h"
#include "sessions/file_identity.h"
#include "sessions/metric_keys.h"
#include "sessions/plot_series.h"
#include "sessions/run_figures.h"
#include "sessions/run_store.h"
#include "widgets/plots/heatmap_plot.h"
#include "widgets/plots/histogram_plot.h"
#include "widgets/plots/metric_plots.h"
#include "widgets/plots/plot_export.h"
#include "widgets/plots/series_plot.h"

#include <QApplication>
#include <QBuffer>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QSaveFile>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace mpwb {
namespace {

using report_detail::Figure;
using report_detail::ReportContent;
using report_detail::RunRow;

constexpr int kPlotWidth = 860;  // CSS pixels; PNGs are rendered at twice this
constexpr int kPlotHeight = 380;
constexpr int kCellWidth = 330;  // the small multiples of the gradient histograms
constexpr int kCellHeight = 220;
constexpr int kBoundarySize = 420;
constexpr int kStabilityHeight = 300;           // the Stability section's plots, one per family of indicators
constexpr std::int64_t kMaxPlotPoints = 20000;  // longer series are read downsampled

QString run_label(const Run& r) {
    return QStringLiteral("#%1 %2").arg(r.id).arg(
        QString::fromStdString(r.name.empty() ? r.precision : r.name));
}

QVector<double> to_qvector(const std::vector<double>& v) { return QVector<double>(v.begin(), v.end()); }

RunRow summarize(RunStore& store, const Run& run) {
    RunRow row;
    row.run = run;
    row.label = run_label(run);
    row.figures = run_figures(store, run);
    return row;
}

Figure render(QCustomPlot* plot, const QString& title, const QString& caption, int width = kPlotWidth,
              int height = kPlotHeight) {
    return report_detail::render_plot(plot, title, caption, width, height);
}

}  // namespace

std::string report_detail::smoothing_statement(double smoothing) {
    if (smoothing <= 0) return "Training curves not smoothed.";
    return "Training curves smoothed with EMA α = " + shortest_text(smoothing) +
           "; the raw values are drawn faded behind and the CSV holds them.";
}

Figure report_detail::render_plot(QCustomPlot* plot, const QString& title, const QString& caption, int width,
                                  int height, double pixel_ratio) {
    Figure f;
    f.title = title;
    f.caption = caption;
    f.width = width;
    f.height = height;
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    // A palette of 256 colours, without dithering: plots have few colours, and the PNG (embedded
    // in the HTML as base64) becomes a third of the size.
    plot->toPixmap(width, height, pixel_ratio)
        .toImage()
        .convertToFormat(QImage::Format_Indexed8, Qt::ThresholdDither | Qt::AvoidDither)
        .save(&buffer, "PNG", 9);
    f.png = bytes;
    return f;
}

namespace {

// One run's stored series on its curve; returns what was read.
PlotSeries add_curve(RunStore& store, const Run& run, const MetricCurve& curve, SeriesPlot& plot, int key) {
    PlotSeries series = read_plot_series(store, run, curve.key, static_cast<int>(kMaxPlotPoints));
    if (!series.steps.empty())
        plot.appendPoints(key, curve.curve, to_qvector(series.steps), to_qvector(series.values));
    return series;
}

// The loss, accuracy and throughput plots: the curves kMetricCurves puts on each, the training
// curves smoothed with the EMA weight the user chose (0: raw).
// A report of text runs only reads per token (sessions/run_figures.h): its axes say so, and its
// throughput plot draws the tokens_per_second series.
bool text_runs_only(const std::vector<RunRow>& rows) {
    return !rows.empty() &&
           std::all_of(rows.begin(), rows.end(), [](const RunRow& r) { return r.figures.text.has_value(); });
}

void label_per_token(SeriesPlot& plot, SeriesPlot::Kind kind) {
    if (kind == SeriesPlot::Kind::Loss) plot.yAxis->setLabel(QStringLiteral("loss (nats per token)"));
    if (kind == SeriesPlot::Kind::Accuracy)
        plot.yAxis->setLabel(QStringLiteral("next-token accuracy (fraction correct)"));
    if (kind == SeriesPlot::Kind::Throughput) plot.yAxis->setLabel(QStringLiteral("throughput (tokens/s)"));
}

QString throughput_caption(const std::vector<RunRow>& rows) {
    if (text_runs_only(rows))
        return QStringLiteral(
            " Tokens per second of each training step (a window of context tokens is one sample); the "
            "table's tokens/s is the training throughput (tokens trained over training seconds, "
            "evaluation excluded).");
    QString caption = QStringLiteral(
        " Samples per second of each training step; the table's samples/s is the training "
        "throughput (samples trained over training seconds, evaluation excluded).");
    if (std::any_of(rows.begin(), rows.end(), [](const RunRow& r) { return r.figures.text.has_value(); }))
        caption += QStringLiteral(
            " A text run's sample is one window of context tokens: its tokens/s are these samples/s "
            "times the context.");
    return caption;
}

std::optional<Figure> curve_figure(RunStore& store, const std::vector<RunRow>& rows, const CurvePlot& spec,
                                   double smoothing) {
    SeriesPlot plot(spec.kind);
    bool any = false, has_test = false;
    double vmin = INFINITY, vmax = 0;
    const bool per_token = text_runs_only(rows);
    for (const RunRow& row : rows) {
        const int key = plot.addRun(row.label, QString::fromStdString(row.run.precision));
        for (MetricCurve c : kMetricCurves) {
            if (c.plot != spec.kind) continue;
            if (per_token && c.plot == SeriesPlot::Kind::Throughput) c.key = metric_key::tokens_per_second;
            has_test = has_test || c.curve == SeriesPlot::Curve::Test;
            const PlotSeries series = add_curve(store, row.run, c, plot, key);
            any = any || !series.steps.empty();
            if (c.curve != SeriesPlot::Curve::Train) continue;
            for (double v : series.values)
                if (std::isfinite(v) && v > 0) {
                    vmin = std::min(vmin, v);
                    vmax = std::max(vmax, v);
                }
        }
    }
    if (!any) return std::nullopt;
    if (per_token) label_per_token(plot, spec.kind);
    plot.setSmoothing(smoothing);
    if (spec.kind == SeriesPlot::Kind::Loss && vmax > 0 && vmax / vmin > 30) plot.setLogY(true);
    QString caption = QString::fromStdString(report_detail::smoothing_statement(smoothing));
    if (spec.kind == SeriesPlot::Kind::Throughput) caption += throughput_caption(rows);
    if (has_test) caption += QStringLiteral(" Thicker lines with open circles: evaluation on the test set.");
    return render(&plot, QString::fromLatin1(spec.title), caption.trimmed());
}

// Loss scale with overflow and skip markers; runs whose scale stayed 1 (no loss scaling: FP32,
// BF16) are left out and named in the caption.
std::optional<Figure> scale_figure(RunStore& store, const std::vector<RunRow>& rows, const CurvePlot& spec) {
    SeriesPlot plot(spec.kind);
    bool any = false;
    QStringList unscaled;
    for (const RunRow& row : rows) {
        const auto& range = row.figures.loss_scale;
        if (!range) continue;
        if (range->min == 1 && range->max == 1) {
            unscaled << row.label;
            continue;
        }
        const int key = plot.addRun(row.label, QString::fromStdString(row.run.precision));
        for (const MetricCurve& c : kMetricCurves)
            if (c.plot == spec.kind) any = !add_curve(store, row.run, c, plot, key).steps.empty() || any;
        const ScaleMarkers markers = read_scale_markers(store, row.run);
        plot.appendPoints(key, SeriesPlot::Curve::Overflow, to_qvector(markers.overflow_steps), {});
        plot.appendPoints(key, SeriesPlot::Curve::Skip, to_qvector(markers.skip_steps), {});
    }
    if (!any) return std::nullopt;
    QString caption =
        QStringLiteral("log₂ axis; red triangles: overflow (non-finite gradient), crosses: skipped steps.");
    if (!unscaled.isEmpty())
        caption += QStringLiteral(" No loss scaling (scale 1 throughout): ") +
                   unscaled.join(QStringLiteral(", ")) + QLatin1Char('.');
    return render(&plot, QString::fromLatin1(spec.title), caption);
}

std::vector<Figure> curve_figures(RunStore& store, const std::vector<RunRow>& rows, double smoothing) {
    std::vector<Figure> figures;
    for (const CurvePlot& spec : kCurvePlots) {
        const auto figure = spec.kind == SeriesPlot::Kind::LossScale
                                ? scale_figure(store, rows, spec)
                                : curve_figure(store, rows, spec, smoothing);
        if (figure) figures.push_back(*figure);
    }
    return figures;
}

// Per run, the weight gradient with the most elements over the whole run as a heatmap of its
// exponent histograms over steps (the small multiples show every layer at the last step).
std::vector<Figure> histogram_figures(RunStore& store, const std::vector<RunRow>& rows) {
    std::vector<Figure> figures;
    for (const RunRow& row : rows) {
        const std::vector<Histogram> all = store.histograms(row.run.id);
        if (all.empty()) continue;
        std::int64_t last_step = 0;
        for (const Histogram& h : all) last_step = std::max(last_step, h.step);
        const Histogram* pick = nullptr;
        std::uint64_t best = 0;
        for (const Histogram& h : all) {
            if (h.step != last_step || h.kind == metric_key::activation_grad) continue;
            try {
                const std::uint64_t total = ExponentHistogram::from_blob(h.blob).total();
                if (total > best || !pick) {
                    best = total;
                    pick = &h;
                }
            } catch (const std::exception&) {}
        }
        const Format ref = row.figures.underflow_format;
        // The largest weight gradient over the whole run.
        if (pick) {
            HeatmapPlot heat;
            heat.setBoundaryFormats({ref});
            for (const Histogram& h : store.histograms(row.run.id, {}, {}, pick->layer, pick->kind)) {
                try {
                    heat.addColumn(h.step, ExponentHistogram::from_blob(h.blob));
                } catch (const std::exception&) {}
            }
            if (heat.columnCount() > 1) {
                const QString title = QStringLiteral("%1 · layer %2 · %3 over steps")
                                          .arg(row.label, QString::fromStdString(pick->layer),
                                               QString::fromStdString(pick->kind));
                heat.setTitle(title);
                figures.push_back(
                    render(&heat, title,
                           QStringLiteral("Colour: log₁₀ of the share of elements in each binade; dashed: "
                                          "the format's smallest subnormal and largest value."),
                           kPlotWidth, 340));
            }
        }
    }
    return figures;
}

void write_text(const QString& path, const QByteArray& bytes) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        throw ReportError("cannot write " + path.toStdString() + ": " + f.errorString().toStdString());
    f.write(bytes);
    if (!f.commit())
        throw ReportError("cannot write " + path.toStdString() + ": " + f.errorString().toStdString());
}

QByteArray series_csv(RunStore& store, const std::vector<RunRow>& rows) {
    QByteArray out = "run_id,run_name,key,step,wall_time,value\n";
    for (const RunRow& row : rows) {
        const QByteArray name = QByteArray::fromStdString(csv_field(row.run.name));
        for (const std::string& key : store.metric_keys(row.run.id)) {
            const QByteArray k = QByteArray::fromStdString(csv_field(key));
            for (const MetricPoint& p : store.series(row.run.id, key)) {
                out += QByteArray::number(qlonglong(row.run.id)) + ',' + name + ',' + k + ',' +
                       QByteArray::number(qlonglong(p.step)) + ',' + QByteArray::number(p.wall_time, 'f', 3) +
                       ',' + QByteArray::number(p.value, 'g', 17) + '\n';
            }
        }
    }
    return out;
}

// The series CSV goes beside the first output: report.html -> report.csv.
QString csv_beside(const std::string& output) {
    const QFileInfo first(QString::fromStdString(output));
    return first.absoluteDir().filePath(first.completeBaseName() + QStringLiteral(".csv"));
}

void check_output(const std::string& path) {
    const QFileInfo info(QString::fromStdString(path));
    const QString suffix = info.suffix().toLower();
    if (suffix != QLatin1String("html") && suffix != QLatin1String("htm") && suffix != QLatin1String("pdf"))
        throw ReportError("cannot write a report to " + path + ": use a .html or .pdf file name");
    const QFileInfo dir(info.absolutePath());
    if (!dir.exists())
        throw ReportError("cannot write " + path + ": the folder " + dir.filePath().toStdString() +
                          " does not exist");
    if (!dir.isWritable())
        throw ReportError("cannot write " + path + ": the folder " + dir.filePath().toStdString() +
                          " is not writable");
    if (info.exists() && !info.isWritable())
        throw ReportError("cannot write " + path + ": the file is not writable");
}

// Opens the store read-only and gathers everything the report shows; *store stays open for the CSV.
ReportContent collect_content(const ReportRequest& request, const std::vector<std::int64_t>& ids,
                              const std::string& db_path, std::unique_ptr<RunStore>* store_out) {
    std::unique_ptr<RunStore>& store = *store_out;
    try {
        RunStore::Options options;
        options.read_only = true;
        options.create = false;
        options.detect_interrupted = false;
        store = std::make_unique<RunStore>(db_path, options);
    } catch (const StoreError& e) {
        throw ReportError(std::string("cannot open the run database: ") + e.what());
    }

    ReportContent content;
    content.database = QString::fromStdString(db_path);
    content.generated = QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    try {
        for (std::int64_t id : ids) {
            Run run;
            try {
                run = store->get_run(id);
            } catch (const StoreError& e) {
                if (e.kind() == StoreError::Kind::NotFound)
                    throw ReportError("run " + std::to_string(id) + " does not exist in " + db_path);
                throw;
            }
            content.rows.push_back(summarize(*store, run));
        }
        // Target accuracy: given, or 95% of the best final test accuracy.
        double target = request.target_accuracy;
        if (target > 1) target /= 100;  // given in percent
        if (target <= 0) {
            double best_final = 0;
            for (const RunRow& r : content.rows)
                best_final = std::max(best_final, r.figures.final_test_accuracy.value_or(0));
            target = 0.95 * best_final;
            content.target_chosen = true;
        }
        content.target_accuracy = target;
        if (target > 0)
            for (RunRow& r : content.rows) r.target = time_to_accuracy(*store, r.run, target);
        std::vector<Run> runs;
        std::vector<RunFigures> figures;
        for (const RunRow& r : content.rows) {
            runs.push_back(r.run);
            figures.push_back(r.figures);
        }
        const auto speedups = speedups_over_fp32(runs, figures);
        for (std::size_t i = 0; i < content.rows.size(); ++i) content.rows[i].speedup = speedups[i];

        content.diff = ids.size() > 1 ? store->config_diff(ids) : std::vector<ConfigDiffEntry>{};
        if (!request.title.empty()) {
            content.title = QString::fromStdString(request.title);
        } else {
            QStringList names;
            for (const RunRow& r : content.rows) names << r.label;
            content.title = QStringLiteral("Run comparison: ") + names.join(QStringLiteral(" vs "));
        }
        content.smoothing = request.smoothing;
        content.curves = curve_figures(*store, content.rows, request.smoothing);
        content.histograms = histogram_figures(*store, content.rows);
        report_detail::DatasetCache data;
        content.architectures = report_detail::architectures(content.rows, data);
        content.config = report_detail::full_config(content.rows);
        content.events = report_detail::run_events(*store, content.rows);
        content.gradient_grids = report_detail::gradient_grids(*store, content.rows, kCellWidth, kCellHeight);
        content.boundaries = report_detail::boundary_figures(*store, content.rows, data, kBoundarySize);
        content.scaling = report_detail::scaling_sections(*store, content.rows, kPlotWidth);
        content.stability =
            report_detail::stability_section(*store, content.rows, kPlotWidth, kStabilityHeight);
        content.text_samples = report_detail::text_samples(*store, content.rows, data);
    } catch (const StoreError& e) {
        throw ReportError(std::string("reading the runs failed: ") + e.what());
    }
    return content;
}

}  // namespace

report_detail::PdfLayout report_detail::layout_report_pdf(const ReportRequest& request) {
    std::unique_ptr<RunStore> store;
    const std::string db = request.database.empty() ? default_database_path() : request.database;
    return layout_pdf(collect_content(request, request.run_ids, db, &store));
}

std::vector<std::string> write_report(const ReportRequest& request) {
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
        throw ReportError("write_report needs a QApplication (plots are widgets rendered offscreen)");
    std::vector<std::int64_t> ids;
    for (std::int64_t id : request.run_ids)
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    if (ids.empty()) throw ReportError("no runs selected: give at least one run id (e.g. --runs 3,4)");
    std::vector<std::string> outputs;
    if (!request.output.empty()) outputs.push_back(request.output);
    for (const std::string& o : request.extra_outputs)
        if (!o.empty()) outputs.push_back(o);
    if (outputs.empty()) throw ReportError("no output file given: name a .html or .pdf file");
    if (!(request.smoothing >= 0 && request.smoothing < 1))
        throw ReportError("smoothing " + shortest_text(request.smoothing) +
                          " is not an EMA weight: give a number from 0 up to but not including 1");
    for (const std::string& o : outputs) check_output(o);

    const std::string db_path = request.database.empty() ? default_database_path() : request.database;
    if (!QFileInfo::exists(QString::fromStdString(db_path)))
        throw ReportError("run database not found: " + db_path);
    // No output (nor the CSV written beside the first) may overwrite the database it reads.
    try {
        for (const std::string& o : outputs) refuse_output_onto_database(o, db_path, "the report");
        refuse_output_onto_database(csv_beside(outputs.front()).toStdString(), db_path, "the report's CSV");
    } catch (const StoreError& e) {
        throw ReportError(e.what());
    }
    std::unique_ptr<RunStore> store;
    const ReportContent content = collect_content(request, ids, db_path, &store);

    std::vector<std::string> written;
    for (const std::string& o : outputs) {
        const QString path = QString::fromStdString(o);
        if (QFileInfo(path).suffix().toLower() == QLatin1String("pdf"))
            report_detail::write_pdf(path, content);
        else
            write_text(path, report_detail::to_browser_html(content).toUtf8());
        written.push_back(o);
    }
    const QString csv = csv_beside(outputs.front());
    write_text(csv, series_csv(*store, content.rows));
    written.push_back(csv.toStdString());
    return written;
}

}  // namespace mpwb
