// write_report: collects the runs from the store, computes the summary, renders the plots
// offscreen and writes HTML, PDF and CSV (see report.h).
#include "app/report/report.h"

#include "app/report/report_html.h"
#include "core/numeric/exponent_histogram.h"
#include "sessions/file_identity.h"
#include "sessions/run_store.h"
#include "widgets/plots/heatmap_plot.h"
#include "widgets/plots/histogram_plot.h"
#include "widgets/plots/plot_export.h"
#include "widgets/plots/series_plot.h"

#include <QApplication>
#include <QBuffer>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QPdfWriter>
#include <QSaveFile>
#include <QTextDocument>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace mpwb {
namespace {

using report_detail::Figure;
using report_detail::ReportContent;
using report_detail::RunRow;

constexpr int kPlotWidth = 860;   // CSS pixels; PNGs are rendered at twice this
constexpr int kPlotHeight = 380;
constexpr std::int64_t kMaxPlotPoints = 20000;  // longer series are read downsampled

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

bool is_fp32(const Run& r) {
    const std::string p = lower(r.precision);
    return p == "fp32";
}

// The reduced format a run stores in (what its gradient statistics are measured against);
// FP32 and TF32 runs are measured against FP16: what FP16 would lose.
Format reduced_format(const Run& r) {
    const std::string p = lower(r.precision);
    if (p.find("bf16") != std::string::npos) return Format::BF16;
    return Format::FP16;
}

QString run_label(const Run& r) {
    return QStringLiteral("#%1 %2").arg(r.id).arg(QString::fromStdString(r.name.empty() ? r.precision : r.name));
}

struct Series {
    QVector<double> steps, values, times;
};

Series read_series(RunStore& store, const Run& run, const std::string& key) {
    Series s;
    auto it = run.latest.find(key);
    if (it != run.latest.end() && it->second.count > kMaxPlotPoints) {
        for (const Bucket& b : store.downsample(run.id, key, static_cast<int>(kMaxPlotPoints / 2))) {
            if (b.count == 0) continue;
            // min and max of each bucket keep the envelope (spikes stay visible).
            s.steps << double(b.first_step) << double(b.last_step);
            s.values << b.min << b.max;
            s.times << 0 << 0;
        }
        return s;
    }
    for (const MetricPoint& p : store.series(run.id, key)) {
        s.steps << double(p.step);
        s.values << p.value;
        s.times << p.wall_time;
    }
    return s;
}

std::optional<double> finite_mean(const QVector<double>& v) {
    double sum = 0;
    int n = 0;
    for (double x : v)
        if (std::isfinite(x) && x > 0) {
            sum += x;
            ++n;
        }
    if (n == 0) return std::nullopt;
    return sum / n;
}

RunRow summarize(RunStore& store, const Run& run) {
    RunRow row;
    row.run = run;
    row.label = run_label(run);
    const auto acc = store.series(run.id, "test_accuracy");
    for (const MetricPoint& p : acc) {
        if (!std::isfinite(p.value)) continue;
        row.best_accuracy = std::max(row.best_accuracy.value_or(p.value), p.value);
    }
    if (!acc.empty() && std::isfinite(acc.back().value)) row.final_accuracy = acc.back().value;
    if (auto it = run.latest.find("samples_per_second"); it != run.latest.end()) {
        row.mean_samples_per_second = finite_mean(read_series(store, run, "samples_per_second").values);
    }
    if (auto it = run.latest.find("skipped_count"); it != run.latest.end()) {
        row.skipped = static_cast<std::int64_t>(it->second.max);
    } else {
        for (const MetricPoint& p : store.series(run.id, "skipped")) row.skipped += p.value != 0;
    }
    if (auto it = run.latest.find("overflow_count"); it != run.latest.end())
        row.overflows = static_cast<std::int64_t>(it->second.max);
    if (auto it = run.latest.find("loss_scale"); it != run.latest.end() && it->second.count > 0) {
        row.scale_min = it->second.min;
        row.scale_max = it->second.max;
    }
    for (const auto& [key, m] : run.latest) row.steps = std::max(row.steps, m.step);
    if (run.started && run.ended) row.duration_seconds = *run.ended - *run.started;

    // Mean underflow fraction of the activation gradients against the run's reduced format.
    row.underflow_format = reduced_format(run);
    double sum = 0;
    int n = 0;
    for (const Histogram& h : store.histograms(run.id, {}, {}, {}, "activation_grad")) {
        try {
            const ExponentHistogram eh = ExponentHistogram::from_blob(h.blob);
            if (eh.total() == 0) continue;
            sum += range_stats(eh, row.underflow_format).underflow_fraction;
            ++n;
        } catch (const std::exception&) {
            // A damaged blob is left out of the mean rather than failing the whole report.
        }
    }
    if (n > 0) row.mean_underflow = sum / n;
    return row;
}

void time_to_target(RunStore& store, RunRow& row, double target) {
    const double t0 = row.run.started.value_or(row.run.created);
    for (const MetricPoint& p : store.series(row.run.id, "test_accuracy")) {
        if (std::isfinite(p.value) && p.value >= target) {
            row.target_step = p.step;
            row.target_seconds = std::max(0.0, p.wall_time - t0);
            return;
        }
    }
}

Figure render(QCustomPlot* plot, const QString& title, const QString& caption, int width = kPlotWidth,
              int height = kPlotHeight) {
    Figure f;
    f.title = title;
    f.caption = caption;
    f.width = width;
    f.height = height;
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    plot->toPixmap(width, height, 2.0).save(&buffer, "PNG");
    f.png = bytes;
    return f;
}

std::vector<Figure> curve_figures(RunStore& store, const std::vector<RunRow>& rows) {
    std::vector<Figure> figures;
    struct Spec {
        SeriesPlot::Kind kind;
        const char* train_key;
        const char* test_key;
        QString title;
    };
    const Spec specs[] = {
        {SeriesPlot::Kind::Loss, "train_loss", "test_loss", QStringLiteral("Loss")},
        {SeriesPlot::Kind::Accuracy, "train_accuracy", "test_accuracy", QStringLiteral("Accuracy")},
        {SeriesPlot::Kind::Throughput, "samples_per_second", nullptr, QStringLiteral("Throughput")},
    };
    for (const Spec& spec : specs) {
        SeriesPlot plot(spec.kind);
        bool any = false, smoothed = false;
        double vmin = INFINITY, vmax = 0;
        for (const RunRow& row : rows) {
            const int key = plot.addRun(row.label, QString::fromStdString(row.run.precision));
            Series train = read_series(store, row.run, spec.train_key);
            if (!train.steps.isEmpty()) {
                plot.appendPoints(key, SeriesPlot::Curve::Train, train.steps, train.values);
                any = true;
                smoothed = smoothed || train.steps.size() > 200;
                for (double v : train.values)
                    if (std::isfinite(v) && v > 0) {
                        vmin = std::min(vmin, v);
                        vmax = std::max(vmax, v);
                    }
            }
            if (spec.test_key) {
                Series test = read_series(store, row.run, spec.test_key);
                if (!test.steps.isEmpty()) {
                    plot.appendPoints(key, SeriesPlot::Curve::Test, test.steps, test.values);
                    any = true;
                }
            }
        }
        if (!any) continue;
        if (smoothed) plot.setSmoothing(0.8);
        if (spec.kind == SeriesPlot::Kind::Loss && vmax > 0 && vmax / vmin > 30) plot.setLogY(true);
        QString caption;
        if (smoothed)
            caption = QStringLiteral("Training curves smoothed for display (EMA 0.8); the CSV holds the raw values.");
        if (spec.test_key) caption += QStringLiteral(" Thicker lines with open circles: evaluation on the test set.");
        figures.push_back(render(&plot, spec.title, caption.trimmed()));
    }

    // Loss scale with overflow and skip markers; runs without a scaler (constant 1) are left out.
    SeriesPlot scale_plot(SeriesPlot::Kind::LossScale);
    bool any = false;
    for (const RunRow& row : rows) {
        if (!row.scale_min || (*row.scale_min == 1 && *row.scale_max == 1 && is_fp32(row.run))) continue;
        const int key = scale_plot.addRun(row.label, QString::fromStdString(row.run.precision));
        Series s = read_series(store, row.run, "loss_scale");
        if (s.steps.isEmpty()) continue;
        scale_plot.appendPoints(key, SeriesPlot::Curve::Scale, s.steps, s.values);
        any = true;
        QVector<double> overflow_steps, skip_steps;
        double last = 0;
        for (const MetricPoint& p : store.series(row.run.id, "overflow_count")) {
            if (p.value > last) overflow_steps << double(p.step);
            last = p.value;
        }
        for (const MetricPoint& p : store.series(row.run.id, "skipped"))
            if (p.value != 0) skip_steps << double(p.step);
        scale_plot.appendPoints(key, SeriesPlot::Curve::Overflow, overflow_steps, {});
        scale_plot.appendPoints(key, SeriesPlot::Curve::Skip, skip_steps, {});
    }
    if (any)
        figures.push_back(render(&scale_plot, QStringLiteral("Loss scale"),
                                 QStringLiteral("log₂ axis; red triangles: overflow (non-finite "
                                                "gradient), crosses: skipped steps.")));
    return figures;
}

std::vector<Figure> histogram_figures(RunStore& store, const std::vector<RunRow>& rows) {
    std::vector<Figure> figures;
    for (const RunRow& row : rows) {
        // The last step with statistics: the newest histogram row.
        const std::vector<Histogram> all = store.histograms(row.run.id);
        if (all.empty()) continue;
        std::int64_t last_step = 0;
        for (const Histogram& h : all) last_step = std::max(last_step, h.step);
        // The largest activation gradient and the largest weight gradient at that step.
        const Histogram* pick[2] = {nullptr, nullptr};
        std::uint64_t best[2] = {0, 0};
        std::map<const Histogram*, ExponentHistogram> decoded;
        for (const Histogram& h : all) {
            if (h.step != last_step) continue;
            ExponentHistogram eh;
            try {
                eh = ExponentHistogram::from_blob(h.blob);
            } catch (const std::exception&) {
                continue;
            }
            const int k = h.kind == "activation_grad" ? 0 : 1;
            if (eh.total() > best[k] || !pick[k]) {
                best[k] = eh.total();
                pick[k] = &h;
            }
            decoded[&h] = eh;
        }
        double scale = 1;
        for (const MetricPoint& p : store.series(row.run.id, "loss_scale", std::int64_t{0}, last_step)) scale = p.value;
        const Format ref = reduced_format(row.run);
        for (const Histogram* h : pick) {
            if (!h) continue;
            HistogramPlot plot;
            const QString title = QStringLiteral("%1 · layer %2 · %3 · step %4")
                                      .arg(row.label, QString::fromStdString(h->layer),
                                           QString::fromStdString(h->kind))
                                      .arg(h->step);
            plot.setHistogram(decoded[h], title, ref, static_cast<float>(scale));
            figures.push_back(render(&plot, title,
                                     QStringLiteral("Bars: share of the %1 elements per power of two; "
                                                    "background: %2 zones; strips: FP16, BF16, FP8.")
                                         .arg(decoded[h].total())
                                         .arg(QString::fromStdString(format_name(ref)).toUpper()),
                                     kPlotWidth, 400));
        }
        // The largest weight gradient over the whole run.
        if (pick[1]) {
            HeatmapPlot heat;
            heat.setBoundaryFormats({ref});
            for (const Histogram& h : store.histograms(row.run.id, {}, {}, pick[1]->layer, pick[1]->kind)) {
                try {
                    heat.addColumn(h.step, ExponentHistogram::from_blob(h.blob));
                } catch (const std::exception&) {
                }
            }
            if (heat.columnCount() > 1) {
                const QString title = QStringLiteral("%1 · layer %2 · %3 over steps")
                                          .arg(row.label, QString::fromStdString(pick[1]->layer),
                                               QString::fromStdString(pick[1]->kind));
                heat.setTitle(title);
                figures.push_back(render(&heat, title, QStringLiteral("Colour: log₁₀ of the share of elements in each binade; dashed: the format's smallest subnormal and largest value."),
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

void write_pdf(const QString& path, const ReportContent& content) {
    // Written to a temporary name first, so a failure never leaves half a PDF under the name.
    const QString tmp = path + QStringLiteral(".part");
    {
        QPdfWriter pdf(tmp);
        pdf.setPageSize(QPageSize(QPageSize::A4));
        // QTextDocument::print adds its own 2 cm margin around an unpaginated document.
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout::Millimeter);
        pdf.setResolution(300);
        pdf.setTitle(content.title);
        pdf.setCreator(QStringLiteral("MP Workbench"));
        QTextDocument doc;
        QFont font(QStringLiteral("DejaVu Sans"));
        font.setPointSizeF(8.5);
        doc.setDefaultFont(font);
        int index = 0;
        for (const auto* list : {&content.curves, &content.histograms})
            for (const Figure& f : *list) {
                QImage image;
                image.loadFromData(f.png, "PNG");
                doc.addResource(QTextDocument::ImageResource, QUrl(QStringLiteral("img:%1").arg(index++)), image);
            }
        doc.setHtml(report_detail::to_document_html(content));
        doc.print(&pdf);
    }
    QFile::remove(path);
    if (!QFileInfo(tmp).exists() || QFileInfo(tmp).size() == 0 || !QFile::rename(tmp, path)) {
        QFile::remove(tmp);
        throw ReportError("cannot write " + path.toStdString());
    }
}

QByteArray series_csv(RunStore& store, const std::vector<RunRow>& rows) {
    QByteArray out = "run_id,run_name,key,step,wall_time,value\n";
    for (const RunRow& row : rows) {
        const QByteArray name = csv_field(QString::fromStdString(row.run.name)).toUtf8();
        for (const std::string& key : store.metric_keys(row.run.id)) {
            const QByteArray k = csv_field(QString::fromStdString(key)).toUtf8();
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
    if (!dir.exists()) throw ReportError("cannot write " + path + ": the folder " + dir.filePath().toStdString() + " does not exist");
    if (!dir.isWritable()) throw ReportError("cannot write " + path + ": the folder " + dir.filePath().toStdString() + " is not writable");
    if (info.exists() && !info.isWritable()) throw ReportError("cannot write " + path + ": the file is not writable");
}

}  // namespace

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
            for (const RunRow& r : content.rows) best_final = std::max(best_final, r.final_accuracy.value_or(0));
            target = 0.95 * best_final;
            content.target_chosen = true;
        }
        content.target_accuracy = target;
        if (target > 0)
            for (RunRow& r : content.rows) time_to_target(*store, r, target);
        // Speed-up over the first FP32 run.
        std::optional<double> fp32_sps;
        for (const RunRow& r : content.rows)
            if (is_fp32(r.run) && r.mean_samples_per_second) {
                fp32_sps = r.mean_samples_per_second;
                break;
            }
        if (fp32_sps && *fp32_sps > 0)
            for (RunRow& r : content.rows)
                if (r.mean_samples_per_second) r.speedup = *r.mean_samples_per_second / *fp32_sps;

        content.diff = ids.size() > 1 ? store->config_diff(ids) : std::vector<ConfigDiffEntry>{};
        if (!request.title.empty()) {
            content.title = QString::fromStdString(request.title);
        } else {
            QStringList names;
            for (const RunRow& r : content.rows) names << r.label;
            content.title = QStringLiteral("Run comparison: ") + names.join(QStringLiteral(" vs "));
        }
        content.curves = curve_figures(*store, content.rows);
        content.histograms = histogram_figures(*store, content.rows);
    } catch (const StoreError& e) {
        throw ReportError(std::string("reading the runs failed: ") + e.what());
    }

    std::vector<std::string> written;
    for (const std::string& o : outputs) {
        const QString path = QString::fromStdString(o);
        if (QFileInfo(path).suffix().toLower() == QLatin1String("pdf"))
            write_pdf(path, content);
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
