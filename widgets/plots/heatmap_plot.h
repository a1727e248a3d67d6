// HeatmapPlot: the exponent histogram of one gradient over the steps of a run: x = step,
// y = log2|g| (one row per binade), colour = log10 of the fraction of elements in that binade;
// empty cells are transparent. Lines mark a format's smallest subnormal and largest finite value
// (FP16 by default), so a distribution drifting out of range is visible at a glance; their labels
// sit at the end of the line (left or right, above or below) where they hide no data.
// Columns are appended as statistics arrive; the grid grows by doubling so appending stays cheap.
#pragma once
#include "core/numeric/exponent_histogram.h"
#include "core/numeric/format.h"
#include "widgets/plots/plot_widget.h"

#include <QVector>
#include <cstdint>
#include <vector>

namespace mpwb {

class HeatmapPlot : public PlotWidget {
    Q_OBJECT
public:
    explicit HeatmapPlot(QWidget* parent = nullptr);

    // Steps ascending; a step equal to the last one replaces that column.
    void addColumn(std::int64_t step, const ExponentHistogram& histogram);
    void clear();
    void setTitle(const QString& title);
    // Formats whose boundaries are drawn (min subnormal and max finite). The first one's whole
    // range stays in view; with none, the rows follow the data alone (block-scale exponents).
    void setBoundaryFormats(const QVector<Format>& formats);

    int columnCount() const { return static_cast<int>(columns_.size()); }
    // log10(count/total) of the cell, NaN when the step has no column or the bin is empty.
    double cellValue(std::int64_t step, int exponent) const;
    // What the colour map holds at that data coordinate (for tests: the drawn value).
    double drawnValue(double step, int exponent) const;
    QCPColorMap* colorMap() const { return map_; }

    QString csv() const override;
    QList<QCPItemText*> lineLabels() const { return line_labels_; }
    // Non-empty cells under a pixel rect of the axis rect (what a label there would hide).
    int cellsUnder(const QRectF& r) const;

protected:
    void applyTheme() override;

private:
    void placeLineLabels();
    void styleLineLabel(QCPItemText* label) const;
    struct Column {
        std::int64_t step;
        ExponentHistogram histogram;
    };
    void rebuildGrid();
    void writeColumn(std::size_t index);
    void updateRanges();
    void updateBoundaries();

    std::vector<Column> columns_;
    std::int64_t step0_ = 0;
    std::int64_t dstep_ = 0;  // grid spacing: gcd of the step differences
    int capacity_ = 0;        // grid columns allocated
    bool widened_ = false;    // spacing doubled past the gcd to stay within the column limit
    int exp_lo_ = -40;        // rows shown (grows with the data)
    int exp_hi_ = 20;
    int data_lo_ = ExponentHistogram::kMaxExponent + 1;  // rows holding data (empty: lo > hi)
    int data_hi_ = ExponentHistogram::kMinExponent - 1;
    QVector<Format> boundary_formats_;
    QCPColorMap* map_ = nullptr;
    QCPColorScale* scale_ = nullptr;
    QCPTextElement* title_element_ = nullptr;
    QList<QCPItemStraightLine*> lines_;
    QList<QCPItemText*> line_labels_;
};

}  // namespace mpwb
