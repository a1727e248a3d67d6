// The two HTML renderings of a report: a self-contained page for browsers and the simpler markup
// QTextDocument prints to PDF.
#include "app/report/report_html.h"

#include "app/report/report_sections.h"

#include <QDateTime>
#include <QLocale>
#include <algorithm>
#include <QJsonDocument>
#include <QJsonObject>
#include <cmath>
#include <functional>

namespace mpwb::report_detail {
namespace {

QString seconds_text(double s) {
    if (s < 120) return QString::number(s, 'f', 1) + QStringLiteral(" s");
    if (s < 7200) return QString::number(s / 60, 'f', 1) + QStringLiteral(" min");
    return QString::number(s / 3600, 'f', 2) + QStringLiteral(" h");
}

QString date_text(double epoch) {
    return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(epoch * 1000))
        .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

// A stored JSON value as display text: strings without quotes, long values shortened.
QString json_value_text(const std::optional<std::string>& v) {
    if (!v) return QStringLiteral("(absent)");
    QString s = QString::fromStdString(*v);
    if (s.size() >= 2 && s.startsWith(QLatin1Char('"')) && s.endsWith(QLatin1Char('"')))
        s = s.mid(1, s.size() - 2);
    if (s.size() > 90) s = s.left(87) + QStringLiteral("…");
    return s;
}

// The library and tool versions of versions_json as "key: value" lines.
QStringList version_lines(const std::string& json) {
    QStringList lines;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json));
    std::function<void(const QJsonObject&, const QString&)> walk = [&](const QJsonObject& o,
                                                                       const QString& prefix) {
        for (auto it = o.begin(); it != o.end(); ++it) {
            const QString key = prefix.isEmpty() ? it.key() : prefix + QLatin1Char('.') + it.key();
            // Versions are text ("gcc 12.2.0"); the machine object and the run's numbers
            // (parameters, samples, steps) are shown in their own sections.
            if (it->isString()) lines << key + QStringLiteral(": ") + it->toString();
        }
    };
    if (doc.isObject()) walk(doc.object(), {});
    return lines;
}

}  // namespace

Table runs_table(const ReportContent& c) {
    Table t;
    t.header = {QStringLiteral("run"),    QStringLiteral("precision"), QStringLiteral("dataset"),
                QStringLiteral("status"), QStringLiteral("started"),   QStringLiteral("duration"),
                QStringLiteral("steps"),  QStringLiteral("seed"),      QStringLiteral("backend / device")};
    t.widths = {15, 11, 9, 11, 12, 9, 7, 6, 20};
    for (const RunRow& r : c.rows) {
        t.rows << QStringList{
            html_escape(r.label),
            html_escape(QString::fromStdString(r.run.precision)),
            html_escape(QString::fromStdString(r.run.dataset)),
            QString::fromLatin1(to_string(r.run.status)),
            date_text(r.run.started.value_or(r.run.created)),
            r.figures.duration_seconds ? seconds_text(*r.figures.duration_seconds) : QStringLiteral("—"),
            QString::number(r.figures.steps),
            r.run.seed ? QString::number(*r.run.seed) : QStringLiteral("—"),
            html_escape(QString::fromStdString(r.run.backend + " / " + r.run.device))};
    }
    return t;
}

Table notes_table(const ReportContent& c) {
    Table t;
    t.header = {QStringLiteral("run"), QStringLiteral("tags"), QStringLiteral("note")};
    t.widths = {20, 30, 50};
    for (const RunRow& r : c.rows) {
        QStringList tags;
        for (const auto& [key, value] : r.run.tags)
            tags << html_escape(QString::fromStdString(value.empty() ? key : key + "=" + value));
        const QString note =
            html_escape(QString::fromStdString(r.run.note)).replace(QLatin1Char('\n'), "<br>");
        t.rows << QStringList{html_escape(r.label), tags.isEmpty() ? QStringLiteral("—") : tags.join(", "),
                              note.isEmpty() ? QStringLiteral("—") : note};
    }
    return t;
}

Table architecture_table(const Architecture& a) {
    Table t;
    t.header = {QStringLiteral("layer"), QStringLiteral("kind"), QStringLiteral("output shape"),
                QStringLiteral("parameters")};
    t.widths = {10, 30, 35, 25};
    for (const LayerRow& l : a.layers)
        t.rows << QStringList{QString::number(l.index), html_escape(l.kind),
                              l.error.isEmpty() ? html_escape(l.output) : html_escape(l.error),
                              QLocale::c().toString(qlonglong(l.parameters))};
    t.rows << QStringList{
        QString(), QStringLiteral("<b>total</b>"), QString(),
        QStringLiteral("<b>%1</b>").arg(QLocale::c().toString(qlonglong(a.total_parameters)))};
    return t;
}

QString architecture_heading(const Architecture& a) {
    QString s =
        a.name.isEmpty() ? QStringLiteral("Network") : QStringLiteral("Network ") + html_escape(a.name);
    if (!a.input.isEmpty()) s += QStringLiteral(", input ") + html_escape(a.input);
    return s + QStringLiteral(" (") + html_escape(a.runs.join(QStringLiteral(", "))) + QLatin1Char(')');
}

Table config_table(const ReportContent& c) {
    Table t;
    t.header << QStringLiteral("setting");
    for (const RunRow& r : c.rows) t.header << html_escape(r.label);
    for (const ConfigDiffEntry& e : c.config) {
        const bool differs =
            std::adjacent_find(e.values.begin(), e.values.end(), std::not_equal_to<>()) != e.values.end();
        QStringList row{html_escape(breakable(QString::fromStdString(e.path)))};
        for (const auto& v : e.values) {
            const QString text = v ? html_escape(breakable(setting_text(*v))) : QStringLiteral("(absent)");
            row << (differs ? QStringLiteral("<b>") + text + QStringLiteral("</b>") : text);
        }
        t.rows << row;
    }
    return t;
}

Table events_table(const RunEvents& e) {
    Table t;
    t.header = {QStringLiteral("step"), QStringLiteral("kind"), QStringLiteral("event")};
    t.widths = {10, 20, 70};
    for (const EventRow& r : e.shown)
        t.rows << QStringList{QString::number(r.step), html_escape(r.kind), html_escape(breakable(r.text))};
    if (e.more > 0) t.rows << QStringList{QString(), QString(), QStringLiteral("… and %1 more").arg(e.more)};
    return t;
}

QString breakable(const QString& text) {
    // QTextDocument breaks lines only at spaces: a zero-width space after separators lets long
    // paths, JSON and version strings wrap inside a table cell instead of widening it.
    QString out;
    int run = 0;
    for (const QChar ch : text) {
        out += ch;
        run = ch.isSpace() ? 0 : run + 1;
        if (run >= 12 && QStringLiteral("/._,:=-]}").contains(ch)) {
            out += QChar(0x200B);
            run = 0;
        }
    }
    return out;
}

namespace {

// Text runs are measured per token (sessions/run_figures.h): "next-token acc." when every run is
// one, a note in the header when some are.
QString accuracy_header(const ReportContent& c, const QString& which) {
    const auto text =
        std::count_if(c.rows.begin(), c.rows.end(), [](const RunRow& r) { return r.figures.text; });
    if (text == 0) return which + QStringLiteral(" test acc.");
    if (text == static_cast<std::ptrdiff_t>(c.rows.size())) return which + QStringLiteral(" next-token acc.");
    return which + QStringLiteral(" test acc. (text: next token)");
}

bool any_text_run(const ReportContent& c) {
    return std::any_of(c.rows.begin(), c.rows.end(),
                       [](const RunRow& r) { return r.figures.text.has_value(); });
}

}  // namespace

Table summary_table(const ReportContent& c) {
    Table t;
    const QString target = percent_text(c.target_accuracy, 1);
    const bool text = any_text_run(c);
    const bool per_token = text && std::all_of(c.rows.begin(), c.rows.end(),
                                               [](const RunRow& r) { return r.figures.text.has_value(); });
    t.header = {QStringLiteral("run"),
                accuracy_header(c, QStringLiteral("final")),
                accuracy_header(c, QStringLiteral("best")),
                QStringLiteral("time to ") + target,
                text ? (per_token ? QStringLiteral("tokens/s") : QStringLiteral("through&shy;put"))
                     : QStringLiteral("samples/s"),
                QStringLiteral("speed-up"),
                QStringLiteral("skipped"),
                QStringLiteral("scale range"),
                QStringLiteral("underflow (mean)")};
    t.widths = {14, 9, 9, 14, 10, 9, 9, 12, 14};
    for (const RunRow& r : c.rows) {
        QString ttt = QStringLiteral("not reached");
        if (r.target)
            ttt = QStringLiteral("step %1 (%2)").arg(r.target->step).arg(seconds_text(r.target->seconds));
        const RunFigures& f = r.figures;
        const QString scale =
            f.loss_scale ? QString::fromStdString(scale_range_text(*f.loss_scale)) : QStringLiteral("—");
        QString under = QStringLiteral("—");
        if (f.mean_activation_underflow)
            under = percent_text(f.mean_activation_underflow, 3) + QStringLiteral(" (") +
                    QString::fromStdString(format_name(f.underflow_format)).toUpper() + QLatin1Char(')');
        QString sps = f.samples_per_second
                          ? QString::fromStdString(samples_per_second_text(*f.samples_per_second))
                          : QStringLiteral("—");
        if (per_token)
            sps = f.text->tokens_per_second
                      ? QString::fromStdString(samples_per_second_text(*f.text->tokens_per_second))
                      : QStringLiteral("—");
        else if (text)
            sps = QString::fromStdString(throughput_text(f));  // each cell with its unit
        t.rows << QStringList{
            html_escape(r.label),
            percent_text(f.final_test_accuracy),
            percent_text(f.best_test_accuracy),
            ttt,
            sps,
            r.speedup ? QString::fromStdString(speedup_text(*r.speedup)) : QStringLiteral("—"),
            QString::number(f.skipped_steps) + (f.overflow_count != f.skipped_steps
                                                    ? QStringLiteral(" (%1 overflows)").arg(f.overflow_count)
                                                    : QString()),
            scale,
            under};
        if (text) t.rows.back() << html_escape(QString::fromStdString(test_loss_text(f)));
    }
    if (text) {
        t.header << QStringLiteral("final test loss");
        t.widths = {12, 8, 8, 12, 10, 7, 8, 10, 11, 14};
    }
    return t;
}

Table diff_table(const ReportContent& c) {
    Table t;
    t.header << QStringLiteral("setting");
    for (const RunRow& r : c.rows) t.header << html_escape(r.label);
    for (const ConfigDiffEntry& e : c.diff) {
        QStringList row{QStringLiteral("<code>") + html_escape(QString::fromStdString(e.path)) +
                        QStringLiteral("</code>")};
        for (const auto& v : e.values) row << html_escape(json_value_text(v));
        t.rows << row;
    }
    return t;
}

Table machine_table(const ReportContent& c) {
    Table t;
    t.header = {QStringLiteral("run"), QStringLiteral("machine"), QStringLiteral("versions")};
    t.widths = {20, 35, 45};
    for (const RunRow& r : c.rows) {
        QStringList v;
        for (const QString& l : version_lines(r.run.versions_json)) v << html_escape(breakable(l));
        t.rows << QStringList{
            html_escape(r.label),
            html_escape(QString::fromStdString(r.run.machine.empty() ? r.run.owner_host : r.run.machine)),
            v.isEmpty() ? QStringLiteral("—") : v.join(QStringLiteral("<br>"))};
    }
    return t;
}

namespace {

// Four significant digits, the exponent without '+' and leading zeros ("4.919e6"), so a number
// fits the narrow columns of the PDF's scaling table.
QString number_text(double v, int digits = 4) {
    if (std::isnan(v)) return QStringLiteral("—");
    QString text = QString::number(v, 'g', digits);
    text.replace(QStringLiteral("e+0"), QStringLiteral("e"))
        .replace(QStringLiteral("e+"), QStringLiteral("e"));
    return text.replace(QStringLiteral("e-0"), QStringLiteral("e-"));
}

QString sqnr_text(double db) {
    if (std::isnan(db)) return QStringLiteral("—");
    return db >= 999 ? QStringLiteral("lossless") : QString::number(db, 'f', 1);
}

}  // namespace

Table sqnr_table(const std::vector<ScalingSummaryRow>& summary) {
    Table t;
    t.header = {
        QStringLiteral("layer"),          QStringLiteral("operand"),        QStringLiteral("recipe"),
        QStringLiteral("format"),         QStringLiteral("amax"),           QStringLiteral("scale"),
        QStringLiteral("under&shy;flow"), QStringLiteral("satu&shy;rated"), QStringLiteral("SQNR first"),
        QStringLiteral("SQNR last"),      QStringLiteral("SQNR min"),       QStringLiteral("clipped blocks")};
    t.widths = {8, 9, 8, 7, 9, 8, 9, 9, 8, 8, 8, 9};
    for (const ScalingSummaryRow& r : summary) {
        const ScalingStats& st = r.last;
        t.rows << QStringList{
            html_escape(QString::fromStdString(r.layer_label)),
            html_escape(QString::fromStdString(r.operand)),
            html_escape(QString::fromStdString(r.recipe.empty() ? std::string("—") : r.recipe)),
            QString::fromStdString(format_name(r.element)).toUpper(),
            number_text(st.amax),
            st.scale > 0 ? number_text(st.scale) : QStringLiteral("per block"),
            percent_text(st.underflow_fraction, 2),
            percent_text(st.saturate_fraction, 2),
            sqnr_text(r.first_sqnr_db),
            sqnr_text(st.sqnr_db),
            sqnr_text(r.min_sqnr_db),
            r.blocks > 0
                ? percent_text(static_cast<double>(r.clipped_blocks) / static_cast<double>(r.blocks), 2)
                : QStringLiteral("—")};
    }
    return t;
}

extern const QString kScalingNote = QStringLiteral(
    "Per layer and quantized GEMM operand (x: input, w: weight, dy: output gradient; a second copy such as "
    "\"x (wgrad)\" is the block recipes' quantization along the other dimension). Amax, scale, underflow "
    "(non-zero values that became zero) and saturation (values clamped at the format's maximum) are the "
    "last statistics step's; SQNR is the signal over the quantization error at the first and last "
    "statistics step and its minimum over the run, in dB. Clipped blocks: share of blocks, over every "
    "statistics "
    "step, whose maximum did not fit under its scale.");

QString table_html(const Table& t, const QString& attrs, const QString& head_attrs) {
    QString s = QStringLiteral("<table %1><thead><tr>").arg(attrs);
    for (int i = 0; i < t.header.size(); ++i) {
        const QString width =
            i < t.widths.size() ? QStringLiteral(" width=\"%1%\"").arg(t.widths[i]) : QString();
        s += QStringLiteral("<th %1%2>%3</th>").arg(head_attrs, width, t.header[i]);
    }
    s += QStringLiteral("</tr></thead><tbody>");
    for (int r = 0; r < t.rows.size(); ++r) {
        s += QStringLiteral("<tr>");
        const QStringList& row = t.rows[r];
        for (int i = 0; i < row.size(); ++i) {
            const QString background =
                r < t.backgrounds.size() && i < t.backgrounds[r].size() ? t.backgrounds[r][i] : QString();
            s += (background.isEmpty() ? QStringLiteral("<td>")
                                       : QStringLiteral("<td style=\"background:%1\">").arg(background)) +
                 row[i] + QStringLiteral("</td>");
        }
        s += QStringLiteral("</tr>");
    }
    return s + QStringLiteral("</tbody></table>\n");
}

QString target_note(const ReportContent& c) {
    const QString text =
        any_text_run(c)
            ? QStringLiteral(
                  " Text runs: the accuracy is the next-token accuracy over every position of the test "
                  "windows; the throughput is in tokens/s (samples/s × context); the test loss in nats per "
                  "token and in bits per token, which is bits per character (character tokenizer) or per "
                  "byte (byte tokenizer).")
            : QString();
    if (c.target_accuracy <= 0)
        return QStringLiteral("No run has a test accuracy, so no target time is given.") + text;
    return QStringLiteral(
               "Time to target: first evaluation with test accuracy ≥ %1%2. Samples/s: training "
               "throughput, the samples trained over the seconds spent in training steps (evaluation "
               "excluded). Speed-up: samples/s over the first FP32 run's. Skipped steps: steps whose update "
               "was dropped after an overflow. Mean "
               "underflow: share of activation-gradient elements below the format's smallest subnormal, "
               "averaged over every statistics step and layer.")
               .arg(percent_text(c.target_accuracy, 1),
                    c.target_chosen ? QStringLiteral(" (95% of the best final accuracy)") : QString()) +
           text;
}

QString html_escape(const QString& s) { return s.toHtmlEscaped(); }

QString text_samples_note(const TextSamples& s) {
    return QStringLiteral(
               "A text run's inputs are tokens (one token a %1), so it shows what the model wrote "
               "instead of images: the text sampled after an evaluation from the prompt (bold), in "
               "printable form (control characters and bytes that are not UTF-8 written as escapes "
               "such as \\x1b).%2")
        .arg(s.unit,
             s.more
                 ? QStringLiteral(" %1 more samples between the first and the last are left out.").arg(s.more)
                 : QString());
}

QString text_sample_html(const TextSample& sample) {
    return QStringLiteral(
               "<p style=\"margin-top:10px; margin-bottom:2px\"><b>step %1</b> · %2</p>"
               "<pre style=\"font-family:'DejaVu Sans Mono','Liberation Mono',monospace; "
               "white-space:pre-wrap; background:#f7f7f7; margin-top:0; "
               "margin-bottom:10px\"><b>%3</b>%4</pre>")
        .arg(sample.step)
        .arg(html_escape(sample.settings), html_escape(sample.prompt), html_escape(sample.text));
}

QString test_windows_note(const TextSamples& s) {
    return QStringLiteral(
               "Test windows (the first, the middle and the last of the %1 at the end of the text, which "
               "the run never trained on): the input, the next token the final weights predict at each "
               "position (FP32, the most likely token; wrong ones in red) and the true next tokens. One "
               "cell per %2: ⏎ a newline, ⇥ a tab, · any other control character or a byte that is not a "
               "character alone.")
        .arg(s.test_windows)
        .arg(s.unit);
}

QString test_window_html(const TestWindow& w) {
    return QStringLiteral(
               "<p style=\"margin-top:10px; margin-bottom:2px\"><b>window %1</b> · %2 of %3 next tokens "
               "right</p><pre style=\"font-family:'DejaVu Sans Mono','Liberation Mono',monospace; "
               "background:#f7f7f7; margin-top:0; margin-bottom:10px\">input      %4\npredicted  %5\ntrue "
               "next  "
               "%6</pre>")
        .arg(w.index)
        .arg(w.correct)
        .arg(w.positions)
        .arg(w.input, w.predicted, w.target);
}

QString grid_note(const HistogramGrid& g) {
    return QStringLiteral(
               "Bars: share of each gradient's elements per power of two (scaled values, as the trainer "
               "takes them); background: %1 zones; strips: FP16, BF16, FP8.")
        .arg(g.reference);
}

QString pretty_json(const std::string& json) {
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json));
    return doc.isNull() ? QString::fromStdString(json)
                        : QString::fromUtf8(doc.toJson(QJsonDocument::Indented));
}

QString percent_text(std::optional<double> fraction, int decimals) {
    if (!fraction) return QStringLiteral("—");
    return QString::fromStdString(mpwb::percent_text(*fraction, decimals));
}

namespace {

const QString kTableAttributes = QStringLiteral("class=\"t\"");

// The page's head, its style sheet and the report's title line.
QString browser_head(const ReportContent& c) {
    QString h;
    h += QStringLiteral(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
    h += html_escape(c.title) + QStringLiteral("</title>\n<style>\n");
    h += QStringLiteral(
        "body{font-family:-apple-system,'Segoe UI','DejaVu Sans',Helvetica,Arial,sans-serif;color:#222;"
        "max-width:1000px;margin:24px auto;padding:0 16px;line-height:1.4;font-size:14px}\n"
        "h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd;"
        "padding-bottom:3px}\n.meta{color:#666;margin-top:0}\n"
        "table{border-collapse:collapse;margin:8px 0;font-size:13px}\n"
        "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}\n"
        "th{background:#f0f3f7}tbody tr:nth-child(even){background:#fafafa}\n"
        "td:not(:first-child){font-variant-numeric:tabular-nums}\n"
        "figure{margin:14px 0}figure img{max-width:100%;height:auto;border:1px solid #eee}\n"
        "figcaption{color:#555;font-size:12px}\n.note{color:#555;font-size:12px}\ncode{font-size:12px}\n"
        ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:6px}\n"
        ".grid figure{margin:0}.pair{display:flex;flex-wrap:wrap;gap:12px}.pair figure{margin:0}\n"
        "details{margin:6px 0}summary{cursor:pointer;font-weight:600}pre{font-size:12px;background:#f7f7f7;"
        "padding:8px;overflow-x:auto}\n"
        "@media print{h2{page-break-after:avoid}figure{page-break-inside:avoid}}\n");
    h += QStringLiteral("</style></head><body>\n");
    h += QStringLiteral("<h1>") + html_escape(c.title) + QStringLiteral("</h1>\n");
    h += QStringLiteral("<p class=\"meta\">Generated %1 by MP Workbench from %2</p>\n")
             .arg(html_escape(c.generated), html_escape(c.database));
    return h;
}

// The runs, their notes, the summary and the configuration differences.
QString browser_tables(const ReportContent& c) {
    QString h;
    h += QStringLiteral("<h2>Runs</h2>\n") + table_html(runs_table(c), kTableAttributes);
    h += QStringLiteral("<h3>Tags and notes</h3>\n") + table_html(notes_table(c), kTableAttributes);
    h += QStringLiteral("<h2>Summary</h2>\n") + table_html(summary_table(c), kTableAttributes);
    h += QStringLiteral("<p class=\"note\">") + html_escape(target_note(c)) + QStringLiteral("</p>\n");
    h += QStringLiteral("<h2>Configuration differences</h2>\n");
    if (c.rows.size() < 2)
        h += QStringLiteral("<p>One run: nothing to compare.</p>\n");
    else if (c.diff.empty())
        h += QStringLiteral("<p>The runs have the same configuration.</p>\n");
    else
        h += table_html(diff_table(c), kTableAttributes);
    return h;
}

// Each figure as an inline PNG with its caption.
QString figures_html(const std::vector<Figure>& list) {
    QString h;
    for (const Figure& f : list) {
        h += QStringLiteral("<figure><img alt=\"%1\" width=\"%2\" height=\"%3\" src=\"data:image/png;base64,")
                 .arg(html_escape(f.title))
                 .arg(f.width)
                 .arg(f.height);
        h += QString::fromLatin1(f.png.toBase64());
        h += QStringLiteral("\"><figcaption><b>%1.</b> %2</figcaption></figure>\n")
                 .arg(html_escape(f.title), html_escape(f.caption));
    }
    return h;
}

// A run's precision per GEMM (when it stored one) and its advisor (when it has what-if columns).
QString browser_precision_html(const ScalingSection& section) {
    QString h;
    if (!section.gemm_precisions.isEmpty())
        h += QStringLiteral("<h4>Precision per GEMM</h4>\n<p class=\"note\">") +
             html_escape(kGemmPrecisionNote) + QStringLiteral("</p>\n") +
             table_html(gemm_precision_table(section), kTableAttributes);
    if (section.advisor.columns.size() > 1)
        h += QStringLiteral("<h4>Recipe advisor</h4>\n<p class=\"note\">") + html_escape(kAdvisorNote) +
             QStringLiteral("</p>\n") + table_html(advisor_table(section.advisor), kTableAttributes);
    return h;
}

// The curves, decision boundaries, gradient histograms and scaling figures.
QString browser_figures(const ReportContent& c) {
    QString h;
    h += QStringLiteral("<h2>Training curves</h2>\n");
    h += QStringLiteral("<p class=\"note smoothing\">") +
         html_escape(QString::fromStdString(smoothing_statement(c.smoothing))) + QStringLiteral("</p>\n");
    if (c.curves.empty()) h += QStringLiteral("<p>No metrics stored.</p>\n");
    h += figures_html(c.curves);
    for (const TextSamples& s : c.text_samples) {
        h += QStringLiteral("<h2>Text samples · %1</h2>\n").arg(html_escape(s.run_label));
        if (!s.error.isEmpty()) h += QStringLiteral("<p>") + html_escape(s.error) + QStringLiteral("</p>\n");
        if (s.shown.empty()) continue;
        h += QStringLiteral("<p class=\"note\">") + html_escape(text_samples_note(s)) +
             QStringLiteral("</p>\n");
        for (const TextSample& sample : s.shown) h += text_sample_html(sample) + QLatin1Char('\n');
    }
    for (const TextSamples& s : c.text_samples) {
        h += QStringLiteral("<h2>Test windows · %1</h2>\n").arg(html_escape(s.run_label));
        if (!s.windows_error.isEmpty())
            h += QStringLiteral("<p>") + html_escape(s.windows_error) + QStringLiteral("</p>\n");
        if (s.windows.empty()) continue;
        h += QStringLiteral("<p class=\"note\">") + html_escape(test_windows_note(s)) +
             QStringLiteral("</p>\n");
        for (const TestWindow& w : s.windows) h += test_window_html(w) + QLatin1Char('\n');
    }
    if (!c.boundaries.empty())
        h += QStringLiteral("<h2>Decision boundaries</h2>\n<div class=\"pair\">") +
             figures_html(c.boundaries) + QStringLiteral("</div>\n");
    h += QStringLiteral("<h2>Gradient exponent histograms</h2>\n");
    if (c.gradient_grids.empty())
        h += QStringLiteral("<p>No gradient statistics stored (train with statistics every K steps).</p>\n");
    for (const HistogramGrid& g : c.gradient_grids) {
        h += QStringLiteral(
                 "<h3>%1 · every layer at step %2</h3>\n<p class=\"note\">%3</p>\n<div class=\"grid\">")
                 .arg(html_escape(g.run_label))
                 .arg(g.step)
                 .arg(html_escape(grid_note(g)));
        h += figures_html(g.cells) + QStringLiteral("</div>\n");
    }
    h += figures_html(c.histograms);
    if (!c.scaling.empty()) {
        h += QStringLiteral("<h2>Scaling</h2>\n<p class=\"note\">") + html_escape(kScalingNote) +
             QStringLiteral("</p>\n");
        for (const ScalingSection& section : c.scaling) {
            h += QStringLiteral("<h3>") + html_escape(section.run_label) + QStringLiteral("</h3>\n");
            h += browser_precision_html(section);
            if (!section.summary.empty()) h += table_html(sqnr_table(section.summary), kTableAttributes);
            h += figures_html(section.figures);
            if (!section.what_if_summary.empty())
                h += QStringLiteral("<h4>What-if recipes</h4>\n<p class=\"note\">") +
                     html_escape(kWhatIfNote) + QStringLiteral("</p>\n") +
                     table_html(sqnr_table(section.what_if_summary), kTableAttributes);
        }
    }
    if (!c.stability.latest.empty()) {
        h += QStringLiteral("<h2>Stability</h2>\n<p class=\"note\">") + html_escape(kStabilityNote) +
             QStringLiteral("</p>\n");
        h += table_html(stability_table(c.stability), kTableAttributes) + figures_html(c.stability.figures);
    }
    return h;
}

// The architectures, events, configurations and the machine.
QString browser_details(const ReportContent& c) {
    QString h;
    h += QStringLiteral("<h2>Network architecture</h2>\n");
    for (const Architecture& a : c.architectures) {
        h += QStringLiteral("<h3>") + architecture_heading(a) + QStringLiteral("</h3>\n");
        h += a.error.isEmpty() ? table_html(architecture_table(a), kTableAttributes)
                               : QStringLiteral("<p>") + html_escape(a.error) + QStringLiteral("</p>\n");
    }
    h += QStringLiteral("<h2>Events</h2>\n");
    for (const RunEvents& e : c.events) {
        h += QStringLiteral("<h3>") + html_escape(e.run_label) + QStringLiteral("</h3>\n");
        h += e.shown.empty() ? QStringLiteral("<p>No events.</p>\n")
                             : table_html(events_table(e), kTableAttributes);
    }
    h += QStringLiteral("<h2>Configuration</h2>\n");
    for (const auto& row : c.rows) {
        h += QStringLiteral("<details><summary>%1</summary><pre>").arg(html_escape(row.label));
        h += html_escape(pretty_json(row.run.config_json)) + QStringLiteral("</pre></details>\n");
    }
    h += QStringLiteral("<h2>Machine and versions</h2>\n") + table_html(machine_table(c), kTableAttributes);
    return h;
}

}  // namespace

QString to_browser_html(const ReportContent& c) {
    return browser_head(c) + browser_tables(c) + browser_figures(c) + browser_details(c) +
           QStringLiteral("</body></html>\n");
}

}  // namespace mpwb::report_detail
