// libFuzzer harness: the loss-scaler JSON of core/precision, both forms the app reads: a scaler
// configuration (a preset's "training.scaler", a settings change event) through
// loss_scaler_config_from_json, and a saved scaler state (a run's checkpoint) through
// LossScaler::restore_state.
#include <string_view>

#include "core/common/json_input.h"
#include "core/precision/loss_scaler.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // The app's one JSON reader (depth and size limits) comes first, as it does for every
    // file, bundle and stored configuration; its JsonInputError is an expected answer too.
    mpwb::fuzz::expect_app_errors([&] {
        const nlohmann::json j =
            mpwb::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input");
        mpwb::fuzz::expect_app_errors([&] { (void)mpwb::loss_scaler_config_from_json(j); });
        mpwb::LossScaler scaler{mpwb::LossScalerConfig{}};
        scaler.restore_state(j);
    });
    return 0;
}
