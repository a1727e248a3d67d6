// Tests of the image-folder reader on folders written here (tests/data/image_folder_fixture.h):
// classes from sorted sub-folders, PNG and JPEG recognised by content, CHW floats with a PNG's
// pixels exact, a stratified split fixed by its seed, mixed sizes resized or refused as chosen,
// and every kind of hostile folder (bad, truncated, empty and oversized images, limits, empty
// classes, one class, link loops, FIFOs, non-UTF-8 names) refused with a message naming the file
// and the problem, or read without harm; the folder is never written to. Also the DatasetSpec
// settings: JSON round trip, errors naming the field, and load_dataset's normalisation.
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/data/image_folder.h"
#include "core/train/dataset_source.h"
#include "core/train/train_config.h"
#include "tests/common/test_support.h"
#include "tests/data/image_folder_fixture.h"

using mpwb::test::error_text;
using namespace mpwb;
using namespace mpwb::test;
namespace fs = std::filesystem;

namespace {

ImageFolderOptions options_for(int height, int width, int channels, double test_ratio = 0.5,
                               uint64_t seed = 1) {
    ImageFolderOptions o;
    o.sample = {.height = height, .width = width, .channels = channels};
    o.test_ratio = test_ratio;
    o.seed = seed;
    return o;
}

// Samples of a split per label.
std::map<int, int> label_counts(const Tensor& y) {
    std::map<int, int> counts;
    for (int64_t i = 0; i < y.dim(0); ++i) ++counts[static_cast<int>(y[i])];
    return counts;
}

bool same_values(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && std::equal(a.data(), a.data() + a.numel(), b.data());
}

// Every file below root with its size and modification time: the reader must change none.
std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> snapshot(const std::string& root) {
    std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> files;
    for (const auto& e : fs::recursive_directory_iterator(root))
        if (e.is_regular_file()) files[e.path().string()] = {e.file_size(), e.last_write_time()};
    return files;
}

// A valid folder of two classes in dir, for the hostile cases to spoil.
std::string two_class_folder(const QTemporaryDir& dir) {
    const std::string root = dir.filePath("set").toStdString();
    ImageFolderSpec spec;
    spec.classes = {"a", "b"};
    spec.per_class = 3;
    write_image_folder(root, spec);
    return root;
}

QString load_error(const std::string& root, const ImageFolderOptions& options = options_for(10, 10, 1)) {
    return error_text<DataError>([&] { load_image_folder(root, options); });
}

}  // namespace

class TestImageFolder : public QObject {
    Q_OBJECT

private slots:
    void scanFindsSortedClassesByContent() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        ImageFolderSpec spec;
        spec.classes = {"zebra", "apple", "mango"};
        QVERIFY(write_image_folder(root, spec));
        write_bytes(root + "/notes.txt", {'h', 'i'});                        // beside the classes: ignored
        write_bytes(root + "/apple/README", {'x'});                          // not an image: ignored
        fs::create_directory(root + "/.git");                                // hidden folder: not a class
        fs::copy_file(root + "/apple/0.png", root + "/apple/no_extension");  // PNG by content
        const ImageFolderScan scan = scan_image_folder(root);
        QCOMPARE(scan.class_names, (std::vector<std::string>{"apple", "mango", "zebra"}));
        QCOMPARE(scan.files[0].size(), size_t(7));
        QCOMPARE(scan.files[1].size(), size_t(6));
        QCOMPARE(scan.image_count(), int64_t{19});
        QCOMPARE(scan.ignored_files, int64_t{3});
    }

    void loadsShapesLabelsAndStratifiedSplit() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        QVERIFY(write_image_folder(root, {}));
        const Dataset ds = load_image_folder(root, options_for(10, 10, 1, 0.5));
        QCOMPARE(ds.sample_shape, (Shape{1, 10, 10}));
        QCOMPARE(ds.train_x.shape(), (Shape{9, 1, 10, 10}));
        QCOMPARE(ds.test_x.shape(), (Shape{9, 1, 10, 10}));
        QCOMPARE(ds.num_classes, 3);
        QCOMPARE(ds.class_names, (std::vector<std::string>{"a_rows", "b_columns", "c_checker"}));
        // Stratified: every class has 3 of its 6 images in each split.
        const std::map<int, int> three_each{{0, 3}, {1, 3}, {2, 3}};
        QCOMPARE(label_counts(ds.train_y), three_each);
        QCOMPARE(label_counts(ds.test_y), three_each);
        for (int64_t i = 0; i < ds.train_x.numel(); ++i)
            QVERIFY(ds.train_x.data()[i] >= 0.0f && ds.train_x.data()[i] <= 1.0f);
    }

    void pngPixelsAreExactInChwOrder() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("rgb.png").toStdString();
        const auto px = class_image(2, 5, 4, 6, 3);  // 4 rows, 6 columns, RGB
        QVERIFY(write_png(path, 4, 6, 3, px));
        const auto sample =
            decode_image_sample(read_bytes(path), path, {.height = 4, .width = 6, .channels = 3});
        QCOMPARE(sample.size(), size_t(3 * 4 * 6));
        for (int ch = 0; ch < 3; ++ch)
            for (int p = 0; p < 24; ++p)
                EXPECT_EXACT(sample[size_t(ch * 24 + p)],
                             static_cast<float>(px[size_t(p * 3 + ch)]) / 255.0f);
    }

    void loadedPngsKeepTheirPixelsAndLabels() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        ImageFolderSpec spec;
        spec.per_class = 4;
        spec.jpeg_too = false;
        QVERIFY(write_image_folder(root, spec));
        const Dataset ds = load_image_folder(root, options_for(10, 10, 1));
        // Each written image is one sample of its class with exactly its pixels /255.
        for (int cls = 0; cls < 3; ++cls)
            for (int i = 0; i < spec.per_class; ++i) {
                const auto px = class_image(cls, i, 10, 10, 1);
                bool found = false;
                for (const auto* split : {&ds.train_x, &ds.test_x}) {
                    const Tensor& y = split == &ds.train_x ? ds.train_y : ds.test_y;
                    for (int64_t s = 0; s < split->dim(0) && !found; ++s) {
                        const float* x = split->data() + s * 100;
                        found =
                            y[s] == float(cls) && std::equal(px.begin(), px.end(), x, [](uint8_t v, float f) {
                                return static_cast<float>(v) / 255.0f == f;
                            });
                    }
                }
                QVERIFY2(found, qPrintable(QString("class %1 image %2 not found exactly").arg(cls).arg(i)));
            }
    }

    void splitIsFixedBySeed() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        ImageFolderSpec spec;
        spec.per_class = 10;
        QVERIFY(write_image_folder(root, spec));
        const Dataset a = load_image_folder(root, options_for(10, 10, 1, 0.3, 7));
        const Dataset b = load_image_folder(root, options_for(10, 10, 1, 0.3, 7));
        const Dataset c = load_image_folder(root, options_for(10, 10, 1, 0.3, 8));
        QCOMPARE(a.test_size(), int64_t{9});
        QCOMPARE(a.train_size(), int64_t{21});
        QVERIFY(same_values(a.train_x, b.train_x) && same_values(a.test_x, b.test_x));
        QVERIFY(same_values(a.train_y, b.train_y));
        QVERIFY(!same_values(a.test_x, c.test_x));
    }

    void mixedSizesAreResizedOrRefused() {
        QTemporaryDir dir;
        const std::string root = two_class_folder(dir);
        const std::string odd = root + "/b/big.png";
        QVERIFY(write_png(odd, 14, 12, 1, std::vector<uint8_t>(14 * 12, 200)));  // uniform grey
        const Dataset ds = load_image_folder(root, options_for(10, 10, 1));
        QCOMPARE(ds.train_size() + ds.test_size(), int64_t{7});
        // The resized uniform image is still uniform 200/255 (one step of rounding at most).
        bool found = false;
        for (const auto* x : {&ds.train_x, &ds.test_x})
            for (int64_t s = 0; s < x->dim(0); ++s)
                found |= std::all_of(x->data() + s * 100, x->data() + (s + 1) * 100,
                                     [](float v) { return std::abs(v - 200.0f / 255.0f) <= 1.0f / 255.0f; });
        QVERIFY(found);

        ImageFolderOptions strict = options_for(10, 10, 1);
        strict.sample.mismatch = SizeMismatch::Error;
        VERIFY_MSG(load_error(root, strict), "big.png", "is 14x12", "not the chosen 10x10", "size_mismatch");
        // Every image at another size than chosen is refused too, not only the odd one out.
        fs::remove(odd);
        strict.sample.height = 8;
        VERIFY_MSG(load_error(root, strict), "is 10x10", "not the chosen 8x10");
    }

    void badImagesNameTheFileAndProblem() {
        struct Case {
            const char* name;
            std::function<std::vector<uint8_t>(const std::vector<uint8_t>& png,
                                               const std::vector<uint8_t>& jpg)>
                bytes;
            const char* message;
        };
        const std::vector<Case> cases = {
            {"empty.png", [](auto&, auto&) { return std::vector<uint8_t>{}; }, "is empty (0 bytes)"},
            {"text.jpg",
             [](auto&, auto&) { return std::vector<uint8_t>{'n', 'o', 't', ' ', 'a', 'n', ' ', 'i'}; },
             "is not a PNG or JPEG file"},
            {"cut.png",
             [](auto& png, auto&) {
                 return std::vector<uint8_t>(png.begin(), png.begin() + long(png.size() / 2));
             },
             "is not a sound PNG: it is truncated (chunk 'IDAT' says"},
            {"header.png",
             [](auto& png, auto&) { return std::vector<uint8_t>(png.begin(), png.begin() + 12); },
             "is not a sound PNG: it is truncated (it has no IEND chunk)"},
            {"long.png",
             [](auto& png, auto&) {  // the IDAT chunk (after the 33 bytes of signature and IHDR) says 2 GB
                 auto b = png;
                 b[33] = 0x80;
                 return b;
             },
             "chunk 'IDAT' says 2147483"},
            {"cut.jpg",
             [](auto&, auto& jpg) {
                 return std::vector<uint8_t>(jpg.begin(), jpg.begin() + long(jpg.size() * 2 / 3));
             },
             "is truncated (it has no end-of-image marker)"},
            {"tables.jpg",
             [](auto&, auto& jpg) {  // the first Huffman table claims 16 x 32 = 512 codes
                 auto b = jpg;
                 for (size_t i = 2; i + 21 < b.size(); ++i)
                     if (b[i] == 0xFF && b[i + 1] == 0xC4) {
                         std::fill(b.begin() + long(i) + 5, b.begin() + long(i) + 21, uint8_t{32});
                         break;
                     }
                 return b;
             },
             "a Huffman table holds 512 codes"},
            {"undefined.jpg",
             [](auto&, auto& jpg) {  // the scan's first component takes DC and AC table 3, never defined
                 auto b = jpg;
                 for (size_t i = 2; i + 6 < b.size(); ++i)
                     if (b[i] == 0xFF && b[i + 1] == 0xDA) {
                         b[i + 6] = 0x33;
                         break;
                     }
                 return b;
             },
             "a scan uses a Huffman table the file does not define"},
            {"garbled.png",
             [](auto& png, auto&) {
                 auto b = png;  // the compressed pixels of the IDAT chunk (its length at byte 33)
                 const size_t length = (size_t{b[35]} << 8) | b[36];
                 for (size_t i = 41; i < 41 + length; ++i) b[i] ^= 0x5A;
                 return b;
             },
             "truncated or corrupt"},
        };
        for (const Case& c : cases) {
            QTemporaryDir dir;
            const std::string root = two_class_folder(dir);
            const std::string path = root + "/a/" + c.name;
            write_bytes(path, c.bytes(read_bytes(root + "/a/0.png"), read_bytes(root + "/a/1.jpg")));
            VERIFY_MSG(load_error(root), c.name, c.message);
        }
    }

    void oversizedHeadersAreRefusedBeforeDecoding() {
        QTemporaryDir dir;
        const std::string root = two_class_folder(dir);
        // The PNG header claims 100000 x 100000 pixels (40 GB decoded): refused from the header.
        auto png = read_bytes(root + "/a/0.png");
        for (int k : {16, 20}) {  // IHDR width and height, big-endian
            png[size_t(k)] = 0x00;
            png[size_t(k + 1)] = 0x01;
            png[size_t(k + 2)] = 0x86;
            png[size_t(k + 3)] = 0xA0;
        }
        write_bytes(root + "/a/huge.png", png);
        VERIFY_MSG(load_error(root), "huge.png", "is 100000x100000 (height x width)",
                   "more than the limit of 16384 pixels a side");
        fs::remove(root + "/a/huge.png");
        // A JPEG's frame header at its largest, 65535 x 65535: stb_image refuses it as an unknown
        // type, so the size is read from the header itself.
        auto jpg = read_bytes(root + "/a/1.jpg");
        bool patched = false;
        for (size_t i = 2; i + 8 < jpg.size() && !patched; ++i)
            if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
                std::fill(jpg.begin() + long(i) + 5, jpg.begin() + long(i) + 9, uint8_t{0xFF});
                patched = true;
            }
        QVERIFY(patched);
        write_bytes(root + "/b/huge.jpg", jpg);
        VERIFY_MSG(load_error(root), "huge.jpg", "is 65535x65535 (height x width)", "more than the limit");

        // Our own limits, checked from stb's header read.
        const std::string wide = dir.filePath("wide.png").toStdString();
        QVERIFY(write_png(wide, 2, 40, 1, std::vector<uint8_t>(80, 9)));
        ImageFolderLimits limits;
        limits.max_image_side = 32;
        const auto bytes = read_bytes(wide);
        VERIFY_MSG(error_text<DataError>(
                       [&] { decode_image_sample(bytes, wide, {.height = 2, .width = 2}, limits); }),
                   "wide.png", "is 2x40", "limit of 32 pixels a side");
        limits = {};
        limits.max_image_pixels = 60;
        VERIFY_MSG(error_text<DataError>(
                       [&] { decode_image_sample(bytes, wide, {.height = 2, .width = 2}, limits); }),
                   "wide.png", "more than the limit");
    }

    void folderLimitsAreEnforced() {
        QTemporaryDir dir;
        const std::string root = two_class_folder(dir);
        ImageFolderOptions o = options_for(10, 10, 1);
        o.limits.max_entries = 5;
        VERIFY_MSG(load_error(root, o), "more than 5 entries");
        o = options_for(10, 10, 1);
        o.limits.max_total_bytes = 300;
        VERIFY_MSG(load_error(root, o), "more than the limit of 300 bytes");
        o = options_for(10, 10, 1);
        o.limits.max_file_bytes = 50;
        VERIFY_MSG(load_error(root, o), "0.png", "more than the limit of 50 bytes");
        o = options_for(10, 10, 1);
        o.limits.max_values = 500;  // 6 images of 100 values
        VERIFY_MSG(load_error(root, o), "6 images of 1x10x10", "600 values", "limit of 500");
        o = options_for(10, 10, 1);
        o.limits.max_classes = 1;
        VERIFY_MSG(load_error(root, o), "more than 1 class folders");
    }

    void classLayoutProblemsAreExplained() {
        QTemporaryDir dir;
        const std::string root = two_class_folder(dir);
        fs::create_directory(root + "/c_empty");
        write_bytes(root + "/c_empty/readme.txt", {'x'});
        VERIFY_MSG(load_error(root), "c_empty", "holds no PNG or JPEG images");

        QTemporaryDir one;
        ImageFolderSpec spec;
        spec.classes = {"only"};
        write_image_folder(one.path().toStdString(), spec);
        VERIFY_MSG(load_error(one.path().toStdString()), "has 1 class folder;", "at least 2");
        VERIFY_MSG(load_error(one.filePath("missing").toStdString()), "missing", "does not exist");
        VERIFY_MSG(load_error(one.filePath("only/0.png").toStdString()), "0.png", "is not a folder");

        QTemporaryDir singles;
        spec.classes = {"a", "b"};
        spec.per_class = 1;
        write_image_folder(singles.path().toStdString(), spec);
        VERIFY_MSG(load_error(singles.path().toStdString()), "too few images for a test split");
    }

    void linksAndSpecialFilesDoNotHang() {
        QTemporaryDir dir;
        const std::string root = two_class_folder(dir);
        // A link back up and a FIFO inside a class folder are not read: the folder loads.
        fs::create_directory_symlink("..", root + "/a/up");
        QCOMPARE(::mkfifo((root + "/b/pipe").c_str(), 0600), 0);
        QCOMPARE(load_image_folder(root, options_for(10, 10, 1)).num_classes, 2);
        QCOMPARE(scan_image_folder(root).ignored_files, int64_t{2});
        // The same named like images are errors, told from their type without opening them (a
        // FIFO's open would block until a writer came).
        QCOMPARE(::mkfifo((root + "/b/pipe.png").c_str(), 0600), 0);
        VERIFY_MSG(load_error(root), "pipe.png", "is a FIFO (named pipe), not a regular file");
        fs::remove(root + "/b/pipe.png");
        fs::create_directory(root + "/b/folder.jpg");
        VERIFY_MSG(load_error(root), "folder.jpg", "is a folder, not a regular file");
        fs::remove(root + "/b/folder.jpg");
        fs::create_symlink("/dev/zero", root + "/b/zero.png");
        VERIFY_MSG(load_error(root), "zero.png", "is a link to a character device, not a regular file");
        fs::remove(root + "/b/zero.png");
        fs::create_directory_symlink("..", root + "/b/up.jpeg");
        VERIFY_MSG(load_error(root), "up.jpeg", "is a link to a folder, not a regular file");
        fs::remove(root + "/b/up.jpeg");
        // A link loop cannot be examined: an error naming it, not an endless walk.
        fs::create_symlink("loop", root + "/b/loop");
        VERIFY_MSG(load_error(root), "loop", "cannot examine");
    }

    void nonUtf8NamesBecomeValidText() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        ImageFolderSpec spec;
        spec.classes = {"caf\xE9", "plain"};  // Latin-1 byte, invalid UTF-8
        spec.per_class = 2;
        QVERIFY(write_image_folder(root, spec));
        const Dataset ds = load_image_folder(root, options_for(10, 10, 1));
        QCOMPARE(ds.class_names[0], std::string("caf\\xe9"));     // the byte spelled out, as in messages
        QVERIFY(!nlohmann::json(ds.class_names).dump().empty());  // throws on invalid UTF-8
        write_bytes(root + "/caf\xE9/bad\xFF.png", {'x'});
        const QString msg = load_error(root);
        VERIFY_MSG(msg, "caf\\xe9", "bad\\xff.png", "not a PNG or JPEG");
        QVERIFY(!nlohmann::json(msg.toStdString()).dump().empty());
        fs::remove_all(root + "/caf\xE9");  // QTemporaryDir cannot name it to remove it
    }

    // Escape and bell in names would act on the terminal that prints the message: every name
    // from the folder reaches a message (and a class name) escaped.
    void controlCharactersInNamesAreEscaped() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        ImageFolderSpec spec;
        spec.classes = {"red\x1b[31m", "bell\a"};
        spec.per_class = 2;
        QVERIFY(write_image_folder(root, spec));
        const Dataset ds = load_image_folder(root, options_for(10, 10, 1));
        QCOMPARE(ds.class_names, (std::vector<std::string>{"bell\\a", "red\\x1b[31m"}));
        const auto has_control = [](const QString& m) {
            return std::any_of(m.begin(), m.end(), [](QChar c) { return c.unicode() < 0x20; });
        };
        // Scanning: a file that is not an image; decoding: a truncated one.
        write_bytes(root + "/bell\a/x\x1b]0;title\a.png", {'x'});
        QString msg = load_error(root);
        VERIFY_MSG(msg, "bell\\a/x\\x1b]0;title\\a.png", "not a PNG or JPEG");
        QVERIFY2(!has_control(msg), qPrintable(msg));
        const auto png = read_bytes(root + "/bell\a/0.png");
        write_bytes(root + "/bell\a/x\x1b]0;title\a.png",
                    std::vector<uint8_t>(png.begin(), png.begin() + 40));
        msg = load_error(root);
        VERIFY_MSG(msg, "bell\\a/x\\x1b]0;title\\a.png", "is not a sound PNG");
        QVERIFY2(!has_control(msg), qPrintable(msg));
        // The root's own name, in the folder-level messages.
        const std::string odd_root = root + "/set\x07";
        fs::create_directory(odd_root);
        msg = load_error(odd_root);
        VERIFY_MSG(msg, "set\\a", "class folder");
        QVERIFY2(!has_control(msg), qPrintable(msg));
    }

    void readingWritesNothing() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        QVERIFY(write_image_folder(root, {}));
        const auto before = snapshot(root);
        const auto entries = std::distance(fs::recursive_directory_iterator(root), {});
        load_image_folder(root, options_for(8, 8, 3));
        QCOMPARE(snapshot(root), before);
        QCOMPARE(std::distance(fs::recursive_directory_iterator(root), {}), entries);
    }

    void datasetSpecSettingsRoundTripAndName() {
        DatasetSpec spec = image_folder_dataset("/data/pets", 12, 3);
        spec.image_width = 16;
        spec.size_mismatch = "error";
        spec.test_ratio = 0.25;
        spec.seed = 9;
        TrainConfig config;
        config.dataset = spec;
        const DatasetSpec back = train_config_from_json(to_json(config)).dataset;
        QCOMPARE(back.kind, spec.kind);
        QCOMPARE(back.path, spec.path);
        QCOMPARE(back.image_height, 12);
        QCOMPARE(back.image_width, 16);
        QCOMPARE(back.channels, 3);
        QCOMPARE(back.size_mismatch, std::string("error"));
        QCOMPARE(back.test_ratio, 0.25);
        QCOMPARE(back.seed, uint64_t{9});
        // Other kinds keep their JSON as before: no image keys.
        QVERIFY(!to_json(DatasetSpec{}).contains("channels"));

        const auto refused = [&](const char* key, nlohmann::json value) {
            nlohmann::json j = to_json(config);
            j["dataset"][key] = value;
            return error_text<ConfigError>([&] { train_config_from_json(j); });
        };
        VERIFY_MSG(refused("channels", 2), "dataset.channels", "1 (grayscale) or 3 (RGB)", "gets 2");
        VERIFY_MSG(refused("image_height", 0), "dataset.image_height", "1..4096", "gets 0");
        VERIFY_MSG(refused("image_width", 5000), "dataset.image_width", "gets 5000");
        VERIFY_MSG(refused("size_mismatch", "crop"), "dataset.size_mismatch", "\"resize\" or \"error\"",
                   "crop");
        VERIFY_MSG(refused("test_ratio", 1.0), "dataset.test_ratio");
        VERIFY_MSG(refused("channels", "three"), "dataset.channels");
    }

    void loadDatasetNormalisesPerChannel() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        ImageFolderSpec spec;
        spec.channels = 3;
        QVERIFY(write_image_folder(root, spec));
        DatasetSpec ds_spec = image_folder_dataset(root, 10, 3);
        const Dataset ds = load_dataset(ds_spec);
        QCOMPARE(ds.sample_shape, (Shape{3, 10, 10}));
        for (int ch = 0; ch < 3; ++ch) {  // train split: mean 0 per channel after normalisation
            double sum = 0;
            for (int64_t s = 0; s < ds.train_x.dim(0); ++s)
                for (int p = 0; p < 100; ++p) sum += ds.train_x.data()[s * 300 + ch * 100 + p];
            QVERIFY(std::abs(sum / double(ds.train_x.dim(0) * 100)) < 1e-4);
        }
        ds_spec.path.clear();
        VERIFY_MSG(error_text<DataError>([&] { load_dataset(ds_spec); }), "needs a folder");
    }
};

QTEST_GUILESS_MAIN(TestImageFolder)
#include "test_image_folder.moc"
