// libFuzzer harness: importing a run bundle (sessions/run_bundle.cpp, `mpwb-cli runs import`)
// into an empty store, then reading back what `runs show` and `runs compare` read (fuzz_store.h):
// every imported run with its configuration, events, histograms, metric series and the
// configuration diff, its scaling statistics, the sweeps the bundle carried, and its final weights
// through the PyTorch export.
#include "tests/fuzz/fuzz_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bundle = mpwb::fuzz::write_input("input.mpwb", data, size);
    auto& store = mpwb::fuzz::store();
    mpwb::fuzz::expect_app_errors([&] {
        const mpwb::ImportReport report = mpwb::import_bundle(store, bundle);
        mpwb::fuzz::read_back(store, report);
        mpwb::fuzz::empty_store(store, report);
    });
    return 0;
}
