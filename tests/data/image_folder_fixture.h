// Image folders made by tests: class-dependent patterns written as PNG and JPEG with
// stb_image_write (Debian's libstb-dev), so the reader's tests and the training test build the
// same kind of data without any file in the repository. Include in one file per test program
// (it compiles stb_image_write's implementation, static to that file).
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/train/train_config.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

namespace mpwb::test {

// Three patterns a small network tells apart at once: horizontal stripes, vertical stripes,
// checkerboard (class % 3), with a small per-image, per-pixel variation so images differ.
inline uint8_t class_pixel(int cls, int index, int row, int col, int channel) {
    const bool bright = cls % 3 == 0   ? (row / 2) % 2 == 0
                        : cls % 3 == 1 ? (col / 2) % 2 == 0
                                       : (row + col) % 2 == 0;
    return static_cast<uint8_t>((bright ? 200 : 40) + (index * 7 + row + col * 3 + channel * 5) % 16);
}

// Interleaved (HWC) pixels of one image, as stb_image_write takes them.
inline std::vector<uint8_t> class_image(int cls, int index, int height, int width, int channels) {
    std::vector<uint8_t> px;
    for (int r = 0; r < height; ++r)
        for (int c = 0; c < width; ++c)
            for (int ch = 0; ch < channels; ++ch) px.push_back(class_pixel(cls, index, r, c, ch));
    return px;
}

inline bool write_png(const std::string& path, int height, int width, int channels,
                      const std::vector<uint8_t>& px) {
    return stbi_write_png(path.c_str(), width, height, channels, px.data(), width * channels) != 0;
}

inline bool write_jpg(const std::string& path, int height, int width, int channels,
                      const std::vector<uint8_t>& px) {
    return stbi_write_jpg(path.c_str(), width, height, channels, px.data(), 95) != 0;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct ImageFolderSpec {
    std::vector<std::string> classes{"a_rows", "b_columns", "c_checker"};
    int per_class = 6;
    int height = 10, width = 10, channels = 1;
    bool jpeg_too = true;  // odd-numbered images as JPEG, even as PNG
};

// Writes root/<class>/<i>.png (or .jpg); returns false when a file could not be written.
inline bool write_image_folder(const std::string& root, const ImageFolderSpec& spec) {
    for (size_t k = 0; k < spec.classes.size(); ++k) {
        const std::filesystem::path dir = std::filesystem::path(root) / spec.classes[k];
        std::filesystem::create_directories(dir);
        for (int i = 0; i < spec.per_class; ++i) {
            const auto px = class_image(static_cast<int>(k), i, spec.height, spec.width, spec.channels);
            const bool jpeg = spec.jpeg_too && i % 2 == 1;
            const std::string path = (dir / (std::to_string(i) + (jpeg ? ".jpg" : ".png"))).string();
            if (!(jpeg ? write_jpg : write_png)(path, spec.height, spec.width, spec.channels, px))
                return false;
        }
    }
    return true;
}

// The settings that load root as an image folder of size x size images with `channels`.
inline DatasetSpec image_folder_dataset(const std::string& root, int size, int channels) {
    DatasetSpec spec;
    spec.kind = "image-folder";
    spec.path = root;
    spec.image_height = size;
    spec.image_width = size;
    spec.channels = channels;
    return spec;
}

}  // namespace mpwb::test
