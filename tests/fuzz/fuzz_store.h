// The run store side shared by the harnesses that import into a store (fuzz_bundle_import,
// fuzz_sweep_collect): one store for the whole process, what `runs show` and `runs compare`
// read back from every imported run, and the way back to an empty store after each input.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/common/json_input.h"
#include "core/nn/pytorch_export.h"
#include "sessions/run_bundle.h"
#include "sessions/run_query.h"
#include "tests/fuzz/fuzz_support.h"

namespace mpwb::fuzz {

// Every imported run with its configuration, events, histograms, metric series and the
// configuration diff, its scaling statistics, the sweeps the import carried, and its final
// weights through the PyTorch export (in memory; no file is written).
inline void read_back(RunStore& store, const ImportReport& report) {
    std::vector<std::int64_t> ids;
    for (const auto& run : report.imported) {
        ids.push_back(run.store_id);
        const Run r = store.get_run(run.store_id);
        (void)flatten_config(r.config_json);
        (void)store.events(run.store_id);
        (void)store.histograms(run.store_id);
        (void)store.scaling_stats(run.store_id);
        (void)store.boundary(run.store_id);
        (void)store.sweep_of_run(run.store_id);
        if (const auto weights = store.final_weights(run.store_id))
            (void)make_pytorch_export(parse_json_text(r.network_json, "network_json"), *weights, {});
        for (const auto& key : store.metric_keys(run.store_id)) (void)store.downsample(run.store_id, key, 50);
    }
    if (!ids.empty()) (void)store.config_diff(ids);
    (void)store.list_groups();
    for (const auto& sweep : store.list_sweeps()) (void)store.get_sweep(sweep.id);
}

// One store for the whole process, returned to empty after every input (empty_store): creating
// a fresh store per input cost 90 % of the time, and the way back to empty is itself app code
// worth fuzzing.
inline RunStore& store() {
    static RunStore* const instance = [] {
        const std::filesystem::path path = scratch_dir() / "store.sqlite";
        return new RunStore(path.string());
    }();
    return *instance;
}

// The imported runs trashed and purged, their groups deleted, every sweep removed.
inline void empty_store(RunStore& store, const ImportReport& report) {
    for (const auto& run : report.imported) store.soft_delete(run.store_id);
    const auto purged = store.purge();
    if (purged.purged != static_cast<int>(report.imported.size()) || !purged.still_running.empty()) {
        std::fprintf(stderr, "finding: purge removed %d of %zu imported runs\n", purged.purged,
                     report.imported.size());
        std::abort();
    }
    for (const std::int64_t group : report.groups) store.delete_group(group);
    // Sweeps are merged by uuid: one left behind would change how the next input imports.
    store.db().exec("DELETE FROM sweeps");
}

}  // namespace mpwb::fuzz
