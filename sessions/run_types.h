// Plain data types of the run store: what a run is, the rows it owns (metrics, histograms,
// events), the summaries the run list shows, and the filter and result types of the queries.
// No SQLite here, so the GUI and the CLI can use them without touching the C API.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

// The status enum is shared with the engine (one type for trainer and store); header only.
#include "core/train/run_status.h"

namespace mpwb {

// "RUNNING", "FINISHED", ... as stored in the runs table: the engine's names (run_status_name).
inline const char* to_string(RunStatus status) { return run_status_name(status); }
// Parses the stored text (case-insensitive); throws StoreError(Invalid) naming the text.
RunStatus parse_run_status(const std::string& text);

// What the trainer knows when a run starts.
struct RunInfo {
    std::string uuid;  // generated when empty
    std::string name;
    std::string config_json = "{}";
    std::string network_json = "{}";
    std::string dataset;
    std::string precision;
    std::string backend;
    std::string device;
    std::string versions_json = "{}";  // library and driver versions
    std::string machine;
    std::optional<std::int64_t> seed;
};

// Last value and running min/max/count of one metric, kept by the writer.
struct LatestMetric {
    std::int64_t step = 0;
    double wall_time = 0;
    double value = 0;  // NaN when the last value was NaN (SQLite stores NaN as NULL)
    double min = 0;    // over finite and infinite values; NaN when every value was NaN
    double max = 0;
    std::int64_t count = 0;
};

struct Run {
    std::int64_t id = 0;
    std::string uuid;
    std::string name;
    RunStatus status = RunStatus::Running;
    std::string config_json;
    std::string network_json;
    std::string dataset;
    std::string precision;
    std::string backend;
    std::string device;
    std::string versions_json;
    std::string machine;
    std::optional<std::int64_t> seed;
    double created = 0;  // seconds since the Unix epoch
    std::optional<double> started;
    std::optional<double> ended;
    bool deleted = false;
    std::optional<std::int64_t> owner_pid;
    std::string owner_host;
    std::string note;
    std::map<std::string, std::string> tags;
    std::map<std::string, LatestMetric> latest;
};

struct MetricPoint {
    std::int64_t step = 0;
    double wall_time = 0;
    double value = 0;
};

struct Event {
    std::int64_t id = 0;
    std::int64_t step = 0;
    double time = 0;
    std::string kind;
    std::string json;
};

struct Histogram {
    std::int64_t id = 0;
    std::int64_t step = 0;
    std::string layer;
    std::string kind;
    std::vector<std::uint8_t> blob;
};

// One bucket of a downsampled series: every point whose step falls in [step_lo, step_hi].
struct Bucket {
    std::int64_t index = 0;
    std::int64_t step_lo = 0;  // bucket bounds (not the steps present)
    std::int64_t step_hi = 0;
    std::int64_t first_step = 0;
    double first = 0;
    std::int64_t last_step = 0;
    double last = 0;
    double min = 0;  // NaN values are ignored; NaN when the bucket holds only NaN
    double max = 0;
    std::int64_t count = 0;
};

struct RunFilter {
    std::optional<std::string> precision;
    std::optional<std::string> dataset;
    std::optional<RunStatus> status;
    std::optional<std::string> tag_key;    // runs that carry this tag ...
    std::optional<std::string> tag_value;  // ... with this value (any value when unset)
    std::string text;                      // substring of name, note or config (case-insensitive)
    bool include_deleted = false;
    bool deleted_only = false;  // the trash view
    int limit = 0;              // 0: no limit; newest first
};

// Parses "key" or "key=value" into the tag fields of a filter.
void set_tag_filter(RunFilter& filter, const std::string& expression);

// A configuration key (flattened JSON path such as "optimizer.lr" or "layers[2].units") whose
// value differs between the compared runs; values are JSON text, nullopt where a run lacks it.
struct ConfigDiffEntry {
    std::string path;
    std::vector<std::optional<std::string>> values;
};

struct ComparisonGroup {
    std::int64_t id = 0;
    std::string name;
    double created = 0;
    std::vector<std::int64_t> run_ids;
};

// A sweep as the store keeps it: its spec (docs/SWEEPS.md) and the run of each planned index
// that has one so far.
struct SweepRecord {
    std::int64_t id = 0;
    std::string uuid;  // the same in every task database of one sweep, so they collect into one
    std::string name;
    std::string spec_json;
    std::int64_t run_count = 0;  // planned runs
    double created = 0;
    struct Member {
        std::int64_t index = 0;  // the planned run's index (0-based, as `sweep plan` lists it)
        std::int64_t run_id = 0;
    };
    std::vector<Member> runs;  // ordered by index
};

}  // namespace mpwb
