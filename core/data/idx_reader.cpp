// IDX reader. Files are read whole (gzip through zlib's gzread with a large buffer) and parsed
// from memory: a 47 MB image file is one read instead of 60000, and the exact-length check needs
// the full size anyway.
#include "core/data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>

#include "core/common/checked_arith.h"
#include "core/common/error.h"
#include "core/common/input_file.h"
#include "core/common/printable.h"

namespace mpwb {
namespace {

namespace fs = std::filesystem;

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
struct GzCloser {
    void operator()(gzFile_s* f) const { gzclose(f); }
};

uint32_t read_be32(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string hex32(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", v);
    return buf;
}

// The length a gzip member says it decompresses to (ISIZE, the last 4 bytes, little-endian,
// modulo 2^32); used only to size the buffer up front.
size_t gzip_size_hint(std::FILE* f) {
    if (std::fseek(f, -4, SEEK_END) != 0) return 0;
    const long compressed = std::ftell(f) + 4;
    uint8_t b[4];
    if (std::fread(b, 1, 4, f) != 4) return 0;
    const size_t isize = size_t{b[0]} | (size_t{b[1]} << 8) | (size_t{b[2]} << 16) | (size_t{b[3]} << 24);
    // A truncated file's last bytes are not a trailer; deflate never expands more than ~1032:1,
    // so a larger claim is garbage and must not become a huge zero-filled allocation.
    return std::min(isize, static_cast<size_t>(compressed) * 1032);
}

std::vector<uint8_t> read_gzip(const std::string& path, size_t hint, size_t max_bytes, bool* truncated) {
    std::unique_ptr<gzFile_s, GzCloser> gz(gzopen(path.c_str(), "rb"));
    if (!gz) throw DataError("cannot open " + quoted_text(path) + " for reading");
    gzbuffer(gz.get(), 1 << 18);
    std::vector<uint8_t> out;
    // The hint is a hint: a corrupt trailer must not cause a huge allocation.
    out.resize(std::min(std::clamp<size_t>(hint + 1, size_t{1} << 16, size_t{1} << 31),
                        std::max<size_t>(max_bytes, 1)));
    size_t have = 0;
    while (have < max_bytes) {
        if (have == out.size()) out.resize(std::min(out.size() * 2, max_bytes));
        const size_t want = std::min<size_t>(out.size() - have, size_t{1} << 30);
        const int got = gzread(gz.get(), out.data() + have, static_cast<unsigned>(want));
        if (got < 0) {
            int err = 0;
            const char* msg = gzerror(gz.get(), &err);
            throw DataError("corrupt gzip file " + quoted_text(path) + ": " + (msg ? msg : "read error"));
        }
        if (got == 0) break;
        have += static_cast<size_t>(got);
    }
    int err = Z_OK;
    const char* msg = gzerror(gz.get(), &err);
    if (err == Z_BUF_ERROR) {
        // The compressed stream stops early: report it with the byte counts the caller knows.
        if (truncated)
            *truncated = true;
        else
            throw DataError("truncated gzip file " + quoted_text(path) + ": " + (msg ? msg : ""));
    } else if (err != Z_OK) {
        throw DataError("corrupt gzip file " + quoted_text(path) + ": " + (msg ? msg : "read error"));
    }
    out.resize(have);
    return out;
}

// Slack read past the length the header gives, so a few trailing bytes are counted exactly.
constexpr size_t kTrailingSlack = size_t{1} << 20;

bool is_gzip_file(const std::string& path) {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
    uint8_t magic[2] = {0, 0};
    return f && std::fread(magic, 1, 2, f.get()) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

std::string size_note(bool truncated_gzip) { return truncated_gzip ? " (the gzip stream ends early)" : ""; }

// Header bytes available? Otherwise the file is truncated inside the header.
void need_header(const std::string& path, const std::vector<uint8_t>& bytes, size_t header, const char* kind,
                 bool truncated_gzip) {
    if (bytes.size() < header)
        throw DataError("truncated IDX " + std::string(kind) + " file " + quoted_text(path) +
                        ": expected at least " + std::to_string(header) + " header bytes, file has " +
                        std::to_string(bytes.size()) + " bytes" + size_note(truncated_gzip));
}

void check_magic(const std::string& path, uint32_t magic, uint32_t expected, const char* kind) {
    if (magic == expected) return;
    std::string msg = quoted_text(path) + " is not an IDX " + kind + " file: bad magic number " +
                      hex32(magic) + " (expected " + hex32(expected) + ")";
    if (magic == kIdxLabelsMagic)
        msg += "; it looks like an IDX label file";
    else if (magic == kIdxImagesMagic)
        msg += "; it looks like an IDX image file";
    else if ((magic >> 16) == 0 && (magic & 0xFF) != (expected & 0xFF))
        msg += "; it has " + std::to_string(magic & 0xFF) + " dimensions instead of " +
               std::to_string(expected & 0xFF);
    else if ((magic >> 16) == 0 && ((magic >> 8) & 0xFF) != 0x08)
        msg += "; only unsigned-byte data (type 0x08) is supported";
    throw DataError(msg);
}

void check_length(const std::string& path, size_t actual, unsigned __int128 expected, const std::string& what,
                  bool truncated_gzip) {
    if (actual == expected) {
        if (truncated_gzip)  // the data is all there but the CRC/length trailer is not
            throw DataError("truncated gzip file " + quoted_text(path) +
                            ": the stream ends before its trailer");
        return;
    }
    const auto exp = static_cast<unsigned long long>(expected);
    const std::string counts = "header says " + what + ", expected " + std::to_string(exp) +
                               " bytes, file has " + std::to_string(actual) + " bytes";
    if (actual < expected)
        throw DataError("truncated IDX file " + quoted_text(path) + ": " + counts +
                        size_note(truncated_gzip));
    throw DataError("IDX file " + quoted_text(path) + " has " + std::to_string(actual - exp) +
                    " unexpected trailing bytes: " + counts);
}

struct ImagesHeader {
    uint32_t count = 0, rows = 0, cols = 0;
    int64_t payload = 0;  // count * rows * cols
    std::string what;     // "60000 images of 28x28"
};

// Values (pixels or labels) the header promises, against kIdxMaxElements.
void check_element_limit(const std::string& path, int64_t elements, const std::string& what) {
    if (elements > kIdxMaxElements)
        throw DataError("IDX file " + quoted_text(path) + ": header says " + what + ", " +
                        size_text(elements) + " values, more than the limit of " +
                        size_text(kIdxMaxElements));
}

// A raw file's length is known without reading it: a wrong one is refused before its body.
void check_raw_length(const std::string& path, int64_t expected, const std::string& what) {
    if (!is_gzip_file(path))
        check_length(path, input_file_size(path), static_cast<unsigned __int128>(expected), what, false);
}

// The 16-byte header of an image file, checked against itself, the limit and (raw files) the
// file's length; the body is not read.
ImagesHeader read_images_header(const std::string& path) {
    bool trunc = false;
    const std::vector<uint8_t> head = read_file_bytes(path, &trunc, 16);
    need_header(path, head, 4, "image", trunc);
    check_magic(path, read_be32(head.data()), kIdxImagesMagic, "image");
    need_header(path, head, 16, "image", trunc);
    ImagesHeader h;
    h.count = read_be32(head.data() + 4);
    h.rows = read_be32(head.data() + 8);
    h.cols = read_be32(head.data() + 12);
    if (h.count == 0) throw DataError("IDX image file " + quoted_text(path) + " holds no images");
    if (h.rows == 0 || h.cols == 0 || h.rows > 65536 || h.cols > 65536)
        throw DataError("IDX image file " + quoted_text(path) + " has implausible image dimensions " +
                        std::to_string(h.rows) + "x" + std::to_string(h.cols));
    h.payload = saturating_mul(saturating_mul(h.count, h.rows), h.cols);
    h.what = std::to_string(h.count) + " images of " + std::to_string(h.rows) + "x" + std::to_string(h.cols);
    check_element_limit(path, h.payload, h.what);
    check_raw_length(path, 16 + h.payload, h.what);
    return h;
}

// The label count from the 8-byte header, checked like read_images_header.
uint32_t read_labels_header(const std::string& path) {
    bool trunc = false;
    const std::vector<uint8_t> head = read_file_bytes(path, &trunc, 8);
    need_header(path, head, 4, "label", trunc);
    check_magic(path, read_be32(head.data()), kIdxLabelsMagic, "label");
    need_header(path, head, 8, "label", trunc);
    const uint32_t count = read_be32(head.data() + 4);
    if (count == 0) throw DataError("IDX label file " + quoted_text(path) + " holds no labels");
    const std::string what = std::to_string(count) + " labels";
    check_element_limit(path, count, what);
    check_raw_length(path, 8 + int64_t{count}, what);
    return count;
}

// The whole file once its header has passed: at most the length it gives plus a little slack
// for counting trailing bytes.
std::vector<uint8_t> read_body(const std::string& path, int64_t expected, const std::string& what) {
    bool trunc = false;
    const size_t cap = static_cast<size_t>(expected) + kTrailingSlack;
    std::vector<uint8_t> bytes;
    try {
        bytes = read_file_bytes(path, &trunc, cap);
    } catch (const std::bad_alloc&) {
        throw DataError("not enough memory to read IDX file " + quoted_text(path) + " (" + what + ", " +
                        size_text(expected) + " bytes)");
    }
    if (bytes.size() == cap)
        throw DataError("IDX file " + quoted_text(path) + " has more than " + std::to_string(kTrailingSlack) +
                        " unexpected trailing bytes after " + what);
    check_length(path, bytes.size(), static_cast<unsigned __int128>(expected), what, trunc);
    return bytes;
}

// The data file for `base` in folder: raw first, then ".gz".
std::string find_idx_file(const fs::path& folder, const std::string& base) {
    const fs::path raw = folder / base;
    const fs::path gz = folder / (base + ".gz");
    std::error_code ec;
    if (fs::is_regular_file(raw, ec)) return raw.string();
    if (fs::is_regular_file(gz, ec)) return gz.string();
    throw DataError("missing IDX file " + quoted_text(raw.string()) + " (also looked for " +
                    quoted_text(gz.string()) + ")");
}

struct Split {
    IdxImages images;
    std::vector<uint8_t> labels;
    std::string images_path, labels_path;
};

Split load_split(const fs::path& folder, const std::string& prefix) {
    Split s;
    s.images_path = find_idx_file(folder, prefix + "-images-idx3-ubyte");
    s.labels_path = find_idx_file(folder, prefix + "-labels-idx1-ubyte");
    // Both headers first: a count mismatch is found before either body is read.
    const uint32_t images = read_images_header(s.images_path).count;
    const uint32_t labels = read_labels_header(s.labels_path);
    if (images != labels)
        throw DataError("image/label count mismatch: " + quoted_text(s.images_path) + " holds " +
                        std::to_string(images) + " images but " + quoted_text(s.labels_path) + " holds " +
                        std::to_string(labels) + " labels");
    s.images = read_idx_images(s.images_path);
    s.labels = read_idx_labels(s.labels_path, 10);
    return s;
}

void to_tensors(const Split& s, Tensor& x, Tensor& y) {
    const int64_t n = s.images.count, pixels = s.images.rows * s.images.cols;
    x.resize({n, 1, s.images.rows, s.images.cols});
    y.resize({n});
    float lut[256];
    for (int i = 0; i < 256; ++i) lut[i] = static_cast<float>(i) / 255.0f;
    const uint8_t* src = s.images.pixels.data();
    float* dst = x.data();
    // Serial on purpose: the two splits already convert on two threads (load_idx_dataset).
    for (int64_t i = 0; i < n * pixels; ++i) dst[i] = lut[src[i]];
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(s.labels[static_cast<size_t>(i)]);
}

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path, bool* gzip_truncated, size_t max_bytes) {
    if (gzip_truncated) *gzip_truncated = false;
    // fopen succeeds on a folder; what follows would size a buffer from its nonsense length.
    if (const std::string problem = input_file_problem(path); !problem.empty())
        throw DataError("cannot open " + quoted_text(path) + ": it " + problem);
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
    if (!f) throw DataError("cannot open " + quoted_text(path) + " for reading");
    uint8_t magic[2] = {0, 0};
    const size_t got = std::fread(magic, 1, 2, f.get());
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        const size_t hint = gzip_size_hint(f.get());
        f.reset();
        return read_gzip(path, hint, max_bytes, gzip_truncated);
    }
    if (std::fseek(f.get(), 0, SEEK_END) != 0) throw DataError("cannot seek in " + quoted_text(path));
    const long size = std::ftell(f.get());
    if (size < 0) throw DataError("cannot determine the size of " + quoted_text(path));
    std::rewind(f.get());
    std::vector<uint8_t> out(std::min(static_cast<size_t>(size), max_bytes));
    if (size && std::fread(out.data(), 1, out.size(), f.get()) != out.size())
        throw DataError("read error in " + quoted_text(path));
    return out;
}

IdxImages read_idx_images(const std::string& path) {
    const ImagesHeader h = read_images_header(path);
    const std::vector<uint8_t> bytes = read_body(path, 16 + h.payload, h.what);
    IdxImages img;
    img.count = h.count;
    img.rows = h.rows;
    img.cols = h.cols;
    img.pixels.assign(bytes.begin() + 16, bytes.end());
    return img;
}

std::vector<uint8_t> read_idx_labels(const std::string& path, int max_label) {
    const uint32_t count = read_labels_header(path);
    const std::vector<uint8_t> bytes = read_body(path, 8 + int64_t{count}, std::to_string(count) + " labels");
    std::vector<uint8_t> labels(bytes.begin() + 8, bytes.end());
    for (size_t i = 0; i < labels.size(); ++i)
        if (labels[i] >= max_label)
            throw DataError("IDX label file " + quoted_text(path) + ": label " + std::to_string(labels[i]) +
                            " at index " + std::to_string(i) + " out of range [0, " +
                            std::to_string(max_label) + ")");
    return labels;
}

Dataset load_idx_dataset(const std::string& folder) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        throw DataError("IDX dataset folder " + quoted_text(folder) + " does not exist or is not a folder");
    fs::path dir = fs::path(folder);
    if (!dir.has_filename()) dir = dir.parent_path();  // "…/fashion-mnist/"

    // The two splits decompress and convert in parallel: gunzip is most of the load time.
    Dataset ds;
    auto test_future = std::async(std::launch::async, [&] {
        Split test = load_split(dir, "t10k");
        to_tensors(test, ds.test_x, ds.test_y);
        test.images.pixels = {};
        return test;
    });
    Split train = load_split(dir, "train");
    to_tensors(train, ds.train_x, ds.train_y);
    const Split test = test_future.get();
    if (train.images.rows != test.images.rows || train.images.cols != test.images.cols)
        throw DataError("IDX image size mismatch: " + quoted_text(train.images_path) + " holds " +
                        std::to_string(train.images.rows) + "x" + std::to_string(train.images.cols) +
                        " images but " + quoted_text(test.images_path) + " holds " +
                        std::to_string(test.images.rows) + "x" + std::to_string(test.images.cols));

    ds.name = printable_text(dir.filename().string());
    ds.sample_shape = {1, train.images.rows, train.images.cols};
    ds.num_classes = 10;

    std::string lname = ds.name;
    for (char& c : lname) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lname.find("fashion") != std::string::npos) {
        ds.class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    } else {
        for (int i = 0; i < 10; ++i) ds.class_names.push_back(std::to_string(i));
    }
    return ds;
}

}  // namespace mpwb
