// The per-layer, per-operand reduction of a run's scaling statistics.
#include "sessions/scaling_summary.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace mpwb {

std::vector<ScalingSummaryRow> summarize_scaling(const std::vector<ScalingStatsRecord>& records) {
    // The label is part of the key: a transformer block's named GEMMs share their layer's index
    // ("3.attn.qkv", "3.mlp.fc1"); a layer with one GEMM has one label throughout.
    // What-if rows and the rows of each recipe are rows of their own.
    using Key = std::tuple<std::size_t, std::string, bool, std::string, std::string>;
    std::map<Key, ScalingSummaryRow> rows;
    std::map<Key, std::int64_t> first_step;
    for (const auto& r : records) {
        const Key key{r.layer, r.layer_label, r.stats.what_if, r.stats.recipe, r.stats.operand};
        auto [it, fresh] = rows.try_emplace(key);
        ScalingSummaryRow& row = it->second;
        const double sqnr = r.stats.sqnr_db;
        if (fresh) {
            row.layer = r.layer;
            row.operand = r.stats.operand;
            row.recipe = r.stats.recipe;
            row.what_if = r.stats.what_if;
            row.min_sqnr_db = std::numeric_limits<double>::quiet_NaN();
        }
        if (fresh || r.step < first_step[key]) {
            first_step[key] = r.step;
            row.first_sqnr_db = sqnr;
        }
        if (fresh || r.step >= row.last_step) {
            row.last_step = r.step;
            row.last = r.stats;
            row.element = r.stats.element;
            row.layer_label = r.layer_label;
        }
        if (!std::isnan(sqnr) && (std::isnan(row.min_sqnr_db) || sqnr < row.min_sqnr_db))
            row.min_sqnr_db = sqnr;
        row.clipped_blocks += r.stats.clipped_blocks;
        row.blocks += r.stats.blocks;
        ++row.records;
    }
    std::vector<ScalingSummaryRow> out;
    out.reserve(rows.size());
    for (auto& [key, row] : rows) out.push_back(std::move(row));
    return out;
}

}  // namespace mpwb
