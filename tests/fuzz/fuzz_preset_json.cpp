// libFuzzer harness: a preset file (resources/presets.cpp, `mpwb-cli train --preset-file FILE`):
// its training settings go through train_config_from_json and TrainConfig::validate, and its
// network through the editor's per-layer check (Network::inspect) for 28x28 images.
#include "resources/presets.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = mpwb::fuzz::write_input("preset.json", data, size);
    mpwb::fuzz::expect_app_errors([&] {
        const mpwb::Preset preset = mpwb::load_preset_file(path);
        preset.training.validate();
        (void)mpwb::Network::inspect(preset.network, mpwb::Shape{1, 28, 28});
    });
    return 0;
}
