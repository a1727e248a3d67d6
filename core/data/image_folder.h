// Reader for image-folder datasets: a root folder with one sub-folder per class, holding PNG and
// JPEG files (recognised by their content, not their names), decoded with stb_image and resized
// with stb_image_resize, both from Debian's libstb-dev. Every size is checked before it is
// allocated: the image's dimensions from its header before it is decoded, the number of files
// and their bytes while the folder is listed, the total values before the tensors exist. Nothing
// is written into the folder.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace mpwb {

// What to do with an image whose size differs from the chosen one.
enum class SizeMismatch {
    Resize,  // resize it to the chosen size
    Error,   // refuse the dataset, naming the file and both sizes
};

// "resize" or "error"; throws ConfigError naming `field` and the accepted names.
SizeMismatch parse_size_mismatch(const std::string& name, const std::string& field = "size_mismatch");

// Bounds on what one folder may make the reader do; the defaults fit any dataset that fits the
// 2 GiB of floats the IDX reader allows too. Tests lower them.
struct ImageFolderLimits {
    int64_t max_entries = 1'000'000;               // directory entries listed, images or not
    int max_classes = 1000;                        // class sub-folders
    int64_t max_image_side = 16384;                // height or width in the file's header
    int64_t max_image_pixels = int64_t{1} << 26;   // height * width in the file's header
    uint64_t max_file_bytes = uint64_t{64} << 20;  // one image file
    uint64_t max_total_bytes = uint64_t{4} << 30;  // all image files together
    int64_t max_values = int64_t{1} << 29;         // N * C * H * W floats of the dataset
};

// How each image becomes a sample.
struct ImageSampleOptions {
    int height = 28, width = 28;
    int channels = 1;  // 1: grayscale (stb's luminance of RGB), 3: RGB; alpha is dropped
    SizeMismatch mismatch = SizeMismatch::Resize;
};

// Largest chosen height or width: a sample of 4096x4096x3 is already 200 MB of floats.
inline constexpr int kImageMaxSide = 4096;

// ConfigError naming the field ("<where>image_height must be 1..4096, gets 0") unless height and
// width are in 1..kImageMaxSide and channels is 1 or 3. where prefixes the field names
// ("dataset.").
void check_image_sample_options(const ImageSampleOptions& options, const std::string& where = "");

struct ImageFolderOptions {
    ImageSampleOptions sample;
    double test_ratio = 0.2;  // per class, chosen by a seeded shuffle; 0 < r < 1
    uint64_t seed = 1;
    ImageFolderLimits limits;
};

// What listing a folder finds, without decoding anything.
struct ImageFolderScan {
    std::vector<std::string> class_names;         // sorted sub-folder names, printable_text
    std::vector<std::vector<std::string>> files;  // per class, sorted paths of PNG and JPEG files
    int64_t ignored_files = 0;                    // entries that are neither (notes, hidden files,
                                                  // nested folders, files beside the class folders)
    uint64_t image_bytes = 0;                     // total size of the image files

    int64_t image_count() const;
};

// Lists root. Throws DataError naming the folder or file and the problem: root missing or not
// a folder, an entry that cannot be examined (broken link, link loop, no permission), a file
// named .png/.jpg/.jpeg that is not PNG or JPEG (or is empty), or is no regular file at all (a
// FIFO, folder or device, or a link to one: told from its type, never opened), a class folder
// without images, fewer than 2 classes, or a limit passed (with the limit). Every name in a
// message is printable_text (core/common/printable.h).
ImageFolderScan scan_image_folder(const std::string& root, const ImageFolderLimits& limits = {});

// One image file's bytes as a sample: channels x height x width floats in [0, 1] (CHW, like the
// IDX images' {1, rows, cols}). name is the file's path for messages, as read from the folder
// (it is made printable here). Throws DataError naming the file: not PNG or JPEG, dimensions
// over the limits (read from the PNG's IHDR or the JPEG's frame header, before stb_image),
// truncated or corrupt data, or a size other than the chosen one under SizeMismatch::Error.
std::vector<float> decode_image_sample(std::span<const uint8_t> bytes, const std::string& name,
                                       const ImageSampleOptions& options,
                                       const ImageFolderLimits& limits = {});

// The whole dataset: sample_shape {channels, height, width}, class names from the sub-folders,
// every class split test_ratio / rest by Rng(seed), pixel values in [0, 1] (normalisation is the
// caller's, as for the other sources). Throws DataError as scan_image_folder and
// decode_image_sample do, and ConfigError for options out of range.
Dataset load_image_folder(const std::string& root, const ImageFolderOptions& options = {});

}  // namespace mpwb
