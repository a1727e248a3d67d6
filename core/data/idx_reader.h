// Reader for the IDX format of MNIST and Fashion-MNIST (yann.lecun.com/exdb/mnist): big-endian
// header, then unsigned bytes. Reads raw and gzip files (zlib), whole-file into memory so loading
// all 70k images takes a fraction of a second, and checks everything a corrupt download can get
// wrong: magic number, dimensions, exact file length, label range, image/label count.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace mpwb {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // ubyte, 3 dimensions
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // ubyte, 1 dimension
// Most values (pixels, or labels) one IDX file may hold: 2 GiB once converted to floats; the
// Fashion-MNIST training images are 47 million. Checked from the header, before reading the body.
inline constexpr int64_t kIdxMaxElements = int64_t{1} << 29;

struct IdxImages {
    int64_t count = 0, rows = 0, cols = 0;
    std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};

// Content of a file, gunzipped when it is gzip (detected by its magic bytes, not its name), at
// most max_bytes of it: a reader that knows from the header how much it needs never inflates
// more. Throws DataError naming the file when it is missing, a folder, cannot be opened or the
// gzip stream is corrupt. Sets *gzip_truncated (if given) when a gzip stream ended early rather
// than failing, so the caller can report the exact byte count it expected.
std::vector<uint8_t> read_file_bytes(const std::string& path, bool* gzip_truncated = nullptr,
                                     size_t max_bytes = SIZE_MAX);

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
