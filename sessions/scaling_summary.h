// ScalingSummary: a scaled run's statistics reduced to one row per layer and operand (the last
// amax, scale, underflow and saturation, and the SQNR's first, last and minimum), which
// `mpwb-cli runs show` prints and the report's SQNR table shows.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/train/run_records.h"

namespace mpwb {

struct ScalingSummaryRow {
    std::size_t layer = 0;
    std::string layer_label;
    std::string operand;
    std::string recipe;             // ScalingStats::recipe
    bool what_if = false;           // ScalingStats::what_if
    Format element = Format::E4M3;  // of the last record
    std::int64_t records = 0;
    std::int64_t last_step = 0;
    ScalingStats last;  // the statistics of last_step
    double first_sqnr_db = 0;
    double min_sqnr_db = 0;           // NaN values are skipped; NaN when every one was
    std::int64_t clipped_blocks = 0;  // over every record
    std::int64_t blocks = 0;
};

// One row per (layer, GEMM, what-if or not, recipe, operand), ordered by layer, then the GEMM's
// label ("3.attn.qkv"), the run's own rows before what-if rows, recipe, operand; records in any order.
std::vector<ScalingSummaryRow> summarize_scaling(const std::vector<ScalingStatsRecord>& records);

}  // namespace mpwb
