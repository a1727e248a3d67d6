// libFuzzer harness: importing a run bundle (sessions/run_bundle.cpp, `mpwb-cli runs import`)
// into an empty store, then reading back what `runs show` and `runs compare` read: every
// imported run with its configuration, events, histograms, metric series and the
// configuration diff, its scaling statistics, the sweeps the bundle carried, and its final weights
// through the PyTorch export.
#include <filesystem>

#include "core/common/json_input.h"
#include "core/nn/pytorch_export.h"
#include "sessions/run_bundle.h"
#include "sessions/run_query.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

void read_back(mpwb::RunStore& store, const mpwb::ImportReport& report) {
    std::vector<std::int64_t> ids;
    for (const auto& run : report.imported) {
        ids.push_back(run.store_id);
        const mpwb::Run r = store.get_run(run.store_id);
        (void)mpwb::flatten_config(r.config_json);
        (void)store.events(run.store_id);
        (void)store.histograms(run.store_id);
        (void)store.scaling_stats(run.store_id);
        (void)store.boundary(run.store_id);
        (void)store.sweep_of_run(run.store_id);
        // The final weights as the PyTorch export reads them (in memory; no file is written).
        if (const auto weights = store.final_weights(run.store_id))
            (void)mpwb::make_pytorch_export(mpwb::parse_json_text(r.network_json, "network_json"), *weights,
                                            {});
        for (const auto& key : store.metric_keys(run.store_id)) (void)store.downsample(run.store_id, key, 50);
    }
    if (!ids.empty()) (void)store.config_diff(ids);
    (void)store.list_groups();
    for (const auto& sweep : store.list_sweeps()) (void)store.get_sweep(sweep.id);
}

// One store for the whole process, returned to empty after every input (the imported runs
// trashed and purged, their groups deleted): creating a fresh store per input cost 90 % of the
// time, and the way back to empty is itself app code worth fuzzing.
mpwb::RunStore& store() {
    static mpwb::RunStore* const instance = [] {
        const std::filesystem::path path = mpwb::fuzz::scratch_dir() / "store.sqlite";
        return new mpwb::RunStore(path.string());
    }();
    return *instance;
}

void empty_store(mpwb::RunStore& store, const mpwb::ImportReport& report) {
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bundle = mpwb::fuzz::write_input("input.mpwb", data, size);
    mpwb::fuzz::expect_app_errors([&] {
        const mpwb::ImportReport report = mpwb::import_bundle(store(), bundle);
        read_back(store(), report);
        empty_store(store(), report);
    });
    return 0;
}
