// The recipe advisor's reduction: per GEMM and column, the last statistics step's worst operand.
#include "sessions/recipe_advisor.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace mpwb {

std::string rule_label_of(const std::string& gemm_label) {
    if (gemm_label.find('.') != std::string::npos) return gemm_label;
    return gemm_label.substr(0, gemm_label.find(' '));
}

namespace {

void add_to_cell(AdvisorCell& cell, const ScalingStatsRecord& r) {
    const ScalingStats& s = r.stats;
    if (!cell.present || r.step > cell.step) {
        cell = AdvisorCell{true,     s.recipe, r.step, s.sqnr_db, s.underflow_fraction, s.saturate_fraction,
                           s.operand};
        return;
    }
    if (r.step < cell.step) return;
    // A GEMM whose passes use different recipes shows them all ("bf16+mxfp8").
    if (("+" + cell.recipe + "+").find("+" + s.recipe + "+") == std::string::npos)
        cell.recipe += "+" + s.recipe;
    if (s.sqnr_db < cell.min_sqnr_db || std::isnan(s.sqnr_db)) {
        cell.min_sqnr_db = s.sqnr_db;
        cell.worst_operand = s.operand;
    }
    cell.max_underflow = std::max(cell.max_underflow, s.underflow_fraction);
    cell.max_saturate = std::max(cell.max_saturate, s.saturate_fraction);
}

}  // namespace

AdvisorTable recipe_advisor(const std::vector<ScalingStatsRecord>& records) {
    AdvisorTable table;
    table.columns.push_back("this run");
    table.column_recipes.push_back("");
    for (const auto& r : records)
        if (r.stats.what_if && std::find(table.column_recipes.begin(), table.column_recipes.end(),
                                         r.stats.recipe) == table.column_recipes.end()) {
            table.columns.push_back(r.stats.recipe + " (what-if)");
            table.column_recipes.push_back(r.stats.recipe);
        }
    std::map<std::pair<size_t, std::string>, AdvisorRow> rows;
    for (const auto& r : records) {
        AdvisorRow& row = rows[{r.layer, r.layer_label}];
        if (row.cells.empty()) {
            row.layer = r.layer;
            row.gemm_label = r.layer_label;
            row.rule_label = rule_label_of(r.layer_label);
            row.cells.resize(table.columns.size());
        }
        const auto column = r.stats.what_if ? std::find(table.column_recipes.begin(),
                                                        table.column_recipes.end(), r.stats.recipe) -
                                                  table.column_recipes.begin()
                                            : 0;
        add_to_cell(row.cells[static_cast<size_t>(column)], r);
    }
    for (auto& [key, row] : rows) table.rows.push_back(std::move(row));
    return table;
}

}  // namespace mpwb
