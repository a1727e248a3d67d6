// HistogramPlot: one exponent histogram of a gradient (ExponentHistogram: one bin per power of
// two) as bars over log2|g|, with the representable range of the number formats drawn behind:
// the reference format's zones over the full height (underflow, subnormal, normal, overflow) and
// one labelled strip per visible format at the top (FP16, BF16, FP8 E4M3, E5M2 by default). A
// text box gives what the reference format loses: underflow %, subnormal %, overflow %, headroom.
// Under a scaled recipe one more strip shows the operand's element format (E4M3, E5M2, E2M1 ...)
// shifted by its current scale: the range of gradient values that format holds after scaling.
// Bars are the fraction of all elements (zeros and non-finite included) in each binade.
#pragma once
#include "core/numeric/exponent_histogram.h"
#include "core/numeric/format.h"
#include "widgets/plots/plot_widget.h"

#include <QVector>
#include <cstdint>
#include <optional>

namespace mpwb {

class HistogramPlot : public PlotWidget {
    Q_OBJECT
public:
    enum class ZoneKind { Underflow, Subnormal, Normal, Overflow };
    // A drawn zone: log2|x| from x0 to x1 (x1 = +inf for overflow, x0 = -inf for underflow are
    // clipped to the axis ends when drawn, reported here as the exact boundaries).
    struct Zone {
        Format format;
        ZoneKind kind;
        double x0;
        double x1;
        bool reference;       // the full-height zones of the reference format
        bool scaled = false;  // the scaled element format's strip (setScaledZone)
    };

    explicit HistogramPlot(QWidget* parent = nullptr);

    // loss_scale: the scale the gradient carried (shown in the title; the histogram is of the
    // scaled value, as the trainer takes it). reference: the format whose zones fill the
    // background and whose FormatRangeStats the text box shows.
    void setHistogram(const ExponentHistogram& histogram, const QString& title, Format reference,
                      float loss_scale = 1.0f);
    void setVisibleFormats(const QVector<Format>& formats);
    // The strip of `element` shifted by shift_log2 (log2 of the factor from the format's values
    // to the gradient's), as recorded at `step`; drawn below the other strips.
    void setScaledZone(Format element, double shift_log2, int64_t step);
    void clearScaledZone();
    void clear();

    const ExponentHistogram& histogram() const { return histogram_; }
    Format reference() const { return reference_; }
    FormatRangeStats referenceStats() const { return stats_; }
    QCPBars* bars() const { return bars_; }
    QVector<Zone> zones() const { return zones_; }
    QString statsText() const;

    QString csv() const override;

protected:
    void applyTheme() override;
    void legendObstacles(QVector<QRectF>* rects) const override;

private:
    void rebuild();
    void addZoneRect(Format f, ZoneKind kind, double x0, double x1, double y0, double y1, const QColor& color,
                     bool reference);

    ExponentHistogram histogram_;
    bool has_histogram_ = false;
    QString title_;
    Format reference_ = Format::FP16;
    float loss_scale_ = 1.0f;
    FormatRangeStats stats_;
    QVector<Format> formats_;
    QVector<Zone> zones_;
    double strip_space_ = 0;  // the strips' share of the axis rect's height, from the top
    QCPBars* bars_ = nullptr;
    QCPTextElement* title_element_ = nullptr;
    QCPItemText* stats_label_ = nullptr;
    QList<QCPAbstractItem*> zone_items_;
    struct ScaledZone {
        Format element;
        double shift_log2;
        int64_t step;
    };
    std::optional<ScaledZone> scaled_zone_;
    void addStrip(Format f, double shift, double y0, double x_lo, double x_hi, const QString& text,
                  bool scaled);
};

// log2 of a positive float (exact for powers of two).
double log2_of(float x);

}  // namespace mpwb
