// libFuzzer harness: an IDX file of MNIST / Fashion-MNIST (core/data/idx_reader.cpp), raw or
// gzip (detected by its magic bytes), read as an image file and as a label file.
#include "core/data/idx_reader.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = mpwb::fuzz::write_input("data.idx", data, size);
    mpwb::fuzz::expect_app_errors([&] { (void)mpwb::read_idx_images(path); });
    mpwb::fuzz::expect_app_errors([&] { (void)mpwb::read_idx_labels(path); });
    return 0;
}
