// The recipe advisor: a run's scaling statistics as a table of GEMMs × recipes — the run's own
// precision of each GEMM and every what-if recipe — each cell the worst operand of that GEMM
// under that recipe at the last statistics step (lowest SQNR, highest underflow and saturation).
// The Scaling view colours it and lets a click turn a cell into a precision rule; `runs show`
// and the report print it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/train/run_records.h"

namespace mpwb {

struct AdvisorCell {
    bool present = false;
    std::string recipe;  // what the GEMM was quantized by in this cell ("mxfp8", "bf16")
    int64_t step = 0;    // the statistics step the cell shows (the last one)
    double min_sqnr_db = 0;
    double max_underflow = 0;
    double max_saturate = 0;
    std::string worst_operand;  // the operand with the lowest SQNR
};

struct AdvisorRow {
    size_t layer = 0;
    std::string gemm_label;          // as statistics label it: "0 Linear", "3.attn.qkv"
    std::string rule_label;          // as precision rules match it: "0", "3.attn.qkv"
    std::vector<AdvisorCell> cells;  // one per AdvisorTable::columns
};

struct AdvisorTable {
    // "this run", then each what-if recipe in the order first seen.
    std::vector<std::string> columns;
    std::vector<std::string> column_recipes;  // "" for "this run", else the what-if recipe
    std::vector<AdvisorRow> rows;             // by layer, then label
    bool empty() const { return rows.empty(); }
};

AdvisorTable recipe_advisor(const std::vector<ScalingStatsRecord>& records);

// "3.attn.qkv" stays; "3 Linear" becomes "3".
std::string rule_label_of(const std::string& gemm_label);

}  // namespace mpwb
