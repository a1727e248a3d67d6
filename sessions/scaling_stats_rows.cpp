// scaling_stats rows and their block-exponent blob: fixed-width int64 counts, checked on the way in.
#include "sessions/scaling_stats_rows.h"

#include "core/common/byte_blob.h"
#include "core/numeric/format.h"

namespace mpwb {

std::vector<std::uint8_t> block_exponent_counts_to_blob(const std::vector<std::int64_t>& counts) {
    std::vector<std::uint8_t> out;
    out.reserve(counts.size() * sizeof(std::int64_t));
    for (const std::int64_t c : counts) put_value(out, c);
    return out;
}

std::vector<std::int64_t> block_exponent_counts_from_blob(std::span<const std::uint8_t> blob,
                                                          const std::string& what) {
    constexpr std::size_t width = sizeof(std::int64_t);
    if (blob.size() % width != 0)
        throw DataError(what + ": " + std::to_string(blob.size()) + " bytes is not a whole number of " +
                        std::to_string(width) + "-byte counts");
    if (blob.size() / width > kMaxBlockExponentBins)
        throw DataError(what + ": " + std::to_string(blob.size() / width) + " bins is more than the " +
                        std::to_string(kMaxBlockExponentBins) + " a block-scale histogram can have");
    BlobReader reader(blob, what);
    std::vector<std::int64_t> counts(blob.size() / width);
    for (std::size_t i = 0; i < counts.size(); ++i) {
        counts[i] = reader.get<std::int64_t>();
        if (counts[i] < 0)
            throw DataError(what + ": bin " + std::to_string(i) + " holds a negative count (" +
                            std::to_string(counts[i]) + ")");
    }
    return counts;
}

std::string scaling_stats_columns(bool has_recipe_columns) {
    return std::string(
               "step, layer, layer_label, operand, element, amax, scale, underflow_fraction, "
               "saturate_fraction, sqnr_db, value_count, blocks, clipped_blocks, block_exponent_min, "
               "block_exponent_counts, ") +
           (has_recipe_columns ? "recipe, what_if, blocks_scaled_to_4"
                               : "'' AS recipe, 0 AS what_if, 0 AS blocks_scaled_to_4");
}

bool has_recipe_columns(sqlite::Db& db) {
    return db.query_int("SELECT count(*) FROM pragma_table_info('scaling_stats') WHERE name='recipe'") > 0;
}

namespace {

// Far beyond any scale's exponent (FP32: -149 .. 127); a larger one is damage.
constexpr std::int64_t kMaxBlockExponent = 1024;

std::int64_t non_negative(const sqlite::Stmt& s, int column, const char* field, const std::string& what) {
    const std::int64_t v = s.col_int(column);
    if (v < 0) throw DataError(what + ", field " + field + ": " + std::to_string(v) + " is negative");
    return v;
}

}  // namespace

ScalingStatsRecord read_scaling_stats_row(const sqlite::Stmt& s, const std::string& what) {
    ScalingStatsRecord r;
    r.step = s.col_int(0);
    r.layer = static_cast<std::size_t>(non_negative(s, 1, "layer", what));
    r.layer_label = s.col_text(2);
    ScalingStats& st = r.stats;
    st.operand = s.col_text(3);
    try {
        st.element = parse_format(s.col_text(4));
    } catch (const ConfigError& e) {
        throw DataError(what + ", field element: " + e.what());
    }
    st.amax = static_cast<float>(s.col_double(5));
    st.scale = static_cast<float>(s.col_double(6));
    st.underflow_fraction = s.col_double(7);
    st.saturate_fraction = s.col_double(8);
    st.sqnr_db = s.col_double(9);
    st.values = non_negative(s, 10, "value_count", what);
    st.blocks = non_negative(s, 11, "blocks", what);
    st.clipped_blocks = non_negative(s, 12, "clipped_blocks", what);
    const std::int64_t exponent_min = s.col_int(13);
    if (exponent_min < -kMaxBlockExponent || exponent_min > kMaxBlockExponent)
        throw DataError(what + ", field block_exponent_min: " + std::to_string(exponent_min) +
                        " is outside [-" + std::to_string(kMaxBlockExponent) + ", " +
                        std::to_string(kMaxBlockExponent) + "]");
    st.block_exponent_min = static_cast<int>(exponent_min);
    const auto blob = s.col_blob(14);
    st.block_exponent_counts = block_exponent_counts_from_blob(blob, what + ", field block_exponent_counts");
    st.recipe = s.col_text(15);
    if (st.recipe.size() > kMaxRecipeNameLength)
        throw DataError(what + ", field recipe: " + std::to_string(st.recipe.size()) +
                        " characters; a recipe name has at most " + std::to_string(kMaxRecipeNameLength));
    const std::int64_t what_if = s.col_int(16);
    if (what_if != 0 && what_if != 1)
        throw DataError(what + ", field what_if: " + std::to_string(what_if) + " is not 0 or 1");
    st.what_if = what_if == 1;
    st.blocks_scaled_to_4 = non_negative(s, 17, "blocks_scaled_to_4", what);
    if (st.blocks_scaled_to_4 > st.blocks)
        throw DataError(what + ", field blocks_scaled_to_4: " + std::to_string(st.blocks_scaled_to_4) +
                        " blocks of " + std::to_string(st.blocks));
    return r;
}

}  // namespace mpwb
