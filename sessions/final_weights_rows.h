// Rows of the final_weights and final_weight_tensors tables (store schema 8): the FP32 weights a
// run ended with (NetworkWeights, core/nn/network_weights.h), one row per run with the step and
// the input shape, one row per tensor with its layer, name, shape (a JSON array) and values (FP32,
// little-endian, as every supported host is). Shared by the RunWriter (which commits them in the
// transaction before the final status), RunStore::final_weights and the bundle import, which
// decodes every row of a bundle before importing it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/nn/network_weights.h"
#include "sessions/sqlite_db.h"

namespace mpwb {

// Limits a stored row must keep (a hostile bundle gets no further): a tensor is no larger than one
// network tensor may be, the tensors of a run no more than twice the parameter limit (parameters
// plus buffers), a shape has 1 to 4 positive dimensions, a name is short.
struct FinalWeightLimits {
    static constexpr std::int64_t kMaxTensorElements = NetworkLimits::kMaxTensorElements;
    static constexpr std::int64_t kMaxRunElements = 2 * NetworkLimits::kMaxParameters;
    static constexpr std::int64_t kMaxTensors = 4 * static_cast<std::int64_t>(NetworkLimits::kMaxLayers);
    static constexpr std::size_t kMaxRank = 4;
    static constexpr std::size_t kMaxNameLength = 64;
};

// Replaces the run's stored weights with `weights`. The caller holds a write transaction.
void insert_final_weights(sqlite::Db& db, std::int64_t run_id, const NetworkWeights& weights);

// The run's weights from `schema` ("main", or an attached "bundle"); nullopt when it has none.
// Every row is checked against FinalWeightLimits and its own shape; a damaged one is a
// StoreError(Corrupt) naming `source` (the file), the table, the run and the field.
// values false checks every row the same way but leaves NamedTensor::values empty (the bundle
// check, which must not hold a hostile bundle's gigabytes in memory).
std::optional<NetworkWeights> read_final_weights(sqlite::Db& db, const std::string& schema,
                                                 std::int64_t run_id, const std::string& source,
                                                 bool values = true);

// True when `schema` has the schema-8 tables (a read-only open of an older file does not).
bool has_final_weights_tables(sqlite::Db& db, const std::string& schema);

}  // namespace mpwb
