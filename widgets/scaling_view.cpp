// ScalingView: the selectors, the four plots and the empty state of the Scaling tab.
#include "widgets/scaling_view.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QStackedWidget>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "core/common/text_format.h"
#include "widgets/advisor_view.h"
#include "widgets/plots/heatmap_plot.h"
#include "widgets/plots/plot_widget.h"
#include "widgets/plots/series_plot.h"

namespace mpwb {

namespace {

// ScalingStats stores an exact quantization (no error at all) as this SQNR.
constexpr double kExactSqnr = 999;
const QColor kAmaxColor(0x1f, 0x77, 0xb4);
const QColor kScaleColor(0xd6, 0x27, 0x28);

PlotWidget* make_plot(const char* name, const QString& title, const QString& y_label) {
    auto* p = new PlotWidget;
    p->setObjectName(QString::fromLatin1(name));
    p->setMinimumSize(240, 120);  // two rows fit a 1366x768 screen
    p->plotLayout()->insertRow(0);
    p->plotLayout()->addElement(0, 0,
                                new QCPTextElement(p, title, QFont(p->font().family(), 10, QFont::Bold)));
    p->xAxis->setLabel(QObject::tr("step"));
    p->yAxis->setLabel(y_label);
    return p;
}

QCPGraph* add_line(PlotWidget* p, const QString& name, const QColor& color) {
    QCPGraph* g = p->addGraph();
    g->setName(name);
    g->setPen(QPen(color, 1.6));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
    return g;
}

QString percent_label(double fraction) { return QString::fromStdString(percent_text(fraction, 3)); }

// Layer labels start with their index: order numerically ("10 Linear" after "9 ReLU"); a
// transformer block's named GEMMs ("3.attn.qkv") follow their layer's index, then by name.
bool layer_before(const QString& a, const QString& b) {
    const auto index = [](const QString& label) {
        return label.section(QLatin1Char(' '), 0, 0).section(QLatin1Char('.'), 0, 0).toInt();
    };
    const int ia = index(a), ib = index(b);
    return ia != ib ? ia < ib : a < b;
}

}  // namespace

ExponentHistogram block_exponent_histogram(const ScalingStats& s) {
    ExponentHistogram h;
    for (size_t i = 0; i < s.block_exponent_counts.size(); ++i) {
        const int e = s.block_exponent_min + static_cast<int>(i);
        if (e < ExponentHistogram::kMinExponent || e > ExponentHistogram::kMaxExponent) continue;
        h.bins[static_cast<size_t>(e - ExponentHistogram::kMinExponent)] +=
            static_cast<uint64_t>(std::max<int64_t>(0, s.block_exponent_counts[i]));
    }
    return h;
}

ScalingView::ScalingView(QWidget* parent) : QWidget(parent) {
    auto* plots = new QWidget;
    auto* v = new QVBoxLayout(plots);
    v->setContentsMargins(0, 0, 0, 0);
    v->addLayout(buildSelectorBar());
    v->addLayout(buildPlotGrid(), 1);
    advisor_ = new AdvisorView;
    advisor_->setObjectName(QStringLiteral("advisorView"));
    pages_ = new QTabWidget;
    pages_->setObjectName(QStringLiteral("scalingPages"));
    pages_->setDocumentMode(true);
    pages_->addTab(plots, tr("Plots"));
    pages_->addTab(advisor_, tr("Advisor: GEMMs × recipes"));
    connect(pages_, &QTabWidget::currentChanged, this, [this] { advisor_->refresh(); });
    empty_ = new QLabel;
    empty_->setObjectName(QStringLiteral("scalingEmpty"));
    empty_->setAlignment(Qt::AlignCenter);
    empty_->setWordWrap(true);
    stack_ = new QStackedWidget;
    stack_->addWidget(empty_);
    stack_->addWidget(pages_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(stack_);

    auto reselect = [this] {
        if (updating_) return;
        refreshSelectors();
        rebuildPlots();
    };
    connect(layer_, &QComboBox::currentIndexChanged, this, reselect);
    connect(operand_, &QComboBox::currentIndexChanged, this, reselect);
    clear();
}

QHBoxLayout* ScalingView::buildSelectorBar() {
    layer_ = new QComboBox;
    layer_->setObjectName(QStringLiteral("scalingLayer"));
    layer_->setMinimumContentsLength(12);
    operand_ = new QComboBox;
    operand_->setObjectName(QStringLiteral("scalingOperand"));
    operand_->setMinimumContentsLength(10);
    readout_ = new QLabel;
    readout_->setObjectName(QStringLiteral("scalingReadout"));
    // Wraps rather than widening the window: the line is longer than a 1366-pixel screen allows
    // next to the docks.
    readout_->setWordWrap(true);
    readout_->setMinimumWidth(120);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Layer")));
    bar->addWidget(layer_);
    bar->addWidget(new QLabel(tr("Operand")));
    bar->addWidget(operand_);
    bar->addSpacing(12);
    bar->addWidget(readout_, 1);
    return bar;
}

QGridLayout* ScalingView::buildPlotGrid() {
    amax_ = make_plot("scalingAmaxPlot", tr("amax and scale"), tr("amax, scale (log₂ axis)"));
    amax_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    amax_->yAxis->setTicker(make_pow2_ticker());
    add_line(amax_, tr("amax (before quantization)"), kAmaxColor);
    add_line(amax_, tr("scale used"), kScaleColor);
    // The legend in a row of its own under the title: inside the axis rect it would cover the
    // lines wherever they run.
    amax_->legend->setVisible(true);
    amax_->legend->setFillOrder(QCPLegend::foColumnsFirst);
    amax_->axisRect()->insetLayout()->take(amax_->legend);
    amax_->plotLayout()->insertRow(1);
    amax_->plotLayout()->addElement(1, 0, amax_->legend);
    amax_->plotLayout()->setRowStretchFactor(1, 0.001);
    amax_->legend->setMargins(QMargins(4, 1, 4, 1));
    sqnr_ = make_plot("scalingSqnrPlot", tr("quantization SQNR"), tr("SQNR (dB)"));
    add_line(sqnr_, tr("SQNR"), QColor(0x2c, 0xa0, 0x2c));
    block_hist_ = make_plot("scalingBlockHistogram", tr("block-scale exponents, latest"), tr("blocks"));
    block_hist_->xAxis->setLabel(tr("log₂ block scale"));
    block_bars_ = new QCPBars(block_hist_->xAxis, block_hist_->yAxis);
    block_bars_->setWidth(0.9);
    block_bars_->setBrush(QColor(0x2b, 0x4c, 0x7e));
    block_bars_->setPen(QPen(QColor(0x22, 0x33, 0x55)));
    heatmap_ = new HeatmapPlot;
    heatmap_->setObjectName(QStringLiteral("scalingHeatmap"));
    heatmap_->setMinimumSize(240, 120);  // two rows fit a 1366x768 screen
    heatmap_->setBoundaryFormats({});
    heatmap_->yAxis->setLabel(tr("log₂ block scale"));
    heatmap_->setTitle(tr("block-scale exponents over steps"));

    block_row_ = new QWidget;
    auto* blocks = new QHBoxLayout(block_row_);
    blocks->setContentsMargins(0, 0, 0, 0);
    blocks->addWidget(block_hist_);
    blocks->addWidget(heatmap_);
    block_note_ =
        new QLabel(tr("Block-scale plots appear for the block recipes (fp8-block, mxfp8, nvfp4, mxfp4)."));
    block_note_->setObjectName(QStringLiteral("scalingBlockNote"));
    block_note_->hide();
    auto* grid = new QGridLayout;
    grid->setSpacing(4);
    grid->addWidget(amax_, 0, 0);
    grid->addWidget(sqnr_, 0, 1);
    grid->addWidget(block_row_, 1, 0, 1, 2);
    grid->addWidget(block_note_, 2, 0, 1, 2);
    grid->setRowStretch(0, 1);
    grid->setRowStretch(1, 1);
    return grid;
}

void ScalingView::clear() {
    records_.clear();
    advisor_->clear();
    updating_ = true;
    layer_->clear();
    operand_->clear();
    updating_ = false;
    selectors_dirty_ = false;
    setEmptyText(
        tr("Choose a scaled precision (fp8-delayed, fp8-current, fp8-block, mxfp8, nvfp4, mxfp4) in the "
           "Precision panel and train to see the scales."));
    rebuildPlots();
}

void ScalingView::setEmptyText(const QString& text) {
    empty_->setText(text);
    stack_->setCurrentIndex(records_.empty() && advisor_->table().empty() ? 0 : 1);
}

QString ScalingView::emptyText() const { return empty_->text(); }

bool ScalingView::showsPlots() const { return stack_->currentIndex() == 1; }

void ScalingView::appendRecords(const std::vector<ScalingStatsRecord>& records) {
    advisor_->appendRecords(records);
    for (const auto& r : records) {
        if (r.stats.what_if) continue;  // the advisor's: the plots show what the run did
        auto& list =
            records_[{QString::fromStdString(r.layer_label), QString::fromStdString(r.stats.operand)}];
        if (list.empty()) selectors_dirty_ = true;
        list.push_back(r);
    }
    if (!records.empty()) stack_->setCurrentIndex(1);
}

void ScalingView::refresh() {
    advisor_->refresh();
    // A run with what-if statistics only (its own GEMMs unquantized) has nothing to plot.
    if (records_.empty() && !advisor_->table().empty()) pages_->setCurrentWidget(advisor_);
    if (selectors_dirty_) {
        selectors_dirty_ = false;
        const auto* before = selected();
        refreshSelectors();
        if (selected() != before) {
            rebuildPlots();
            return;
        }
    }
    const auto* list = selected();
    if (list && drawn_ < list->size()) appendToPlots(drawn_);
}

void ScalingView::refreshSelectors() {
    updating_ = true;
    const QString layer = layer_->currentText(), operand = operand_->currentText();
    QStringList layers;
    for (const auto& [key, list] : records_)
        if (!layers.contains(key.first)) layers << key.first;
    std::sort(layers.begin(), layers.end(), layer_before);
    const QString chosen = layers.contains(layer) ? layer : (layers.isEmpty() ? QString() : layers.front());
    QStringList operands;  // in the order the quantizer reports them: x, w, dy, then the second copies
    for (const auto& [key, list] : records_)
        if (key.first == chosen) operands << key.second;
    std::sort(operands.begin(), operands.end(), [](const QString& a, const QString& b) {
        static const QStringList order = {"x", "w", "dy"};
        const auto rank = [](const QString& s) {
            const int i = order.indexOf(s.section(QLatin1Char(' '), 0, 0));
            return (i < 0 ? 3 : i) + (s.contains(QLatin1Char(' ')) ? 4 : 0);
        };
        return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
    });
    if (layer_->count() != layers.size() || layer_->currentText() != chosen) {
        layer_->clear();
        layer_->addItems(layers);
        layer_->setCurrentText(chosen);
    }
    // First shown: the output gradient, whose range drifts most over training (what E4M3 or an
    // unscaled FP8 loses first); then the first operand there is.
    const QString op = operands.contains(operand)                ? operand
                       : operands.contains(QStringLiteral("dy")) ? QStringLiteral("dy")
                       : operands.isEmpty()                      ? QString()
                                                                 : operands.front();
    operand_->clear();
    operand_->addItems(operands);
    operand_->setCurrentText(op);
    updating_ = false;
}

const std::vector<ScalingStatsRecord>* ScalingView::selected() const {
    const auto it = records_.find({layer_->currentText(), operand_->currentText()});
    return it == records_.end() ? nullptr : &it->second;
}

std::vector<ScalingStatsRecord> ScalingView::series(const QString& layer, const QString& operand) const {
    const auto it = records_.find({layer, operand});
    return it == records_.end() ? std::vector<ScalingStatsRecord>{} : it->second;
}

const ScalingStatsRecord* ScalingView::latest(const QString& layer, const QString& operand) const {
    const auto it = records_.find({layer, operand});
    return it == records_.end() || it->second.empty() ? nullptr : &it->second.back();
}

void ScalingView::rebuildPlots() {
    for (PlotWidget* p : {amax_, sqnr_})
        for (int i = 0; i < p->graphCount(); ++i) p->graph(i)->data()->clear();
    block_bars_->data()->clear();
    heatmap_->clear();
    heatmap_->setBoundaryFormats({});
    drawn_ = 0;
    readout_->clear();
    appendToPlots(0);
}

// Appends the selected series' records from `from` on, and shows the newest one's numbers.
void ScalingView::appendToPlots(size_t from) {
    const auto* list = selected();
    if (list && from < list->size()) {
        for (size_t i = from; i < list->size(); ++i) {
            const ScalingStatsRecord& r = (*list)[i];
            const double step = static_cast<double>(r.step);
            // A log axis has no place for 0: a zero amax (an all-zero tensor) or a block
            // recipe's absent per-tensor scale leaves a gap.
            if (r.stats.amax > 0 && std::isfinite(r.stats.amax)) amax_->graph(0)->addData(step, r.stats.amax);
            if (r.stats.scale > 0 && std::isfinite(r.stats.scale))
                amax_->graph(1)->addData(step, r.stats.scale);
            if (r.stats.sqnr_db < kExactSqnr && std::isfinite(r.stats.sqnr_db))
                sqnr_->graph(0)->addData(step, r.stats.sqnr_db);
            if (r.stats.blocks > 0) heatmap_->addColumn(r.step, block_exponent_histogram(r.stats));
        }
        drawn_ = list->size();
        const ScalingStatsRecord& last = list->back();
        const bool block = last.stats.blocks > 0;
        block_row_->setVisible(block);
        block_note_->setVisible(!block);
        if (block) showBlockHistogram(last.stats, last.step);
        QString text =
            tr("step %1 · %2 · amax %3 · underflow %4 · saturate %5 · SQNR %6 dB")
                .arg(last.step)
                .arg(QString::fromStdString(format_name(last.stats.element)).toUpper())
                .arg(double(last.stats.amax), 0, 'g', 4)
                .arg(percent_label(last.stats.underflow_fraction),
                     percent_label(last.stats.saturate_fraction))
                .arg(last.stats.sqnr_db >= kExactSqnr ? tr("∞")
                                                      : QString::number(last.stats.sqnr_db, 'f', 1));
        if (block)
            text += tr(" · clipped blocks %1 of %2").arg(last.stats.clipped_blocks).arg(last.stats.blocks);
        // nvfp4's 4 over 6 (stored since schema 9).
        if (last.stats.blocks_scaled_to_4 > 0)
            text += tr(" · scaled to 4: %1 of %2").arg(last.stats.blocks_scaled_to_4).arg(last.stats.blocks);
        readout_->setText(text);
    }
    for (PlotWidget* p : {amax_, sqnr_}) {
        p->rescaleAxes();
        p->xAxis->scaleRange(1.05);
        p->requestReplot();
    }
    fitAmaxAxis();
    heatmap_->requestReplot();
}

// The log axis spans the amax and scale values with a power of two to spare on each side (a
// constant series would otherwise get a degenerate range); the SQNR axis a margin of 15%.
void ScalingView::fitAmaxAxis() {
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < amax_->graphCount(); ++i)
        for (auto it = amax_->graph(i)->data()->constBegin(); it != amax_->graph(i)->data()->constEnd();
             ++it) {
            lo = std::min(lo, it->value);
            hi = std::max(hi, it->value);
        }
    if (hi > 0)
        amax_->yAxis->setRange(std::exp2(std::floor(std::log2(lo)) - 1),
                               std::exp2(std::ceil(std::log2(hi)) + 1));
    sqnr_->yAxis->scaleRange(1.15);
}

void ScalingView::showBlockHistogram(const ScalingStats& s, int64_t step) {
    QVector<double> keys, values;
    double top = 0;
    for (size_t i = 0; i < s.block_exponent_counts.size(); ++i) {
        if (s.block_exponent_counts[i] == 0) continue;
        keys.append(s.block_exponent_min + static_cast<int>(i));
        values.append(static_cast<double>(s.block_exponent_counts[i]));
        top = std::max(top, values.back());
    }
    block_bars_->setData(keys, values, true);
    if (!keys.isEmpty()) block_hist_->xAxis->setRange(keys.front() - 1.5, keys.back() + 1.5);
    block_hist_->yAxis->setRange(0, top > 0 ? top * 1.15 : 1);
    if (auto* title = qobject_cast<QCPTextElement*>(block_hist_->plotLayout()->element(0, 0)))
        title->setText(tr("block-scale exponents at step %1").arg(step));
    block_hist_->requestReplot();
}

}  // namespace mpwb
