// HparamData: what the hyperparameter view shows for a set of stored runs: each run's settings
// that differ across the set (RunStore::config_diff) and its summary figures (run_figures.h, so
// a run reads the same as in the run browser and the report). Also the list of figures the
// table has columns for and the plot can colour by, each with its value and display text.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sessions/run_figures.h"
#include "sessions/run_types.h"

namespace mpwb {

class RunStore;

struct HparamRun {
    std::int64_t id = 0;
    std::string name;
    RunStatus status = RunStatus::Finished;
    RunFigures figures;
};

struct HparamData {
    std::vector<HparamRun> runs;
    // Settings whose values differ; values[i] belongs to runs[i].
    std::vector<ConfigDiffEntry> settings;
    // Set when the data is a sweep's.
    std::optional<std::int64_t> sweep_id;
    // A sweep's axes as its spec names them ("lr", "scaler.init_scale"): the settings the view
    // shows first (a precision axis also changes derived settings, which start hidden).
    std::vector<std::string> swept;
};

// A summary figure: its column header, its value for a run (nullopt when not measured), its
// display text, and whether higher is better (the plot's colour scale and "best" read it).
struct HparamFigure {
    const char* header;
    std::optional<double> (*value)(const RunFigures&);
    std::string (*text)(double);
    bool higher_is_better;
};
const std::vector<HparamFigure>& hparam_figures();

// Reads the runs (in the order given) and their differing settings. Throws StoreError.
HparamData load_hparam_data(RunStore& store, const std::vector<std::int64_t>& run_ids);
// The runs of a sweep that trained so far, in planned-index order. Throws StoreError.
HparamData load_sweep_hparam_data(RunStore& store, std::int64_t sweep_id);

}  // namespace mpwb
