// Rows of the scaling_stats table (store schema 6, recipe columns 9) read back into ScalingStatsRecord, and
// the stored form of a block recipe's histogram of block-scale exponents (its block_exponent_counts column):
// the counts as int64 in the host's byte order (core/common/byte_blob.h), one per power of two. Shared by the
// writer, the store's query and the bundle import's check, so a damaged row is refused the same way
// everywhere.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/train/run_records.h"
#include "sessions/sqlite_db.h"

namespace mpwb {

// Histograms longer than this are damage, not data: E8M0 has 254 exponents, FP32 scales 277.
constexpr std::size_t kMaxBlockExponentBins = 512;

std::vector<std::uint8_t> block_exponent_counts_to_blob(const std::vector<std::int64_t>& counts);

// The counts of blob; throws DataError "<what>: ..." when its length is not a whole number of
// counts, it holds more than kMaxBlockExponentBins, or a count is negative.
std::vector<std::int64_t> block_exponent_counts_from_blob(std::span<const std::uint8_t> blob,
                                                          const std::string& what);

// A recipe name longer than this is damage ("fp8-delayed" is the longest today).
constexpr std::size_t kMaxRecipeNameLength = 32;

// The columns read_scaling_stats_row expects first (0 to 17), in its order, for a SELECT on
// scaling_stats; a query may select more after them. A table from before schema 9 has no recipe,
// what_if and blocks_scaled_to_4 columns: they read as '', 0 and 0 (the run's own statistics).
std::string scaling_stats_columns(bool has_recipe_columns);
// Whether db's scaling_stats table has schema 9's recipe columns.
bool has_recipe_columns(sqlite::Db& db);

// The record in the current row of s (selected with kScalingStatsColumns). Throws DataError
// "<what>, field <column>: ..." for an unknown element format, a negative layer or count, or a
// damaged exponent histogram.
ScalingStatsRecord read_scaling_stats_row(const sqlite::Stmt& s, const std::string& what);

}  // namespace mpwb
