// Internal to mpwb_report: the scaling section of a report, for runs of a scaled recipe
// (fp8-delayed ... mxfp4) that stored scaling statistics: the SQNR table per layer and operand,
// amax and scale per layer over steps, and the block-scale exponent histograms of block recipes;
// with the precision of each GEMM and pass (the "gemm_precisions" event) and the recipe advisor.
#pragma once
#include "app/report/report_html.h"
#include "sessions/run_store.h"

#include <vector>

class QCustomPlot;

namespace mpwb::report_detail {

// plot replotted and saved as a PNG of width x height CSS pixels at pixel_ratio pixels each
// (report.cpp): 1.5 is sharp in a browser and on paper; small multiples need less.
inline constexpr double kPlotPixelRatio = 1.5;
Figure render_plot(QCustomPlot* plot, const QString& title, const QString& caption, int width, int height,
                   double pixel_ratio = kPlotPixelRatio);

// The section of each run in rows that has scaling statistics (none for the others), with its
// plots rendered at width x (height as each plot needs) CSS pixels.
std::vector<ScalingSection> scaling_sections(RunStore& store, const std::vector<RunRow>& rows, int width);

}  // namespace mpwb::report_detail
