// StabilityView: the Stability tab's plots of the instability indicators (see stability_view.h).
#include "widgets/plots/stability_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <cstring>

#include "widgets/plots/plot_widget.h"
#include "widgets/plots/stability_plots.h"

namespace mpwb {
namespace {

constexpr int kPlotMinHeight = 230;  // readable at 1366x768 (two rows on screen, the rest scrolls)
constexpr int kColumns = 2;

// A categorical palette (Tableau 10): a colour per run and block.
const QColor kPalette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                           QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                           QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                           QColor(0x17, 0xbe, 0xcf)};

// The plot (index into kStabilityPlots) and line style of an indicator; -1 for none.
int family_of(const std::string& indicator, bool* dashed) {
    for (size_t i = 0; i < std::size(kStabilityPlots); ++i) {
        const StabilityPlotSpec& s = kStabilityPlots[i];
        if (indicator == s.solid || (s.dashed && indicator == s.dashed)) {
            *dashed = s.dashed && indicator == s.dashed;
            return static_cast<int>(i);
        }
    }
    return -1;
}

// "1 TransformerBlock" -> "block 1"; "output" stays.
QString short_source(const std::string& source) {
    const auto space = source.find(' ');
    if (source == metric_key::stability_output || space == std::string::npos)
        return QString::fromStdString(source);
    return QStringLiteral("block %1").arg(QString::fromStdString(source.substr(0, space)));
}

PlotWidget* make_plot(const StabilityPlotSpec& spec) {
    auto* p = new PlotWidget;
    p->setObjectName(QString::fromLatin1(spec.object_name));
    p->setMinimumHeight(kPlotMinHeight);
    p->plotLayout()->insertRow(0);
    auto* title = new QCPTextElement(p, QString::fromUtf8(spec.title));
    QFont f = title->font();
    f.setBold(true);
    title->setFont(f);
    p->plotLayout()->addElement(0, 0, title);
    p->xAxis->setLabel(QObject::tr("step"));
    p->yAxis->setLabel(QString::fromUtf8(spec.y_label));
    p->legend->setVisible(false);  // until a line has data
    QFont lf = p->legend->font();
    lf.setPointSizeF(lf.pointSizeF() * 0.85);
    p->legend->setFont(lf);
    p->legend->setIconSize(16, 8);
    p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    return p;
}

}  // namespace

const char* const StabilityView::kEmptyText =
    "Statistics steps of a transformer run fill this tab: set Stats every > 0.";

StabilityView::StabilityView(QWidget* parent) : QWidget(parent) {
    auto* grid_host = new QWidget;
    auto* grid = new QGridLayout(grid_host);
    grid->setContentsMargins(4, 4, 4, 4);
    for (size_t i = 0; i < std::size(kStabilityPlots); ++i) {
        PlotWidget* p = make_plot(kStabilityPlots[i]);
        plots_.push_back(p);
        grid->addWidget(p, static_cast<int>(i) / kColumns, static_cast<int>(i) % kColumns);
    }
    auto* scroll = new QScrollArea;
    scroll->setObjectName(QStringLiteral("stabilityScroll"));
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(grid_host);
    empty_ = new QLabel(tr(kEmptyText));
    empty_->setObjectName(QStringLiteral("stabilityEmpty"));
    empty_->setAlignment(Qt::AlignCenter);
    empty_->setWordWrap(true);
    stack_ = new QStackedWidget;
    stack_->addWidget(empty_);
    stack_->addWidget(scroll);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(stack_);
    last_refresh_.start();
    deferred_refresh_.setSingleShot(true);
    connect(&deferred_refresh_, &QTimer::timeout, this, [this] {
        if (isVisible()) refresh();  // a hidden tab refreshes when it is shown again
    });
}

int StabilityView::addRun(const QString& label) {
    runs_.push_back(label);
    if (runs_.size() == 2) renameLegends();  // a comparison: the legends name the runs
    return static_cast<int>(runs_.size()) - 1;
}

void StabilityView::clear() {
    for (PlotWidget* p : plots_) {
        p->clearGraphs();
        p->legend->setVisible(false);
        p->requestReplot();
    }
    lines_.clear();
    colour_index_.clear();
    runs_.clear();
    pending_ = false;
    deferred_refresh_.stop();
    stack_->setCurrentWidget(empty_);
}

void StabilityView::appendRecords(int run, const std::vector<StabilityRecord>& records) {
    if (run < 0 || run >= static_cast<int>(runs_.size())) return;
    for (const StabilityRecord& r : records)
        for (const StabilityValue& v : stability_values(r))
            add(run, v.source, v.indicator, static_cast<double>(r.step), v.value);
}

void StabilityView::setStoredSeries(int run, const std::vector<StabilitySeries>& series) {
    if (run < 0 || run >= static_cast<int>(runs_.size())) return;
    for (const StabilitySeries& s : series)
        for (size_t i = 0; i < s.series.steps.size(); ++i)
            add(run, s.source, s.indicator, s.series.steps[i], s.series.values[i]);
}

void StabilityView::add(int run, const std::string& source, const std::string& indicator, double step,
                        double value) {
    Line* l = line(run, source, indicator);
    if (!l) return;
    l->steps.push_back(step);
    l->values.push_back(value);
    pending_ = true;
}

StabilityView::Line* StabilityView::line(int run, const std::string& source, const std::string& indicator) {
    const auto key = std::make_tuple(run, source, indicator);
    if (auto it = lines_.find(key); it != lines_.end()) return &it->second;
    bool dashed = false;
    const int family = family_of(indicator, &dashed);
    if (family < 0) return nullptr;  // an indicator this build does not draw
    PlotWidget* p = plots_[static_cast<size_t>(family)];
    const auto colour_key = std::make_pair(run, source);
    if (!colour_index_.count(colour_key)) colour_index_[colour_key] = static_cast<int>(colour_index_.size());
    QPen pen(kPalette[colour_index_[colour_key] % static_cast<int>(std::size(kPalette))], 1.6);
    if (dashed) pen.setStyle(Qt::DashLine);
    QCPGraph* g = p->addGraph();
    g->setPen(pen);
    g->setName(legendName(run, source));
    g->setProperty("mpwb_run", run);
    g->setProperty("mpwb_source", QString::fromStdString(source));
    if (dashed) g->removeFromLegend();  // the solid line of the same colour names it
    Line& l = lines_[key];
    l.graph = g;
    return &l;
}

QString StabilityView::legendName(int run, const std::string& source) const {
    const QString shortName = short_source(source);
    if (runs_.size() < 2) return shortName;
    return runs_[static_cast<size_t>(run)] + QStringLiteral(" · ") + shortName;
}

void StabilityView::renameLegends() {
    for (auto& [key, l] : lines_) l.graph->setName(legendName(std::get<0>(key), std::get<1>(key)));
}

void StabilityView::refresh(bool force) {
    if (!pending_) return;
    const qint64 too_soon_by = kMinRefreshMs - last_refresh_.elapsed();
    if (!force && too_soon_by > 0) {
        if (!deferred_refresh_.isActive()) deferred_refresh_.start(static_cast<int>(too_soon_by));
        return;
    }
    deferred_refresh_.stop();
    last_refresh_.restart();
    std::vector<bool> touched(plots_.size(), false);
    for (auto& [key, l] : lines_) {
        if (l.steps.isEmpty()) continue;
        l.graph->addData(l.steps, l.values, true);
        l.steps.clear();
        l.values.clear();
        for (size_t i = 0; i < plots_.size(); ++i)
            if (l.graph->parentPlot() == plots_[i]) touched[i] = true;
    }
    pending_ = false;
    for (size_t i = 0; i < plots_.size(); ++i) {
        if (!touched[i]) continue;
        PlotWidget* p = plots_[i];
        p->legend->setVisible(true);
        p->rescaleAxes();
        const QCPRange y = p->yAxis->range();
        const double pad = y.size() > 0 ? y.size() * 0.06 : std::max(1e-3, std::abs(y.center()) * 0.05);
        p->yAxis->setRange(y.lower - pad, y.upper + pad);
        p->requestReplot();
    }
    stack_->setCurrentIndex(lineCount() > 0 ? 1 : 0);
}

int StabilityView::lineCount() const {
    int n = 0;
    for (const auto& [key, l] : lines_) n += l.graph->dataCount() > 0 ? 1 : 0;
    return n;
}

bool StabilityView::emptyShown() const { return stack_->currentWidget() == empty_; }

}  // namespace mpwb
