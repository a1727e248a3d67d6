// libFuzzer harness: one image file of an image-folder dataset (core/data/image_folder.cpp).
// The bytes are decoded as a sample (stb_image's header read, the size checks, decoding and
// resizing) at a size that resizes and at one that refuses other sizes, then read as the app
// does: placed in a class folder of a two-class folder that is listed, split and loaded.
#include <filesystem>

#include "core/data/image_folder.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// Smaller than the reader's defaults, so a header that claims a large image stays well inside
// the harness's 2 GB and 10 s; the checks are the same.
mpwb::ImageFolderLimits fuzz_limits() {
    mpwb::ImageFolderLimits limits;
    limits.max_image_side = 4096;
    limits.max_image_pixels = int64_t{1} << 22;
    return limits;
}

// root/a/x.png and root/a/y.jpg hold the input, root/b/0.png a valid 1x1 image: class a has the
// two images the split needs for a test sample.
std::string image_folder_with(const uint8_t* data, size_t size) {
    namespace fs = std::filesystem;
    static const uint8_t kOnePixelPng[] = {
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00,
        0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x3A, 0x7E, 0x9B, 0x55, 0x00,
        0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01,
        0x48, 0xAF, 0xA4, 0x71, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82};
    const fs::path root = mpwb::fuzz::scratch_dir() / "images";
    static const bool made = [&] {  // once: the folders and the valid image of class b
        fs::create_directories(root / "a");
        fs::create_directories(root / "b");
        mpwb::fuzz::write_input("images/b/0.png", kOnePixelPng, sizeof kOnePixelPng);
        return true;
    }();
    (void)made;
    // Written, not copied: copy_file's sendfile can fail with EINTR under libFuzzer's timer.
    mpwb::fuzz::write_input("images/a/x.png", data, size);
    mpwb::fuzz::write_input("images/a/y.jpg", data, size);
    return root.string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const mpwb::ImageFolderLimits limits = fuzz_limits();
    const std::span<const uint8_t> bytes(data, size);
    mpwb::fuzz::expect_app_errors([&] {
        (void)mpwb::decode_image_sample(bytes, "input", {.height = 7, .width = 5, .channels = 3}, limits);
    });
    mpwb::fuzz::expect_app_errors([&] {
        (void)mpwb::decode_image_sample(
            bytes, "input", {.height = 4, .width = 4, .channels = 1, .mismatch = mpwb::SizeMismatch::Error},
            limits);
    });
    mpwb::ImageFolderOptions options;
    options.sample = {.height = 6, .width = 6, .channels = 1};
    options.limits = limits;
    const std::string root = image_folder_with(data, size);
    mpwb::fuzz::expect_app_errors([&] { (void)mpwb::load_image_folder(root, options); });
    return 0;
}
