// The scaling section of a report: per run of a scaled recipe, the SQNR table's data
// (summarize_scaling) and three kinds of plot drawn with QCustomPlot, offscreen like the others.
#include "app/report/report_scaling.h"

#include "core/numeric/format.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace mpwb::report_detail {
namespace {

// One colour per layer (the Tableau 10 palette the decision-boundary plot uses too).
QColor layer_color(std::size_t index) {
    static const QColor colors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                    QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                    QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                    QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
                                    QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};
    return colors[index % std::size(colors)];
}

// "x (wgrad)" -> "x": the tensor a block recipe's second copy quantizes.
std::string base_operand(const std::string& operand) { return operand.substr(0, operand.find(' ')); }

// x solid, w dashed, dy dotted; a block recipe's second copy ("dy (wgrad)") as its tensor.
Qt::PenStyle operand_style(const std::string& operand) {
    const std::string base = base_operand(operand);
    if (base == "x") return Qt::SolidLine;
    if (base == "w") return Qt::DashLine;
    if (base == "dy") return Qt::DotLine;
    return Qt::DashDotLine;
}

void style_plot(QCustomPlot& plot, const QString& x_label, const QString& y_label, bool log_y) {
    plot.xAxis->setLabel(x_label);
    plot.yAxis->setLabel(y_label);
    if (log_y) {
        plot.yAxis->setScaleType(QCPAxis::stLogarithmic);
        plot.yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
        plot.yAxis->setNumberFormat(QStringLiteral("eb"));
        plot.yAxis->setNumberPrecision(0);
    }
    plot.legend->setVisible(true);
    plot.legend->setFont(QFont(QStringLiteral("DejaVu Sans"), 7));
    plot.legend->setRowSpacing(-3);
    // Beside the axes, not over them: one entry per layer and operand would hide the lines.
    // The legend sits at the top of its column, a spacer under it takes the rest of the height.
    plot.axisRect()->insetLayout()->take(plot.legend);
    auto* column = new QCPLayoutGrid;
    plot.plotLayout()->addElement(0, 1, column);
    plot.plotLayout()->setColumnStretchFactor(1, 0.001);
    column->addElement(0, 0, plot.legend);
    column->addElement(1, 0, new QCPLayoutElement(&plot));
    column->setRowStretchFactor(0, 0.001);
    plot.legend->setMargins(QMargins(4, 2, 4, 2));
    plot.setBackground(Qt::white);
}

// A line: (layer, GEMM label, operand). The label tells a transformer block's named GEMMs apart
// ("3.attn.qkv", "3.mlp.fc1"); a layer with one GEMM has one label.
using SeriesKey = std::tuple<std::size_t, std::string, std::string>;
using Series = std::map<SeriesKey, std::pair<QVector<double>, QVector<double>>>;

// One line per (layer, tensor) over steps of value(stats); values that are not positive and
// finite are left out (they cannot be drawn on a log axis). Empty when no line has a point.
Series series_of(const std::vector<ScalingStatsRecord>& records, float (*value)(const ScalingStats&)) {
    // A block recipe's second copy quantizes the same tensor as the first, so its amax repeats
    // the first's: drawn only where the layer has no first copy (the first layer's dy exists
    // only as "dy (wgrad)": no data gradient is computed for the network's input).
    std::set<SeriesKey> first_copies;
    for (const auto& r : records)
        if (base_operand(r.stats.operand) == r.stats.operand)
            first_copies.insert({r.layer, r.layer_label, r.stats.operand});
    Series out;
    for (const auto& r : records) {
        const std::string base = base_operand(r.stats.operand);
        if (base != r.stats.operand && first_copies.count({r.layer, r.layer_label, base})) continue;
        const double v = value(r.stats);
        if (!(v > 0) || !std::isfinite(v)) continue;
        auto& [xs, ys] = out[{r.layer, r.layer_label, r.stats.operand}];
        xs << static_cast<double>(r.step);
        ys << v;
    }
    return out;
}

std::map<std::size_t, std::string> layer_labels(const std::vector<ScalingStatsRecord>& records) {
    std::map<std::size_t, std::string> labels;
    for (const auto& r : records) labels[r.layer] = r.layer_label;
    return labels;
}

std::optional<Figure> over_steps_figure(const Series& series,
                                        const std::map<std::size_t, std::string>& labels,
                                        const QString& title, const QString& y_label, const QString& caption,
                                        int width) {
    if (series.empty()) return std::nullopt;
    QCustomPlot plot;
    style_plot(plot, QStringLiteral("step"), y_label, true);
    std::map<std::size_t, std::size_t> rank;  // layers coloured in order: blue, orange, green, ...
    for (const auto& [layer, label] : labels) rank.emplace(layer, rank.size());
    for (const auto& [key, points] : series) {
        QCPGraph* g = plot.addGraph();
        const auto& [layer, label, operand] = key;
        g->setPen(QPen(layer_color(rank.at(layer)), 1.6, operand_style(operand)));
        g->setName(QString::fromStdString(label + " · " + operand));
        g->setData(points.first, points.second, true);
        if (points.first.size() == 1) g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
    }
    plot.rescaleAxes();
    plot.yAxis->scaleRange(1.3, plot.yAxis->range().center());
    return render_plot(&plot, title, caption, width, 360);
}

// Exponents with blocks, over every graph of plot, sorted.
std::vector<double> populated_exponents(QCustomPlot& plot) {
    std::vector<double> out;
    for (int i = 0; i < plot.graphCount(); ++i)
        for (auto it = plot.graph(i)->data()->constBegin(); it != plot.graph(i)->data()->constEnd(); ++it)
            if (it->value > 0) out.push_back(it->key);
    std::sort(out.begin(), out.end());
    return out;
}

// Where the x axis starts when the populated exponents fall into two clusters more than
// kFarGap binades apart (all-zero blocks sit at the scale format's smallest exponent, which
// would squeeze the real distribution into a sliver): the first exponent of the upper cluster.
// -infinity when there is no such gap.
constexpr double kFarGap = 16;
double lower_cluster_cut(QCustomPlot& plot) {
    const auto exps = populated_exponents(plot);
    double cut = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 1; i < exps.size(); ++i)
        if (exps[i] - exps[i - 1] > kFarGap) cut = exps[i];
    return cut;
}

// "dy (wgrad) 35.2%, w (dgrad) 58.0%": each graph's share of blocks below exponent cut.
QString share_below(QCustomPlot& plot, double cut) {
    QStringList parts;
    for (int i = 0; i < plot.graphCount(); ++i) {
        double share = 0;
        for (auto it = plot.graph(i)->data()->constBegin(); it != plot.graph(i)->data()->constEnd(); ++it)
            if (it->key < cut) share += it->value;
        if (share > 0)
            parts << plot.graph(i)->name() + QStringLiteral(" ") + QString::number(100 * share, 'f', 1) + '%';
    }
    return parts.join(QStringLiteral(", "));
}

// The block-scale exponent histograms of one layer at the run's last statistics step: the
// share of blocks per power of two, one stepped line per operand copy.
std::optional<Figure> block_histogram_figure(const std::vector<ScalingStatsRecord>& records,
                                             std::size_t layer, const QString& run_label, int width) {
    std::int64_t last_step = -1;
    for (const auto& r : records)
        if (r.layer == layer && !r.stats.block_exponent_counts.empty())
            last_step = std::max(last_step, r.step);
    if (last_step < 0) return std::nullopt;
    QCustomPlot plot;
    style_plot(plot, QStringLiteral("block-scale exponent k (scale = 2^k)"),
               QStringLiteral("share of blocks"), false);
    auto whole_numbers = QSharedPointer<QCPAxisTickerFixed>(new QCPAxisTickerFixed);
    whole_numbers->setTickStep(1);
    whole_numbers->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    plot.xAxis->setTicker(whole_numbers);
    std::string label;
    int index = 0;
    for (const auto& r : records) {
        if (r.layer != layer || r.step != last_step || r.stats.block_exponent_counts.empty()) continue;
        label = r.layer_label;
        double total = 0;
        for (const auto c : r.stats.block_exponent_counts) total += static_cast<double>(c);
        if (total <= 0) continue;
        QVector<double> xs, ys;
        for (std::size_t i = 0; i < r.stats.block_exponent_counts.size(); ++i) {
            xs << r.stats.block_exponent_min + static_cast<double>(i);
            ys << static_cast<double>(r.stats.block_exponent_counts[i]) / total;
        }
        QCPGraph* g = plot.addGraph();
        g->setPen(QPen(layer_color(static_cast<std::size_t>(index++)), 1.6));
        g->setLineStyle(QCPGraph::lsStepCenter);
        g->setName(QString::fromStdString(r.stats.operand + " (" + format_name(r.stats.element) + ")"));
        g->setData(xs, ys, true);
    }
    if (index == 0) return std::nullopt;
    plot.rescaleAxes();
    const double cut = lower_cluster_cut(plot);
    plot.xAxis->setRange(std::max(plot.xAxis->range().lower, cut) - 1, plot.xAxis->range().upper + 1);
    plot.yAxis->setRange(0, plot.yAxis->range().upper * 1.1);
    const QString title = QStringLiteral("%1 · layer %2 · block scales at step %3")
                              .arg(run_label, QString::fromStdString(label))
                              .arg(last_step);
    QString caption = QStringLiteral(
        "Share of the blocks whose scale is 2^k, per quantized copy of each operand (block recipes "
        "scale every block on its own).");
    if (cut > -std::numeric_limits<double>::infinity())
        caption += QStringLiteral(
                       " Left of the axis, far below the rest: blocks with scales under 2^%1 (a block "
                       "of zeros gets the scale format's smallest): %2.")
                       .arg(cut)
                       .arg(share_below(plot, cut));
    return render_plot(&plot, title, caption, width, 300);
}

float amax_of(const ScalingStats& s) { return s.amax; }
float scale_of(const ScalingStats& s) { return s.scale; }

// The plots over steps each scaled run gets: what is drawn, and the caption.
struct OverStepsPlot {
    const char* what;
    float (*value)(const ScalingStats&);
    const char* caption;
};
constexpr OverStepsPlot kOverStepsPlots[] = {
    {"amax", amax_of,
     "Largest magnitude of each quantized operand before quantization, per statistics step. Solid: x "
     "(input), "
     "dashed: w (weight), dotted: dy (output gradient)."},
    {"scale", scale_of,
     "The per-tensor scale used (q = x · scale; nvfp4: the FP32 tensor scale). Block recipes without one are "
     "not drawn."},
};

// The "gemm_precisions" event's entries as {gemm, fprop, dgrad, wgrad}; a malformed entry is
// left out (the report only displays it).
QList<QStringList> gemm_precision_rows(RunStore& store, std::int64_t run_id) {
    QList<QStringList> rows;
    const auto events = store.events(run_id, "gemm_precisions");
    if (events.empty()) return rows;
    const nlohmann::json stored = nlohmann::json::parse(events.front().json, nullptr, false);
    if (!stored.is_object() || !stored.contains("detail") || !stored["detail"].is_array()) return rows;
    for (const auto& g : stored["detail"]) {
        if (!g.is_object()) continue;
        QStringList row;
        for (const char* key : {"gemm", "fprop", "dgrad", "wgrad"}) {
            const auto it = g.find(key);
            row << QString::fromStdString(it != g.end() && it->is_string() ? it->get<std::string>() : "?");
        }
        rows << row;
    }
    return rows;
}

}  // namespace

std::vector<ScalingSection> scaling_sections(RunStore& store, const std::vector<RunRow>& rows, int width) {
    std::vector<ScalingSection> sections;
    for (const RunRow& row : rows) {
        const auto all = store.scaling_stats(row.run.id);
        const QList<QStringList> precisions = gemm_precision_rows(store, row.run.id);
        if (all.empty() && precisions.isEmpty()) continue;
        // The plots draw what the run's GEMMs used; what-if recipes are in the summary and the advisor.
        std::vector<ScalingStatsRecord> records;
        std::copy_if(all.begin(), all.end(), std::back_inserter(records),
                     [](const ScalingStatsRecord& r) { return !r.stats.what_if; });
        ScalingSection section;
        section.run_label = row.label;
        for (ScalingSummaryRow& r : summarize_scaling(all))
            (r.what_if ? section.what_if_summary : section.summary).push_back(std::move(r));
        section.gemm_precisions = precisions;
        section.advisor = recipe_advisor(all);
        const auto labels = layer_labels(records);
        for (const OverStepsPlot& p : kOverStepsPlots)
            if (auto f = over_steps_figure(
                    series_of(records, p.value), labels,
                    row.label + QStringLiteral(" · ") + QLatin1String(p.what) + QStringLiteral(" per layer"),
                    QLatin1String(p.what), QString::fromUtf8(p.caption), width))
                section.figures.push_back(*f);
        for (const auto& [layer, label] : labels)
            if (auto f = block_histogram_figure(records, layer, row.label, width))
                section.figures.push_back(*f);
        sections.push_back(std::move(section));
    }
    return sections;
}

}  // namespace mpwb::report_detail
