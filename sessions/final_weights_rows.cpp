// final_weights / final_weight_tensors rows (see final_weights_rows.h).
#include "sessions/final_weights_rows.h"

#include <cstring>

#include "core/common/json_input.h"
#include "sessions/store_error.h"

namespace mpwb {

namespace {

std::string shape_json(const Shape& shape) { return nlohmann::json(shape).dump(); }

// A stored shape: a JSON array of 1 to kMaxRank positive integers whose product stays within
// `max_elements`. Throws a message naming what is wrong (the caller adds where).
Shape parse_shape(const std::string& text, std::int64_t max_elements) {
    nlohmann::json j;
    try {
        j = parse_json_text(text, "shape");
    } catch (const JsonInputError& e) {
        throw std::runtime_error(e.what());
    }
    if (!j.is_array() || j.empty() || j.size() > FinalWeightLimits::kMaxRank)
        throw std::runtime_error("shape " + text + " is not an array of 1 to 4 dimensions");
    Shape shape;
    std::int64_t elements = 1;
    for (const auto& d : j) {
        if (!d.is_number_integer() || d.get<std::int64_t>() < 1)
            throw std::runtime_error("shape " + text + " has a dimension that is not a positive integer");
        const std::int64_t dim = d.get<std::int64_t>();
        if (dim > max_elements || elements > max_elements / dim)
            throw std::runtime_error("shape " + text + " holds more than " + std::to_string(max_elements) +
                                     " values");
        elements *= dim;
        shape.push_back(dim);
    }
    return shape;
}

StoreError corrupt(const std::string& where, const std::string& what) {
    return StoreError(StoreError::Kind::Corrupt, where + ": " + what);
}

}  // namespace

bool has_final_weights_tables(sqlite::Db& db, const std::string& schema) {
    sqlite::Stmt s(db, "SELECT count(*) FROM " + schema +
                           ".sqlite_master WHERE type='table' AND name IN ('final_weights', "
                           "'final_weight_tensors')");
    s.step("reading the tables of " + schema);
    return s.col_int(0) == 2;
}

void insert_final_weights(sqlite::Db& db, std::int64_t run_id, const NetworkWeights& weights) {
    sqlite::Stmt drop(db, "DELETE FROM final_weight_tensors WHERE run_id=?");
    drop.bind(1, run_id).run("replacing the final weights");
    sqlite::Stmt run(db, "INSERT OR REPLACE INTO final_weights(run_id, step, input_shape) VALUES(?,?,?)");
    run.bind(1, run_id).bind(2, weights.step).bind(3, shape_json(weights.input_shape));
    run.run("storing the final weights");
    sqlite::Stmt row(db,
                     "INSERT INTO final_weight_tensors(run_id, position, layer, name, shape, data) "
                     "VALUES(?,?,?,?,?,?)");
    for (std::size_t i = 0; i < weights.tensors.size(); ++i) {
        const NamedTensor& t = weights.tensors[i];
        row.bind(1, run_id).bind(2, static_cast<std::int64_t>(i)).bind(3, t.layer).bind(4, t.name);
        row.bind(5, shape_json(t.shape)).bind_blob(6, t.values.data(), t.values.size() * sizeof(float));
        row.run("storing the final weights");
        row.reset();
    }
}

std::optional<NetworkWeights> read_final_weights(sqlite::Db& db, const std::string& schema,
                                                 std::int64_t run_id, const std::string& source,
                                                 bool values) {
    if (!has_final_weights_tables(db, schema)) return std::nullopt;
    const std::string run_text = "run " + std::to_string(run_id);
    NetworkWeights w;
    {
        sqlite::Stmt s(db, "SELECT step, input_shape FROM " + schema + ".final_weights WHERE run_id=?");
        s.bind(1, run_id);
        if (!s.step("reading the final weights")) return std::nullopt;
        const std::string where = source + ": table final_weights, " + run_text;
        w.step = s.col_int(0);
        if (w.step < 1) throw corrupt(where, "step " + std::to_string(w.step) + " is not positive");
        try {
            w.input_shape = parse_shape(s.col_text(1), FinalWeightLimits::kMaxTensorElements);
        } catch (const std::exception& e) {
            throw corrupt(where + ", input_shape", e.what());
        }
    }
    sqlite::Stmt s(db, "SELECT position, layer, name, shape, data FROM " + schema +
                           ".final_weight_tensors WHERE run_id=? ORDER BY position");
    s.bind(1, run_id);
    std::int64_t total = 0;
    while (s.step("reading the final weights")) {
        const std::int64_t position = s.col_int(0);
        const std::string where =
            source + ": table final_weight_tensors, " + run_text + ", position " + std::to_string(position);
        if (position != static_cast<std::int64_t>(w.tensors.size()))
            throw corrupt(where, "positions do not run 0, 1, 2, ... (expected " +
                                     std::to_string(w.tensors.size()) + ")");
        if (static_cast<std::int64_t>(w.tensors.size()) >= FinalWeightLimits::kMaxTensors)
            throw corrupt(where, "more than " + std::to_string(FinalWeightLimits::kMaxTensors) + " tensors");
        NamedTensor t;
        t.layer = s.col_int(1);
        if (t.layer < 0 || t.layer >= static_cast<std::int64_t>(NetworkLimits::kMaxLayers))
            throw corrupt(where + ", layer", "layer " + std::to_string(t.layer) + " is out of range");
        t.name = s.col_text(2);
        if (t.name.empty() || t.name.size() > FinalWeightLimits::kMaxNameLength)
            throw corrupt(where + ", name", "the name is empty or longer than 64 characters");
        try {
            t.shape = parse_shape(s.col_text(3), FinalWeightLimits::kMaxTensorElements);
        } catch (const std::exception& e) {
            throw corrupt(where + ", shape", e.what());
        }
        const std::int64_t count = shape_numel(t.shape);
        if (count > FinalWeightLimits::kMaxRunElements - total)
            throw corrupt(where, "the run's tensors hold more than " +
                                     std::to_string(FinalWeightLimits::kMaxRunElements) + " values");
        total += count;
        const auto bytes = static_cast<std::int64_t>(sqlite3_column_bytes(s.handle(), 4));
        if (bytes != count * static_cast<std::int64_t>(sizeof(float)))
            throw corrupt(where + ", data", std::to_string(bytes) + " bytes for shape " +
                                                shape_to_string(t.shape) + " (" + std::to_string(count * 4) +
                                                " expected)");
        if (!values) {
            w.tensors.push_back(std::move(t));
            continue;
        }
        t.values.resize(static_cast<std::size_t>(count));
        if (count > 0)
            std::memcpy(t.values.data(), sqlite3_column_blob(s.handle(), 4), static_cast<std::size_t>(bytes));
        w.tensors.push_back(std::move(t));
    }
    return w;
}

}  // namespace mpwb
