// The per-layer, per-operand reduction of a run's scaling statistics.
#include "sessions/scaling_summary.h"

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace mpwb {

std::vector<ScalingSummaryRow> summarize_scaling(const std::vector<ScalingStatsRecord>& records) {
    std::map<std::pair<std::size_t, std::string>, ScalingSummaryRow> rows;
    std::map<std::pair<std::size_t, std::string>, std::int64_t> first_step;
    for (const auto& r : records) {
        const auto key = std::make_pair(r.layer, r.stats.operand);
        auto [it, fresh] = rows.try_emplace(key);
        ScalingSummaryRow& row = it->second;
        const double sqnr = r.stats.sqnr_db;
        if (fresh) {
            row.layer = r.layer;
            row.operand = r.stats.operand;
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
