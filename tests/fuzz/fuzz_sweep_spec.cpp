// libFuzzer harness: a sweep spec file (sessions/sweep_spec.cpp, `mpwb-cli sweep plan|run|task
// spec.json`): read through the depth-limited JSON reader, its base experiment resolved, its axes
// checked, and its runs planned the way `sweep plan` and `sweep task` plan them. Planning
// validates every run (settings and, on synthetic data, the network against the dataset's
// declared sizes), so a spec with many runs plans only its first and last. The spec as a sweep's
// record keeps it (self_contained_sweep_spec) must read back.
#include "sessions/sweep_spec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = mpwb::fuzz::write_input("spec.json", data, size);
    mpwb::fuzz::expect_app_errors([&] {
        const mpwb::SweepSpec spec = mpwb::read_sweep_spec_file(path);
        (void)mpwb::parse_sweep_spec(mpwb::self_contained_sweep_spec(spec), "stored spec");
        const std::int64_t runs = mpwb::sweep_run_count(spec);
        if (runs <= 4) {
            const auto plan = mpwb::plan_sweep(spec);
            (void)mpwb::sweep_plan_to_json(spec, plan).dump();
            for (const auto& run : plan) (void)mpwb::sweep_settings_text(run);
        } else {
            (void)mpwb::sweep_settings_text(mpwb::plan_sweep_run(spec, 0));
            (void)mpwb::sweep_settings_text(mpwb::plan_sweep_run(spec, runs - 1));
        }
    });
    return 0;
}
