// The read side of RunStore: the run list with its filters, one run in full, series and their
// downsampling, events, histograms and the configuration diff of a comparison.
#include "sessions/run_query.h"

#include "sessions/run_store.h"
#include "sessions/scaling_stats_rows.h"
#include "sessions/store_schema.h"

#include "core/common/json_input.h"
#include "core/common/text_format.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <set>

namespace mpwb {

namespace {

// A leaf of a stored configuration as `runs show`, `runs compare` and the reports print it. A float
// setting is stored as the double of its float (0.01f as 0.009999999776482582): it is printed as
// that float's shortest round-trip form ("0.01"); other numbers as the shortest form of the
// double. A whole number keeps its ".0", so a float setting still reads as one.
std::string leaf_text(const nlohmann::json& j) {
    if (!j.is_number_float()) return j.dump();
    const double v = j.get<double>();
    const float f = static_cast<float>(v);
    std::string text = std::isfinite(v) && static_cast<double>(f) == v ? shortest_text(f) : shortest_text(v);
    if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
    return text;
}

void flatten_into(const nlohmann::json& j, const std::string& path, std::map<std::string, std::string>& out) {
    if (j.is_object() && !j.empty()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            flatten_into(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
        }
    } else if (j.is_array() && !j.empty()) {
        for (std::size_t i = 0; i < j.size(); ++i) {
            flatten_into(j[i], path + "[" + std::to_string(i) + "]", out);
        }
    } else {
        out[path.empty() ? std::string("$") : path] = leaf_text(j);
    }
}

std::string like_pattern(const std::string& text) {
    std::string p = "%";
    for (char c : text) {
        if (c == '%' || c == '_' || c == '\\') {
            p += '\\';
        }
        p += c;
    }
    return p + "%";
}

constexpr const char* kRunColumns =
    "r.id, r.uuid, r.name, r.status, r.config_json, r.network_json, r.dataset, r.precision, "
    "r.backend, r.device, r.versions_json, r.machine, r.seed, r.created, r.started, r.ended, "
    "r.deleted, r.owner_pid, coalesce(r.owner_host, ''), coalesce(n.text, '')";

Run read_run_row(const sqlite::Stmt& s) {
    Run r;
    r.id = s.col_int(0);
    r.uuid = s.col_text(1);
    r.name = s.col_text(2);
    r.status = parse_run_status(s.col_text(3));
    r.config_json = s.col_text(4);
    r.network_json = s.col_text(5);
    r.dataset = s.col_text(6);
    r.precision = s.col_text(7);
    r.backend = s.col_text(8);
    r.device = s.col_text(9);
    r.versions_json = s.col_text(10);
    r.machine = s.col_text(11);
    r.seed = s.col_opt_int(12);
    r.created = s.col_double(13);
    r.started = s.col_opt_double(14);
    r.ended = s.col_opt_double(15);
    r.deleted = s.col_int(16) != 0;
    r.owner_pid = s.col_opt_int(17);
    r.owner_host = s.col_text(18);
    r.note = s.col_text(19);
    return r;
}

// Fills tags and latest metrics, reusing two prepared statements over all runs.
void attach_details(sqlite::Db& db, std::vector<Run>& runs) {
    if (runs.empty()) {
        return;
    }
    sqlite::Stmt tags(db, "SELECT key, value FROM tags WHERE run_id=?");
    sqlite::Stmt latest(db,
                        "SELECT key, step, wall_time, value, min, max, count "
                        "FROM latest_metrics WHERE run_id=?");
    for (auto& r : runs) {
        tags.bind(1, r.id);
        while (tags.step("reading tags")) {
            r.tags[tags.col_text(0)] = tags.col_text(1);
        }
        tags.reset();
        latest.bind(1, r.id);
        while (latest.step("reading latest metrics")) {
            LatestMetric m;
            m.step = latest.col_int(1);
            m.wall_time = latest.col_double(2);
            m.value = latest.col_double(3);
            m.min = latest.col_double(4);
            m.max = latest.col_double(5);
            m.count = latest.col_int(6);
            r.latest[latest.col_text(0)] = m;
        }
        latest.reset();
    }
}

// Bucket arithmetic in 128 bits: (step - lo) * buckets overflows 64 bits for huge step ranges.
struct Bucketing {
    std::int64_t lo;
    __int128 n;  // hi - lo + 1
    __int128 b;
    bool small;  // (hi - lo + 1) * buckets fits in 64 bits: skip the slow 128-bit division
    std::int64_t index(std::int64_t step) const {
        if (small) {
            return (step - lo) * static_cast<std::int64_t>(b) / static_cast<std::int64_t>(n);
        }
        return static_cast<std::int64_t>((static_cast<__int128>(step) - lo) * b / n);
    }
    // First step of bucket i: lo + ceil(i*n/b). In 128 bits: the bucket after the last starts at
    // hi + 1, past INT64_MAX for a series ending there.
    __int128 start(std::int64_t i) const { return lo + (static_cast<__int128>(i) * n + b - 1) / b; }
};

void add_point(std::vector<Bucket>& out, const Bucketing& bk, std::int64_t step, double value) {
    const auto i = bk.index(step);
    if (out.empty() || out.back().index != i) {
        Bucket b;
        b.index = i;
        b.step_lo = static_cast<std::int64_t>(bk.start(i));
        b.step_hi = static_cast<std::int64_t>(bk.start(i + 1) - 1);
        b.first_step = step;
        b.first = value;
        b.min = b.max = std::numeric_limits<double>::quiet_NaN();
        out.push_back(b);
    }
    Bucket& b = out.back();
    b.last_step = step;
    b.last = value;
    if (!std::isnan(value)) {
        b.min = std::isnan(b.min) ? value : std::min(b.min, value);
        b.max = std::isnan(b.max) ? value : std::max(b.max, value);
    }
    ++b.count;
}

}  // namespace

std::map<std::string, std::string> flatten_config(std::string_view json_text, std::string_view what) {
    nlohmann::json j;
    try {
        // Depth-limited: flatten_into recurses once per level (a 100k-deep stored value from a
        // crafted bundle overflowed the stack of runs show, runs compare and mpwb report).
        j = parse_json_text(json_text, std::string(what));
    } catch (const JsonInputError& e) {
        throw StoreError(StoreError::Kind::Invalid, e.what());
    }
    std::map<std::string, std::string> out;
    flatten_into(j, "", out);
    return out;
}

std::vector<Run> RunStore::list_runs(const RunFilter& f) {
    std::string sql =
        std::string("SELECT ") + kRunColumns + " FROM runs r LEFT JOIN notes n ON n.run_id = r.id WHERE 1";
    std::vector<std::string> args;
    if (f.deleted_only) {
        sql += " AND r.deleted=1";
    } else if (!f.include_deleted) {
        sql += " AND r.deleted=0";
    }
    if (f.precision) {
        sql += " AND r.precision=?";
        args.push_back(*f.precision);
    }
    if (f.dataset) {
        sql += " AND r.dataset=?";
        args.push_back(*f.dataset);
    }
    if (f.status) {
        sql += " AND r.status=?";
        args.push_back(to_string(*f.status));
    }
    if (f.tag_key) {
        sql += " AND EXISTS (SELECT 1 FROM tags t WHERE t.run_id=r.id AND t.key=?";
        args.push_back(*f.tag_key);
        if (f.tag_value) {
            sql += " AND t.value=?";
            args.push_back(*f.tag_value);
        }
        sql += ")";
    }
    if (!f.text.empty()) {
        sql +=
            " AND (r.name LIKE ? ESCAPE '\\' OR coalesce(n.text,'') LIKE ? ESCAPE '\\'"
            " OR r.config_json LIKE ? ESCAPE '\\')";
        const auto p = like_pattern(f.text);
        args.insert(args.end(), {p, p, p});
    }
    sql += " ORDER BY r.created DESC, r.id DESC";
    if (f.limit > 0) {
        sql += " LIMIT " + std::to_string(f.limit);
    }
    sqlite::Stmt s(db_, sql);
    for (std::size_t i = 0; i < args.size(); ++i) {
        s.bind(static_cast<int>(i + 1), args[i]);
    }
    std::vector<Run> runs;
    while (s.step("listing runs")) {
        runs.push_back(read_run_row(s));
    }
    attach_details(db_, runs);
    return runs;
}

Run RunStore::get_run(std::int64_t run_id) {
    sqlite::Stmt s(db_, std::string("SELECT ") + kRunColumns +
                            " FROM runs r LEFT JOIN notes n ON n.run_id = r.id WHERE r.id=?");
    s.bind(1, run_id);
    if (!s.step("reading run")) {
        throw StoreError(StoreError::Kind::NotFound,
                         "run " + std::to_string(run_id) + " does not exist in " + path());
    }
    std::vector<Run> one{read_run_row(s)};
    s.reset();
    attach_details(db_, one);
    return std::move(one.front());
}

std::optional<std::int64_t> RunStore::find_run_by_uuid(const std::string& uuid) {
    sqlite::Stmt s(db_, "SELECT id FROM runs WHERE uuid=?");
    s.bind(1, uuid);
    if (s.step("finding run by uuid")) {
        return s.col_int(0);
    }
    return std::nullopt;
}

std::vector<std::string> RunStore::metric_keys(std::int64_t run_id) {
    sqlite::Stmt s(db_, "SELECT key FROM latest_metrics WHERE run_id=? ORDER BY key");
    s.bind(1, run_id);
    std::vector<std::string> keys;
    while (s.step("listing metric keys")) {
        keys.push_back(s.col_text(0));
    }
    return keys;
}

std::vector<MetricPoint> RunStore::series(std::int64_t run_id, const std::string& key,
                                          std::optional<std::int64_t> step_lo,
                                          std::optional<std::int64_t> step_hi) {
    sqlite::Stmt s(db_,
                   "SELECT step, wall_time, value FROM metrics WHERE run_id=? AND key=? "
                   "AND step BETWEEN ? AND ? ORDER BY step");
    s.bind(1, run_id).bind(2, key);
    s.bind(3, step_lo.value_or(std::numeric_limits<std::int64_t>::min()));
    s.bind(4, step_hi.value_or(std::numeric_limits<std::int64_t>::max()));
    std::vector<MetricPoint> out;
    while (s.step("reading series")) {
        out.push_back({s.col_int(0), s.col_double(1), s.col_double(2)});
    }
    return out;
}

std::vector<Bucket> RunStore::downsample(std::int64_t run_id, const std::string& key, int buckets,
                                         std::optional<std::int64_t> step_lo,
                                         std::optional<std::int64_t> step_hi) {
    if (buckets < 1) {
        throw StoreError(
            StoreError::Kind::Invalid,
            "downsample of '" + key + "' needs at least 1 bucket, got " + std::to_string(buckets));
    }
    // The series' own range comes from the two ends of the (run_id, key, step) index.
    auto end_step = [&](const char* order) -> std::optional<std::int64_t> {
        sqlite::Stmt s(db_, std::string("SELECT step FROM metrics WHERE run_id=? AND key=? "
                                        "ORDER BY step ") +
                                order + " LIMIT 1");
        s.bind(1, run_id).bind(2, key);
        if (s.step("reading series range")) {
            return s.col_int(0);
        }
        return std::nullopt;
    };
    const auto lo = step_lo ? step_lo : end_step("ASC");
    const auto hi = step_hi ? step_hi : end_step("DESC");
    std::vector<Bucket> out;
    if (!lo || !hi || *hi < *lo) {
        return out;
    }
    const __int128 span = static_cast<__int128>(*hi) - *lo + 1;
    const Bucketing bk{*lo, span, buckets, span * buckets < (static_cast<__int128>(1) << 62)};

    sqlite::Stmt blocks(db_,
                        "SELECT block, first_step, first_value, last_step, last_value, min, "
                        "max, count FROM metric_blocks WHERE run_id=? AND key=? "
                        "AND block BETWEEN ? AND ? ORDER BY block");
    sqlite::Stmt raw(db_,
                     "SELECT step, value FROM metrics WHERE run_id=? AND key=? "
                     "AND step BETWEEN ? AND ? ORDER BY step");
    blocks.bind(1, run_id).bind(2, key);
    blocks.bind(3, *lo >> kMetricBlockShift).bind(4, *hi >> kMetricBlockShift);
    while (blocks.step("downsampling")) {
        const auto first_step = blocks.col_int(1);
        const auto last_step = blocks.col_int(3);
        const auto count = blocks.col_int(7);
        // A block whose ends are out of order or whose count cannot fit between them (a damaged
        // or hand-made bundle) is read row by row.
        const bool count_fits =
            count >= 1 && static_cast<__int128>(count) <= static_cast<__int128>(last_step) - first_step + 1;
        if (first_step >= *lo && last_step <= *hi && first_step <= last_step && count_fits &&
            bk.index(first_step) == bk.index(last_step)) {
            // The whole block lies in one bucket: its summary is exact.
            add_point(out, bk, first_step, blocks.col_double(2));
            Bucket& b = out.back();
            b.last_step = last_step;
            b.last = blocks.col_double(4);
            const double mn = blocks.col_double(5), mx = blocks.col_double(6);
            // add_point counted the first value once already: replace with the block's figures.
            if (!std::isnan(mn)) {
                b.min = std::isnan(b.min) ? mn : std::min(b.min, mn);
                b.max = std::isnan(b.max) ? mx : std::max(b.max, mx);
            }
            b.count += count - 1;
            continue;
        }
        const std::int64_t block = blocks.col_int(0);
        // In 128 bits: the last block of a series ending near INT64_MAX ends past it.
        const __int128 block_steps = __int128{1} << kMetricBlockShift;
        const std::int64_t b_lo =
            static_cast<std::int64_t>(std::max<__int128>(*lo, static_cast<__int128>(block) * block_steps));
        const std::int64_t b_hi = static_cast<std::int64_t>(
            std::min<__int128>(*hi, (static_cast<__int128>(block) + 1) * block_steps - 1));
        raw.bind(1, run_id).bind(2, key).bind(3, b_lo).bind(4, b_hi);
        while (raw.step("downsampling")) {
            add_point(out, bk, raw.col_int(0), raw.col_double(1));
        }
        raw.reset();
    }
    return out;
}

std::vector<Event> RunStore::events(std::int64_t run_id, const std::string& kind) {
    sqlite::Stmt s(db_,
                   "SELECT id, step, time, kind, json FROM events WHERE run_id=? "
                   "AND (?2 = '' OR kind = ?2) ORDER BY step, id");
    s.bind(1, run_id).bind(2, kind);
    std::vector<Event> out;
    while (s.step("reading events")) {
        out.push_back({s.col_int(0), s.col_int(1), s.col_double(2), s.col_text(3), s.col_text(4)});
    }
    return out;
}

std::optional<std::pair<std::int64_t, std::vector<std::uint8_t>>> RunStore::boundary(std::int64_t run_id) {
    sqlite::Stmt s(db_, "SELECT step, blob FROM boundaries WHERE run_id=?");
    s.bind(1, run_id);
    if (!s.step("reading the decision boundary")) return std::nullopt;
    return std::make_pair(s.col_int(0), s.col_blob(1));
}

std::vector<Histogram> RunStore::histograms(std::int64_t run_id, std::optional<std::int64_t> step_lo,
                                            std::optional<std::int64_t> step_hi, const std::string& layer,
                                            const std::string& kind) {
    sqlite::Stmt s(db_,
                   "SELECT id, step, layer, kind, blob FROM histograms WHERE run_id=?1 "
                   "AND step BETWEEN ?2 AND ?3 AND (?4 = '' OR layer = ?4) "
                   "AND (?5 = '' OR kind = ?5) ORDER BY step, layer, kind, id");
    s.bind(1, run_id);
    s.bind(2, step_lo.value_or(std::numeric_limits<std::int64_t>::min()));
    s.bind(3, step_hi.value_or(std::numeric_limits<std::int64_t>::max()));
    s.bind(4, layer).bind(5, kind);
    std::vector<Histogram> out;
    while (s.step("reading histograms")) {
        out.push_back({s.col_int(0), s.col_int(1), s.col_text(2), s.col_text(3), s.col_blob(4)});
    }
    return out;
}

std::vector<ScalingStatsRecord> RunStore::scaling_stats(std::int64_t run_id) const {
    // A read-only open does not migrate: a file from before the table has no statistics.
    if (opened_version_ < kScalingStatsSchema && options_.read_only) return {};
    const bool recipe_columns = opened_version_ >= kScalingStatsRecipeSchema || !options_.read_only;
    sqlite::Stmt s(db_, "SELECT " + scaling_stats_columns(recipe_columns) +
                            " , id FROM scaling_stats WHERE run_id=? ORDER BY step, layer, operand, id");
    s.bind(1, run_id);
    std::vector<ScalingStatsRecord> out;
    while (s.step("reading scaling statistics")) {
        const std::string what = path() + ": table scaling_stats, row " + std::to_string(s.col_int(18));
        try {
            out.push_back(read_scaling_stats_row(s, what));
        } catch (const DataError& e) {
            throw StoreError(StoreError::Kind::Corrupt, e.what());
        }
    }
    return out;
}

std::vector<ConfigDiffEntry> RunStore::config_diff(const std::vector<std::int64_t>& run_ids) {
    std::vector<std::map<std::string, std::string>> flat;
    std::set<std::string> paths;
    sqlite::Stmt s(db_, "SELECT config_json FROM runs WHERE id=?");
    for (auto id : run_ids) {
        s.bind(1, id);
        if (!s.step("reading configuration")) {
            throw StoreError(StoreError::Kind::NotFound,
                             "run " + std::to_string(id) + " does not exist in " + path());
        }
        const std::string text = s.col_text(0);
        s.reset();
        flat.push_back(flatten_config(text, "configuration of run " + std::to_string(id)));
        for (const auto& [p, v] : flat.back()) {
            paths.insert(p);
        }
    }
    std::vector<ConfigDiffEntry> out;
    for (const auto& p : paths) {
        ConfigDiffEntry e{p, {}};
        bool differs = false;
        for (const auto& f : flat) {
            const auto it = f.find(p);
            e.values.push_back(it == f.end() ? std::nullopt : std::optional<std::string>(it->second));
            differs = differs || e.values.back() != e.values.front();
        }
        if (differs) {
            out.push_back(std::move(e));
        }
    }
    return out;
}

}  // namespace mpwb
