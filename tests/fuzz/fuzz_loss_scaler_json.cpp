// libFuzzer harness: the loss-scaler JSON of core/precision, both forms the app reads: a scaler
// configuration (a preset's "training.scaler", a settings change event) through
// loss_scaler_config_from_json, and a saved scaler state (a run's checkpoint) through
// LossScaler::restore_state.
#include <nlohmann/json.hpp>

#include "core/precision/loss_scaler.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// The app parses JSON with a nesting-depth limit before any reader sees it (DESIGN.md, "Limits
// and hostile input"), so deeper values never reach these functions; the harness does the same.
constexpr int kMaxDepth = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    bool too_deep = false;
    const auto depth_limit = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxDepth) too_deep = true;
        return !too_deep;
    };
    const nlohmann::json j = nlohmann::json::parse(data, data + size, depth_limit, /*allow_exceptions=*/false);
    if (j.is_discarded() || too_deep) return 0;  // not JSON: the caller's parse error
    mpwb::fuzz::expect_app_errors([&] { (void)mpwb::loss_scaler_config_from_json(j); });
    mpwb::fuzz::expect_app_errors([&] {
        mpwb::LossScaler scaler{mpwb::LossScalerConfig{}};
        scaler.restore_state(j);
    });
    return 0;
}
