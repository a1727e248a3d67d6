// The run store's schema as an ordered list of forward migrations. Step i (0-based) takes a
// database from PRAGMA user_version i to i+1; a new build only ever appends steps, so any older
// file can be brought forward and a file newer than kSchemaVersion is refused untouched.
#pragma once
#include <string>
#include <vector>

namespace mpwb {

namespace sqlite {
class Db;
}

// Steps are SQL scripts run inside one transaction each, together with the user_version bump.
const std::vector<std::string>& schema_migrations();

// The schema version this build writes: the number of migration steps.
int schema_version();

// How the schema of `schema` ("main" or an attached name) on `db` differs from the one the
// migration steps create up to `version`, together with the tables `extra_sql` creates (a
// bundle's marker): the first view, trigger, index or table that the store's schema lacks or
// defines otherwise (same type, name, table and SQL), or the first of its objects that is
// missing. Empty when they are the same. A file from elsewhere is data, not code: one whose
// schema differs is refused before any of its tables is read, so no view or trigger in it runs.
std::string schema_difference(sqlite::Db& db, const std::string& schema, int version,
                              const std::string& extra_sql = {});

// The oldest version a read-only open accepts without migrating: every query reads the same
// columns from it (version 5 only changed how ids are given and what a writer records).
constexpr int kOldestReadableSchema = 4;
// The schema that added scaling_stats: a read-only open of an older file has no such table.
constexpr int kScalingStatsSchema = 6;
// The schema that added final_weights and final_weight_tensors.
constexpr int kFinalWeightsSchema = 8;
// The schema whose scaling_stats rows name their recipe and mark what-if rows.
constexpr int kScalingStatsRecipeSchema = 9;

// Steps of 2^kMetricBlockShift consecutive step numbers are summarised in metric_blocks.
constexpr int kMetricBlockShift = 5;

}  // namespace mpwb
