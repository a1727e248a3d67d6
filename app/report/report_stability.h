// Internal to mpwb_report: the Stability section of a report, for runs that stored instability
// indicators (transformer runs with statistics steps): one plot per family of indicators, every
// such run overlaid (the workbench's StabilityView, rendered offscreen), and a table of each
// run's last values.
#pragma once
#include "app/report/report_html.h"
#include "sessions/run_store.h"

#include <vector>

namespace mpwb::report_detail {

// Empty (no figures, no rows) when no run in rows stored indicators.
StabilitySection stability_section(RunStore& store, const std::vector<RunRow>& rows, int width, int height);

}  // namespace mpwb::report_detail
