// Sweep specifications (docs/SWEEPS.md): a base experiment (a preset, or a network plus training
// settings) and axes over any training setting or over named network variants, expanded as a grid
// or by seeded random sampling into planned runs, each a Preset (network and TrainConfig) plus the
// settings it varies. Shared by `mpwb-cli sweep` and the workbench, so it has no Qt. Every planned
// run is validated as the trainer would (train_config_from_json, TrainConfig::validate, the network
// checked against its dataset's declared shape at the trainer's batch) so a bad value is found at
// plan time, and every error names the spec file, the field by its JSON path and the problem.
// What a plan may cost is bounded before anything is built (kSweepMaxAxes, kSweepMaxPlanBytes):
// a spec file cannot make planning take unbounded time or memory.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "resources/presets.h"

namespace mpwb {

inline constexpr std::int64_t kSweepDefaultMaxRuns = 256;
inline constexpr std::int64_t kSweepHardMaxRuns = 10000;
// More axes than there are settings to sweep (no two axes may sweep one setting); the overlap
// check compares every pair, so their number is bounded before it runs.
inline constexpr std::int64_t kSweepMaxAxes = 64;
// What the planned runs hold at once: every run keeps its network description and the values of
// its axes. Counted as bytes of JSON text, runs x (the largest network + the largest value of each
// axis), and refused over this limit before any network is built.
inline constexpr std::int64_t kSweepMaxPlanBytes = std::int64_t{64} << 20;

// A numeric range of a random axis: {"min": a, "max": b, "log": true}. Integer when both bounds
// are integers.
struct SweepRange {
    double min = 0;
    double max = 0;
    bool log = false;
    bool integer = false;
};

struct SweepAxis {
    std::string setting;                 // a TrainConfig JSON path ("lr", "optimizer.kind") or "network"
    std::vector<nlohmann::json> values;  // as written; a network variant by its name
    std::optional<SweepRange> range;     // random sampling only, instead of values
    // "network" axes: the network description of each value
    std::vector<nlohmann::json> networks;
};

enum class SweepMethod { Grid, Random };

struct SweepSpec {
    std::string origin;  // "sweep spec /path/a.json": how messages name the spec
    std::string name;
    std::string uuid;       // optional: the sweep's identity across task databases
    nlohmann::json source;  // the spec as written
    // A "preset" file's content as read (null otherwise): what self_contained_sweep_spec stores.
    nlohmann::json preset_file;
    Preset base;  // the base experiment with the spec's "training" overrides applied
    std::vector<SweepAxis> axes;
    SweepMethod method = SweepMethod::Grid;
    std::int64_t samples = 0;         // random: runs drawn
    std::uint64_t sampling_seed = 0;  // random: "seed" of the spec (not the training seed)
    std::int64_t max_runs = kSweepDefaultMaxRuns;
};

// One value a planned run takes on one axis.
struct SweepSetting {
    std::string setting;
    nlohmann::json value;  // a network variant: its name
};

struct PlannedRun {
    std::int64_t index = 0;
    std::vector<SweepSetting> settings;  // one per axis, in axis order
    Preset preset;                       // what the run trains: network and settings
};

// Reads and checks a spec (JSON through the depth-limited reader). `base_dir` resolves a relative
// "preset" file path (the spec file's folder). ConfigError "<origin>: <field>: <problem>", also
// for a plan over kSweepMaxAxes or kSweepMaxPlanBytes (with the numbers and the limit).
SweepSpec parse_sweep_spec(const nlohmann::json& spec, const std::string& origin,
                           const std::string& base_dir = ".");
SweepSpec read_sweep_spec_file(const std::string& path);

// The spec as a sweep's record keeps it and its tasks plan from it: as written, with a "preset"
// file replaced by the preset's content (a "preset" object), so that what the tasks train cannot
// change with the file after the sweep started.
nlohmann::json self_contained_sweep_spec(const SweepSpec& spec);

// How many runs the spec plans (grid: the product of the axis sizes; random: samples).
std::int64_t sweep_run_count(const SweepSpec& spec);
// Every planned run, each validated; ConfigError naming the run and its settings otherwise.
std::vector<PlannedRun> plan_sweep(const SweepSpec& spec);
// Planned run `index` alone (what a task trains); ConfigError for an index outside the plan.
PlannedRun plan_sweep_run(const SweepSpec& spec, std::int64_t index);

// A setting's value as the plan table and run names show it: numbers shortest, strings bare.
std::string sweep_value_text(const nlohmann::json& value);
// "lr=0.01 precision=fp16": the varied settings of a run.
std::string sweep_settings_text(const PlannedRun& run);
// The plan as JSON: {"name", "method", "runs": N, "axes": [...], "plan": [{"index", "settings": {...}}]}.
nlohmann::json sweep_plan_to_json(const SweepSpec& spec, const std::vector<PlannedRun>& plan);

}  // namespace mpwb
