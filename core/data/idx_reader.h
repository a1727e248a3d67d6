// Reader for the IDX format of MNIST and Fashion-MNIST (yann.lecun.com/exdb/mnist): big-endian
// header, then unsigned bytes. Reads raw and gzip files (zlib), whole-file into memory so loading
// all 70k images takes a fraction of a second, and checks everything a corrupt download can get
// wrong: magic number, dimensions, exact file length, label range, image/label count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace mpwb {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // ubyte, 3 dimensions
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // ubyte, 1 dimension

struct IdxImages {
    int64_t count = 0, rows = 0, cols = 0;
    std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};

// Whole content of a file, gunzipped when it is gzip (detected by its magic bytes, not its name).
// Throws DataError naming the file when it cannot be opened or the gzip stream is corrupt.
// Sets *gzip_truncated (if given) when a gzip stream ended early rather than failing, so the
// caller can report the exact byte count it expected.
std::vector<uint8_t> read_file_bytes(const std::string& path, bool* gzip_truncated = nullptr);

// Throw DataError naming the file and the problem (bad magic, truncated with expected and actual
// byte counts, trailing bytes, zero dimensions, label >= max_label).
IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path, int max_label = 10);

// Loads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte from folder, each raw or with ".gz". Pixels scaled to [0,1],
// sample_shape {1, rows, cols}, 10 classes; Fashion-MNIST class names when the folder name
// contains "fashion", else "0".."9". Throws DataError naming a missing file or any mismatch.
Dataset load_idx_dataset(const std::string& folder);

// Debian's dataset-fashion-mnist package location.
inline constexpr const char* kDebianFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace mpwb
