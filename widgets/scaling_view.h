// ScalingView: what a scaled recipe's quantization did to one layer's GEMM operand, over the
// steps of a run (the "Scaling" tab of the plot board). The layer and operand are chosen from
// the records received (ScalingStatsRecord, core/train/run_records.h). Plots: the amax over steps
// with the scale as a second line on a log-2 axis, the SQNR over steps, and for block recipes
// the latest block-scale exponent histogram and a heatmap of block-scale exponents over the
// steps (HeatmapPlot, like the gradient heatmap). Without records the view says what to do
// instead of showing empty axes. The plots show the run's own statistics; the "Advisor" tab
// (AdvisorView) shows every GEMM under the run's precision and each what-if recipe.
#pragma once
#include <QString>
#include <QWidget>

#include <map>
#include <vector>

#include "core/numeric/exponent_histogram.h"
#include "core/train/run_records.h"

class QComboBox;
class QGridLayout;
class QHBoxLayout;
class QCPBars;
class QLabel;
class QStackedWidget;
class QTabWidget;

namespace mpwb {

class AdvisorView;
class HeatmapPlot;
class PlotWidget;

class ScalingView : public QWidget {
    Q_OBJECT
public:
    explicit ScalingView(QWidget* parent = nullptr);

    // Records in step order (live batches or a stored run's whole list).
    void appendRecords(const std::vector<ScalingStatsRecord>& records);
    void clear();
    // What the empty view says (the run has no scaled recipe, or no statistics yet).
    void setEmptyText(const QString& text);
    QString emptyText() const;
    bool showsPlots() const;
    // Redraws the chosen series with what arrived since the last call.
    void refresh();

    AdvisorView* advisor() const { return advisor_; }
    // The inner tabs: "Plots" and "Advisor".
    QTabWidget* pages() const { return pages_; }
    QComboBox* layerSelector() const { return layer_; }
    QComboBox* operandSelector() const { return operand_; }
    PlotWidget* amaxPlot() const { return amax_; }
    PlotWidget* sqnrPlot() const { return sqnr_; }
    PlotWidget* blockHistogramPlot() const { return block_hist_; }
    HeatmapPlot* blockHeatmap() const { return heatmap_; }
    QCPBars* blockBars() const { return block_bars_; }
    // Records held for (layer label, operand), in step order; empty for an unknown pair.
    std::vector<ScalingStatsRecord> series(const QString& layer, const QString& operand) const;
    // The newest record of (layer, operand), or nullptr.
    const ScalingStatsRecord* latest(const QString& layer, const QString& operand) const;

private:
    using Key = std::pair<QString, QString>;  // layer label, operand
    // The layer and operand selectors with the readout beside them; the four plots.
    QHBoxLayout* buildSelectorBar();
    QGridLayout* buildPlotGrid();
    void refreshSelectors();
    void rebuildPlots();
    void appendToPlots(size_t from);
    void fitAmaxAxis();
    void showBlockHistogram(const ScalingStats& stats, int64_t step);
    const std::vector<ScalingStatsRecord>* selected() const;

    std::map<Key, std::vector<ScalingStatsRecord>> records_;
    size_t drawn_ = 0;  // records of the selected series already in the plots
    bool selectors_dirty_ = false;
    bool updating_ = false;
    QStackedWidget* stack_ = nullptr;
    QTabWidget* pages_ = nullptr;
    AdvisorView* advisor_ = nullptr;
    QLabel* empty_ = nullptr;
    QComboBox* layer_ = nullptr;
    QComboBox* operand_ = nullptr;
    QLabel* readout_ = nullptr;
    PlotWidget* amax_ = nullptr;
    PlotWidget* sqnr_ = nullptr;
    PlotWidget* block_hist_ = nullptr;
    QCPBars* block_bars_ = nullptr;
    HeatmapPlot* heatmap_ = nullptr;
    QWidget* block_row_ = nullptr;
    QLabel* block_note_ = nullptr;
};

// A block-scale exponent histogram as an ExponentHistogram (for HeatmapPlot): bin
// block_exponent_min + i holds block_exponent_counts[i].
ExponentHistogram block_exponent_histogram(const ScalingStats& stats);

}  // namespace mpwb
