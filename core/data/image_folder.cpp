// Image-folder reader. The folder is listed first (names, sizes and the first bytes of every
// file, so a wrong file is named before minutes of decoding), then the split is drawn, then each
// image is decoded straight into its row of the train or test tensor. Only regular files are
// opened (a FIFO would block) and only one level below the class folders is read, so a link
// loop can make an entry unreadable but never an endless walk.
#include "core/data/image_folder.h"

#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string_view>

#include "core/common/checked_arith.h"
#include "core/common/error.h"
#include "core/common/input_file.h"
#include "core/common/printable.h"
#include "core/common/rng.h"
#include "core/data/idx_reader.h"

namespace mpwb {
namespace {

namespace fs = std::filesystem;

enum class ImageFormat { None, Png, Jpeg };

constexpr std::array<uint8_t, 8> kPngSignature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr size_t kSniffBytes = kPngSignature.size();

ImageFormat sniff_format(std::span<const uint8_t> head) {
    if (head.size() >= kPngSignature.size() &&
        std::equal(kPngSignature.begin(), kPngSignature.end(), head.begin()))
        return ImageFormat::Png;
    if (head.size() >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF) return ImageFormat::Jpeg;
    return ImageFormat::None;
}

std::string quoted(const fs::path& path) { return quoted_text(path.string()); }

bool has_image_extension(const fs::path& path) {
    std::string ext = path.extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

// The first bytes of a regular file (fewer when it is shorter).
std::vector<uint8_t> read_head(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError("cannot open " + quoted(path) + " for reading");
    std::vector<uint8_t> head(kSniffBytes);
    in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    return head;
}

// Counts listed entries against the limit, whichever folder they are in.
class EntryBudget {
public:
    EntryBudget(const fs::path& root, int64_t limit) : root_(root), limit_(limit) {}
    void take() {
        if (++used_ > limit_)
            throw DataError("image folder " + quoted(root_) + " has more than " + std::to_string(limit_) +
                            " entries (the limit of one image folder)");
    }

private:
    fs::path root_;
    int64_t limit_, used_ = 0;
};

// The entries of a folder, sorted by name (bytes), each counted against the budget.
std::vector<fs::directory_entry> sorted_entries(const fs::path& folder, EntryBudget& budget) {
    std::error_code ec;
    fs::directory_iterator it(folder, ec), end;
    std::vector<fs::directory_entry> entries;
    for (; !ec && it != end; it.increment(ec)) {
        budget.take();
        entries.push_back(*it);
    }
    if (ec) throw DataError("cannot list folder " + quoted(folder) + ": " + ec.message());
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
    return entries;
}

// The entry's type, following links; DataError for a broken link, a loop or no permission.
fs::file_type entry_type(const fs::directory_entry& entry) {
    std::error_code ec;
    const fs::file_status status = entry.status(ec);
    if (ec) throw DataError("cannot examine " + quoted(entry.path()) + ": " + ec.message());
    return status.type();
}

bool is_hidden(const fs::path& path) { return path.filename().string().starts_with('.'); }

// One file of a class folder: added to `files` when its content is PNG or JPEG, counted as
// ignored otherwise; a file named as an image that is not one is an error.
void scan_file(const fs::path& path, const ImageFolderLimits& limits, ImageFolderScan& scan,
               std::vector<std::string>& files) {
    std::error_code ec;
    const uint64_t bytes = fs::file_size(path, ec);
    if (ec) throw DataError("cannot examine " + quoted(path) + ": " + ec.message());
    const ImageFormat format = bytes == 0 ? ImageFormat::None : sniff_format(read_head(path));
    if (format == ImageFormat::None) {
        if (!has_image_extension(path)) {
            ++scan.ignored_files;
            return;
        }
        throw DataError(
            "image file " + quoted(path) +
            (bytes == 0 ? " is empty (0 bytes)" : " is not a PNG or JPEG file (its first bytes say so)"));
    }
    if (bytes > limits.max_file_bytes)
        throw DataError("image file " + quoted(path) + " has " + byte_size_text(bytes) +
                        ", more than the limit of " + byte_size_text(limits.max_file_bytes));
    scan.image_bytes += bytes;
    if (scan.image_bytes > limits.max_total_bytes)
        throw DataError("the images of the folder take more than the limit of " +
                        byte_size_text(limits.max_total_bytes) + " (reached at " + quoted(path) + ")");
    files.push_back(path.string());
}

// What an entry that is not a regular file is, for the message that refuses one named like an
// image: "a FIFO", "a link to a character device", ...
std::string non_regular_kind(const fs::directory_entry& entry, fs::file_type type) {
    std::string kind = type == fs::file_type::directory   ? "a folder"
                       : type == fs::file_type::fifo      ? "a FIFO (named pipe)"
                       : type == fs::file_type::character ? "a character device"
                       : type == fs::file_type::block     ? "a block device"
                       : type == fs::file_type::socket    ? "a socket"
                                                          : "a special file";
    std::error_code ec;
    return entry.is_symlink(ec) ? "a link to " + kind : kind;
}

void scan_class_folder(const fs::path& folder, const ImageFolderLimits& limits, EntryBudget& budget,
                       ImageFolderScan& scan) {
    std::vector<std::string> files;
    for (const fs::directory_entry& entry : sorted_entries(folder, budget)) {
        // Only the type from stat: a FIFO or device is never opened (opening a FIFO blocks).
        const fs::file_type type = entry_type(entry);
        if (type == fs::file_type::regular)
            scan_file(entry.path(), limits, scan, files);
        else if (has_image_extension(entry.path()))
            throw DataError("image file " + quoted(entry.path()) + " is " + non_regular_kind(entry, type) +
                            ", not a regular file");
        else
            ++scan.ignored_files;  // nested folders, FIFOs, devices: not read
    }
    if (files.empty()) throw DataError("class folder " + quoted(folder) + " holds no PNG or JPEG images");
    scan.class_names.push_back(printable_text(folder.filename().string()));
    scan.files.push_back(std::move(files));
}

// "…/cats/" names the folder "cats".
fs::path without_trailing_separator(const std::string& root) {
    fs::path dir(root);
    return dir.has_filename() ? dir : dir.parent_path();
}

void check_root(const fs::path& root) {
    std::error_code ec;
    const fs::file_status status = fs::status(root, ec);
    if (!fs::exists(status)) throw DataError("image folder " + quoted(root) + " does not exist");
    if (!fs::is_directory(status)) throw DataError("image folder " + quoted(root) + " is not a folder");
}

// ---- decoding ----

struct StbFree {
    void operator()(stbi_uc* p) const { stbi_image_free(p); }
};

std::string failure_reason() {
    const char* reason = stbi_failure_reason();
    return reason ? reason : "unknown error";
}

// The byte at pos, 0 past the end: how stb_image reads a stream that ends early.
uint8_t byte_at(std::span<const uint8_t> bytes, size_t pos) { return pos < bytes.size() ? bytes[pos] : 0; }

// The Huffman tables a JPEG has defined so far: [DC or AC][0..3].
using HuffmanTables = std::array<std::array<bool, 4>, 2>;

// A DHT segment read as stb_image reads it: each table's 16 code counts must sum to at most 256,
// as the standard says. stb_image 2.27 (Debian 12's) does not check that and writes past its
// tables (fixed upstream in 2.28); the fuzz harness found it. Marks the tables it defines.
std::string huffman_problem(std::span<const uint8_t> bytes, size_t segment, size_t length,
                            HuffmanTables& defined) {
    int64_t left = static_cast<int64_t>(length) - 2;
    size_t pos = segment + 4;
    while (left > 0) {
        const uint8_t table = byte_at(bytes, pos);
        size_t codes = 0;
        for (size_t k = 1; k <= 16; ++k) codes += byte_at(bytes, pos + k);
        if (codes > 256)
            return "a Huffman table holds " + std::to_string(codes) +
                   " codes, more than the 256 a JPEG may have";
        if ((table >> 4) < 2 && (table & 15) < 4) defined[table >> 4][table & 15] = true;
        pos += 17 + codes;
        left -= static_cast<int64_t>(17 + codes);
    }
    return {};
}

// A scan (SOS) that decodes with a Huffman table no DHT has defined: stb_image 2.27 then reads
// its uninitialised table and indexes past it (fixed upstream in 2.28; found by the fuzz
// harness). A baseline scan uses both tables of each component; a progressive one the DC table
// in a first DC scan, the AC table in an AC scan.
std::string scan_problem(std::span<const uint8_t> bytes, size_t segment, bool progressive,
                         const HuffmanTables& defined) {
    const size_t components = byte_at(bytes, segment + 4);
    const size_t tail = segment + 5 + 2 * components;  // Ss, Se, Ah/Al
    const uint8_t spectral_start = byte_at(bytes, tail), spectral_end = byte_at(bytes, tail + 1);
    const bool first_pass = (byte_at(bytes, tail + 2) >> 4) == 0;
    const bool uses_dc = !progressive || (spectral_start == 0 && first_pass);
    const bool uses_ac = !progressive || spectral_end > 0;
    for (size_t c = 0; c < components; ++c) {
        const uint8_t tables = byte_at(bytes, segment + 6 + 2 * c);
        const bool dc_missing = uses_dc && (tables >> 4) < 4 && !defined[0][tables >> 4];
        const bool ac_missing = uses_ac && (tables & 15) < 4 && !defined[1][tables & 15];
        if (dc_missing || ac_missing) return "a scan uses a Huffman table the file does not define";
    }
    return {};
}

uint32_t read_be32(std::span<const uint8_t> bytes, size_t pos) {
    return (uint32_t{bytes[pos]} << 24) | (uint32_t{bytes[pos + 1]} << 16) | (uint32_t{bytes[pos + 2]} << 8) |
           uint32_t{bytes[pos + 3]};
}

// Walks a PNG's chunks up to IEND. Each chunk's length must fit in what is left of the file:
// stb_image 2.27 grows its buffer to an IDAT chunk's stated length before reading it, so a
// 40-byte file could claim 2 GB (found by the fuzz harness). Returns what is wrong, or "".
std::string png_structure_problem(std::span<const uint8_t> bytes) {
    size_t pos = kPngSignature.size();
    while (pos + 8 <= bytes.size()) {
        const uint64_t length = read_be32(bytes, pos);
        const std::string type(reinterpret_cast<const char*>(bytes.data()) + pos + 4, 4);
        const size_t left = bytes.size() - pos - 8;
        if (length + 4 > left)
            return "it is truncated (chunk " + quoted_text(type) + " says " + std::to_string(length) +
                   " bytes, " + std::to_string(left < 4 ? 0 : left - 4) + " are left)";
        if (type == "IEND") return {};
        pos += 12 + length;
    }
    return "it is truncated (it has no IEND chunk)";
}

// Markers without a length: stuffed zero, TEM, RST0-7, SOI; FF FF is fill.
bool marker_without_length(uint8_t marker) {
    return marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8);
}

// The length field of the segment whose marker is at `pos`.
size_t jpeg_segment_length(std::span<const uint8_t> bytes, size_t pos) {
    return (size_t{byte_at(bytes, pos + 2)} << 8) | byte_at(bytes, pos + 3);
}

// Walks a JPEG's segments after SOI (skipping each by its length, and the entropy-coded data
// after a scan byte by byte, where an FF is always followed by 00 or a marker). Calls
// visit(marker, position) for the end-of-image marker and for each segment with a length; stops
// when visit returns false. Returns false when the bytes ended first.
template <class Visit>
bool walk_jpeg_segments(std::span<const uint8_t> bytes, Visit visit) {
    size_t i = 2;
    while (i + 1 < bytes.size()) {
        const uint8_t marker = bytes[i + 1];
        if (bytes[i] != 0xFF || marker == 0xFF) {
            ++i;
            continue;
        }
        if (marker != 0xD9 && marker_without_length(marker)) {
            i += 2;
            continue;
        }
        if (!visit(marker, i)) return true;
        i += 2 + std::max<size_t>(jpeg_segment_length(bytes, i), 2);
    }
    return false;
}

// What is wrong with a JPEG's structure, or "" for a sound one: Huffman tables stb_image cannot
// take, or no end-of-image marker, which means the file was cut off (stb_image would decode it
// anyway, into an image whose missing part is grey).
std::string jpeg_structure_problem(std::span<const uint8_t> bytes) {
    HuffmanTables defined{};
    bool progressive = false;
    std::string problem;
    const bool ended = walk_jpeg_segments(bytes, [&](uint8_t marker, size_t i) {
        if (marker == 0xD9) return false;
        if (marker == 0xC2) progressive = true;
        if (marker == 0xC4) problem = huffman_problem(bytes, i, jpeg_segment_length(bytes, i), defined);
        if (marker == 0xDA) problem = scan_problem(bytes, i, progressive, defined);
        return problem.empty();
    });
    if (!ended) return "it is truncated (it has no end-of-image marker)";
    return problem;
}

struct ImageSize {
    int64_t height = 0, width = 0;
};

// The size in a PNG's IHDR chunk, which must come first with its 13 bytes; nullopt without it.
std::optional<ImageSize> png_declared_size(std::span<const uint8_t> bytes) {
    constexpr size_t kIhdr = kPngSignature.size();
    constexpr std::string_view kType = "IHDR";
    if (bytes.size() < kIhdr + 16 || read_be32(bytes, kIhdr) != 13 ||
        !std::equal(kType.begin(), kType.end(), bytes.begin() + kIhdr + 4))
        return std::nullopt;
    return ImageSize{.height = read_be32(bytes, kIhdr + 12), .width = read_be32(bytes, kIhdr + 8)};
}

// The size in a JPEG's frame header (SOF0-SOF15 but for DHT, JPG and DAC, which share the
// range), found by skipping the segments before it; nullopt when a scan or the end comes first.
std::optional<ImageSize> jpeg_declared_size(std::span<const uint8_t> bytes) {
    const auto be16 = [&](size_t pos) {
        return (int64_t{byte_at(bytes, pos)} << 8) | byte_at(bytes, pos + 1);
    };
    std::optional<ImageSize> size;
    walk_jpeg_segments(bytes, [&](uint8_t marker, size_t i) {
        if (marker == 0xDA || marker == 0xD9) return false;
        const bool frame =
            marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
        if (frame) size = ImageSize{.height = be16(i + 5), .width = be16(i + 7)};
        return !frame;
    });
    return size;
}

void check_header_size(ImageSize size, const std::string& file, const ImageSampleOptions& options,
                       const ImageFolderLimits& limits) {
    const std::string text = std::to_string(size.height) + "x" + std::to_string(size.width);
    if (size.height > limits.max_image_side || size.width > limits.max_image_side ||
        saturating_mul(size.height, size.width) > limits.max_image_pixels)
        throw DataError(file + " is " + text + " (height x width), more than the limit of " +
                        std::to_string(limits.max_image_side) + " pixels a side and " +
                        size_text(limits.max_image_pixels) + " pixels");
    if (options.mismatch == SizeMismatch::Error &&
        (size.height != options.height || size.width != options.width))
        throw DataError(file + " is " + text + " (height x width), not the chosen " +
                        std::to_string(options.height) + "x" + std::to_string(options.width) +
                        "; resize the images or choose size_mismatch \"resize\"");
}

// The image's size, read from its own header and checked against the limits before stb_image
// reads it: stb refuses a header past its own limit as "not of any known type", which would hide
// the size from the message. Throws DataError naming `file` (already quoted).
ImageSize checked_header(std::span<const uint8_t> bytes, const std::string& file,
                         const ImageSampleOptions& options, const ImageFolderLimits& limits) {
    if (bytes.empty()) throw DataError(file + " is empty (0 bytes)");
    const ImageFormat format = sniff_format(bytes);
    if (format == ImageFormat::None) throw DataError(file + " is not a PNG or JPEG file");
    if (bytes.size() > static_cast<size_t>(INT_MAX)) throw DataError(file + " is too large to decode");
    const bool jpeg = format == ImageFormat::Jpeg;
    const std::string kind = jpeg ? "JPEG" : "PNG";
    const std::string problem = jpeg ? jpeg_structure_problem(bytes) : png_structure_problem(bytes);
    if (!problem.empty()) throw DataError(file + " is not a sound " + kind + ": " + problem);
    const std::optional<ImageSize> declared = jpeg ? jpeg_declared_size(bytes) : png_declared_size(bytes);
    if (!declared)
        throw DataError(
            file + " is not a sound " + kind + ": " +
            (jpeg ? "it has no frame header before its first scan" : "its first chunk is not IHDR"));
    check_header_size(*declared, file, options, limits);
    int width = 0, height = 0, file_channels = 0;
    if (!stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &width, &height, &file_channels))
        throw DataError("cannot read the header of " + file + ": " + failure_reason() +
                        " (truncated or corrupt)");
    const ImageSize size{.height = height, .width = width};
    check_header_size(size, file, options, limits);  // stb's reading, should it differ from ours
    return size;
}

}  // namespace

SizeMismatch parse_size_mismatch(const std::string& name, const std::string& field) {
    if (name == "resize") return SizeMismatch::Resize;
    if (name == "error") return SizeMismatch::Error;
    throw ConfigError(field + " must be \"resize\" or \"error\", gets \"" + printable_text(name) + "\"");
}

void check_image_sample_options(const ImageSampleOptions& options, const std::string& where) {
    const auto check_side = [&](int value, const char* field) {
        if (value < 1 || value > kImageMaxSide)
            throw ConfigError(where + field + " must be 1.." + std::to_string(kImageMaxSide) + ", gets " +
                              std::to_string(value));
    };
    check_side(options.height, "image_height");
    check_side(options.width, "image_width");
    if (options.channels != 1 && options.channels != 3)
        throw ConfigError(where + "channels must be 1 (grayscale) or 3 (RGB), gets " +
                          std::to_string(options.channels));
}

int64_t ImageFolderScan::image_count() const {
    int64_t n = 0;
    for (const auto& f : files) n += static_cast<int64_t>(f.size());
    return n;
}

ImageFolderScan scan_image_folder(const std::string& root_text, const ImageFolderLimits& limits) {
    const fs::path root = without_trailing_separator(root_text);
    check_root(root);
    EntryBudget budget(root, limits.max_entries);
    ImageFolderScan scan;
    for (const fs::directory_entry& entry : sorted_entries(root, budget)) {
        if (entry_type(entry) != fs::file_type::directory || is_hidden(entry.path())) {
            ++scan.ignored_files;  // files beside the class folders, hidden folders (.git)
            continue;
        }
        if (static_cast<int>(scan.class_names.size()) == limits.max_classes)
            throw DataError("image folder " + quoted(root) + " has more than " +
                            std::to_string(limits.max_classes) + " class folders (the limit)");
        scan_class_folder(entry.path(), limits, budget, scan);
    }
    if (scan.class_names.size() < 2)
        throw DataError("image folder " + quoted(root) + " has " + std::to_string(scan.class_names.size()) +
                        " class folder" + (scan.class_names.size() == 1 ? "" : "s") +
                        "; it needs one sub-folder per class, at least 2");
    return scan;
}

std::vector<float> decode_image_sample(std::span<const uint8_t> bytes, const std::string& name,
                                       const ImageSampleOptions& options, const ImageFolderLimits& limits) {
    const std::string file = "image file " + quoted_text(name);
    checked_header(bytes, file, options, limits);
    int width = 0, height = 0, file_channels = 0;
    std::unique_ptr<stbi_uc, StbFree> pixels(stbi_load_from_memory(
        bytes.data(), static_cast<int>(bytes.size()), &width, &height, &file_channels, options.channels));
    if (!pixels)
        throw DataError("cannot decode " + file + ": " + failure_reason() + " (truncated or corrupt)");

    const int c = options.channels, h = options.height, w = options.width;
    const stbi_uc* source = pixels.get();
    std::vector<stbi_uc> resized;
    if (height != h || width != w) {
        resized.resize(static_cast<size_t>(h) * w * c);
        if (!stbir_resize_uint8(source, width, height, 0, resized.data(), w, h, 0, c))
            throw DataError("cannot resize " + file + " to " + std::to_string(h) + "x" + std::to_string(w));
        source = resized.data();
    }
    // Interleaved HWC bytes to planar CHW floats, scaled like the IDX images.
    std::vector<float> sample(static_cast<size_t>(c) * h * w);
    const size_t plane = static_cast<size_t>(h) * w;
    for (size_t p = 0; p < plane; ++p)
        for (int ch = 0; ch < c; ++ch)
            sample[static_cast<size_t>(ch) * plane + p] = static_cast<float>(source[p * c + ch]) / 255.0f;
    return sample;
}

namespace {

struct ImageRef {
    int label;
    const std::string* path;
};

void shuffle(std::vector<ImageRef>& items, Rng& rng) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng.below(i)]);
}

// Every class split on its own (stratified), so a small class is in both splits; then both
// splits shuffled, so neither is ordered by class.
void split_images(const ImageFolderScan& scan, const ImageFolderOptions& options,
                  std::vector<ImageRef>& train, std::vector<ImageRef>& test) {
    Rng rng(options.seed);
    for (size_t k = 0; k < scan.files.size(); ++k) {
        std::vector<ImageRef> items;
        for (const std::string& path : scan.files[k]) items.push_back({static_cast<int>(k), &path});
        shuffle(items, rng);
        const int64_t n = static_cast<int64_t>(items.size());
        const int64_t n_test =
            n < 2 ? 0
                  : std::clamp<int64_t>(std::llround(static_cast<double>(n) * options.test_ratio), 1, n - 1);
        test.insert(test.end(), items.begin(), items.begin() + n_test);
        train.insert(train.end(), items.begin() + n_test, items.end());
    }
    shuffle(train, rng);
    shuffle(test, rng);
}

void decode_split(const std::vector<ImageRef>& items, const ImageFolderOptions& options, Tensor& x,
                  Tensor& y) {
    const ImageSampleOptions& s = options.sample;
    const Shape sample_shape{s.channels, s.height, s.width};
    x.resize(with_batch(static_cast<int64_t>(items.size()), sample_shape));
    y.resize({static_cast<int64_t>(items.size())});
    const size_t values = static_cast<size_t>(shape_numel(sample_shape));
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string& path = *items[i].path;
        const std::vector<uint8_t> bytes = read_file_bytes(path, nullptr, options.limits.max_file_bytes);
        const std::vector<float> sample = decode_image_sample(bytes, path, s, options.limits);
        std::copy_n(sample.data(), values, x.data() + i * values);
        y[static_cast<int64_t>(i)] = static_cast<float>(items[i].label);
    }
}

}  // namespace

Dataset load_image_folder(const std::string& root, const ImageFolderOptions& options) {
    check_image_sample_options(options.sample);
    if (!(options.test_ratio > 0.0 && options.test_ratio < 1.0))
        throw ConfigError("test_ratio must be between 0 and 1 (exclusive), gets " +
                          std::to_string(options.test_ratio));
    const ImageFolderScan scan = scan_image_folder(root, options.limits);
    const ImageSampleOptions& s = options.sample;
    const int64_t values =
        saturating_mul(saturating_mul(scan.image_count(), s.channels), int64_t{s.height} * s.width);
    if (values > options.limits.max_values)
        throw DataError("image folder " + quoted_text(root) + ": " + std::to_string(scan.image_count()) +
                        " images of " + std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" +
                        std::to_string(s.width) + " are " + size_text(values) +
                        " values, more than the limit of " + size_text(options.limits.max_values));
    std::vector<ImageRef> train, test;
    split_images(scan, options, train, test);
    if (test.empty())
        throw DataError("image folder " + quoted_text(root) +
                        " has too few images for a test split: every class needs at least 2");
    Dataset ds;
    decode_split(train, options, ds.train_x, ds.train_y);
    decode_split(test, options, ds.test_x, ds.test_y);
    ds.sample_shape = {s.channels, s.height, s.width};
    ds.num_classes = static_cast<int>(scan.class_names.size());
    ds.class_names = scan.class_names;
    ds.name = printable_text(without_trailing_separator(root).filename().string());
    return ds;
}

}  // namespace mpwb
