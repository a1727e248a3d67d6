// libFuzzer harness: importing a run bundle (sessions/run_bundle.cpp, `mpwb-cli runs import`)
// into a fresh store, then reading back what `runs show` and `runs compare` read: every
// imported run with its configuration, events, histograms, metric series and the
// configuration diff.
#include <filesystem>

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
        (void)store.boundary(run.store_id);
        for (const auto& key : store.metric_keys(run.store_id)) (void)store.downsample(run.store_id, key, 50);
    }
    if (!ids.empty()) (void)store.config_diff(ids);
    (void)store.list_groups();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bundle = mpwb::fuzz::write_input("input.mpwb", data, size);
    const std::filesystem::path store_path = mpwb::fuzz::scratch_dir() / "store.sqlite";
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        std::filesystem::remove(store_path.string() + suffix);
    mpwb::fuzz::expect_app_errors([&] {
        mpwb::RunStore store(store_path.string());
        read_back(store, mpwb::import_bundle(store, bundle));
    });
    return 0;
}
