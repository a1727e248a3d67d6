// libFuzzer harness: a network file, as `mpwb-cli train --network FILE` and the workbench's
// Open... read it (Network::load_file), then built for the input shapes the app trains on (2-D
// points, 28x28 images, and windows of 64 token ids with a byte vocabulary as the dataset's
// classes) at the default training batch, which checks every layer's shape and its sizes against
// the network limits before anything is allocated.
#include "core/nn/network.h"
#include "core/train/train_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = mpwb::fuzz::write_input("network.json", data, size);
    for (const mpwb::Shape& input : {mpwb::Shape{2}, mpwb::Shape{1, 28, 28}, mpwb::Shape{64}}) {
        mpwb::fuzz::expect_app_errors([&] {
            mpwb::Network net = mpwb::Network::load_file(path);
            net.build(input, mpwb::TrainConfig{}.batch_size, input.size() == 1 && input[0] == 64 ? 256 : 10);
        });
    }
    return 0;
}
