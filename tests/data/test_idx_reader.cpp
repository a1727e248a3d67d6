// Tests of the IDX reader: small files written here (raw and gzip) read back exactly, every kind
// of broken file gives a DataError naming the problem and the file, and the installed
// Fashion-MNIST loads completely when the Debian package is present.
#include <QtTest>
#include <QElapsedTimer>
#include <QTemporaryDir>

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/common/error.h"
#include "core/data/idx_reader.h"
#include "core/data/normalize.h"
#include "tests/common/test_support.h"

using mpwb::test::error_text;

using namespace mpwb;

namespace {

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

std::vector<uint8_t> images_bytes(uint32_t count, uint32_t rows, uint32_t cols,
                                  const std::vector<uint8_t>& pixels, uint32_t magic = 0x803) {
    std::vector<uint8_t> b;
    put_be32(b, magic);
    put_be32(b, count);
    put_be32(b, rows);
    put_be32(b, cols);
    b.insert(b.end(), pixels.begin(), pixels.end());
    return b;
}

std::vector<uint8_t> labels_bytes(uint32_t count, const std::vector<uint8_t>& labels) {
    std::vector<uint8_t> b;
    put_be32(b, 0x801);
    put_be32(b, count);
    b.insert(b.end(), labels.begin(), labels.end());
    return b;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes, bool gz) {
    if (gz) {
        gzFile f = gzopen(path.c_str(), "wb");
        QVERIFY(f);
        QCOMPARE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), int(bytes.size()));
        gzclose(f);
    } else {
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
}

// Deterministic pixel pattern covering 0 and 255.
std::vector<uint8_t> pattern(size_t n, int salt) {
    std::vector<uint8_t> p(n);
    for (size_t i = 0; i < n; ++i)
        p[i] = static_cast<uint8_t>((i * 37 + static_cast<size_t>(salt) * 11) % 256);
    return p;
}

struct MiniSet {
    std::vector<uint8_t> train_px, test_px, train_lb, test_lb;
};

// A complete 4-file set of rows x cols images (5 train, 3 test) in dir.
MiniSet write_set(const std::string& dir, uint32_t rows, uint32_t cols, bool gz) {
    MiniSet s;
    s.train_px = pattern(5 * rows * cols, 1);
    s.test_px = pattern(3 * rows * cols, 2);
    s.train_lb = {0, 9, 3, 3, 7};
    s.test_lb = {1, 2, 9};
    const std::string ext = gz ? ".gz" : "";
    write_file(dir + "/train-images-idx3-ubyte" + ext, images_bytes(5, rows, cols, s.train_px), gz);
    write_file(dir + "/train-labels-idx1-ubyte" + ext, labels_bytes(5, s.train_lb), gz);
    write_file(dir + "/t10k-images-idx3-ubyte" + ext, images_bytes(3, rows, cols, s.test_px), gz);
    write_file(dir + "/t10k-labels-idx1-ubyte" + ext, labels_bytes(3, s.test_lb), gz);
    return s;
}

void check_split(const Tensor& x, const Tensor& y, const std::vector<uint8_t>& px,
                 const std::vector<uint8_t>& lb, int64_t rows, int64_t cols) {
    const auto n = static_cast<int64_t>(lb.size());
    QCOMPARE(x.shape(), (Shape{n, 1, rows, cols}));
    QCOMPARE(y.shape(), (Shape{n}));
    for (size_t i = 0; i < px.size(); ++i)
        QCOMPARE(x[static_cast<int64_t>(i)], static_cast<float>(px[i]) / 255.0f);
    for (size_t i = 0; i < lb.size(); ++i) QCOMPARE(y[static_cast<int64_t>(i)], static_cast<float>(lb[i]));
}

}  // namespace

class TestIdxReader : public QObject {
    Q_OBJECT
private slots:
    void raw_and_gzip_read_back_exactly() {
        for (bool gz : {false, true}) {
            QTemporaryDir tmp;
            const std::string dir = tmp.path().toStdString() + "/mnist-mini";
            std::filesystem::create_directory(dir);
            const MiniSet s = write_set(dir, 28, 28, gz);
            const IdxImages img = read_idx_images(dir + "/train-images-idx3-ubyte" + (gz ? ".gz" : ""));
            QCOMPARE(img.count, int64_t{5});
            QCOMPARE(img.rows, int64_t{28});
            QVERIFY(img.pixels == s.train_px);
            const Dataset ds = load_idx_dataset(dir);
            QCOMPARE(ds.sample_shape, (Shape{1, 28, 28}));
            QCOMPARE(ds.num_classes, 10);
            QCOMPARE(ds.name, std::string("mnist-mini"));
            QCOMPARE(ds.class_names.size(), size_t{10});
            QCOMPARE(ds.class_names[0], std::string("0"));
            QCOMPARE(ds.class_names[9], std::string("9"));
            check_split(ds.train_x, ds.train_y, s.train_px, s.train_lb, 28, 28);
            check_split(ds.test_x, ds.test_y, s.test_px, s.test_lb, 28, 28);
        }
    }

    void any_image_size_and_fashion_names() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString() + "/My-Fashion-Set";
        std::filesystem::create_directory(dir);
        const MiniSet s = write_set(dir, 5, 3, false);
        // Mixed: replace one file by its gzip version.
        std::filesystem::remove(dir + "/t10k-labels-idx1-ubyte");
        write_file(dir + "/t10k-labels-idx1-ubyte.gz", labels_bytes(3, s.test_lb), true);
        const Dataset ds = load_idx_dataset(dir + "/");  // trailing slash is fine
        QCOMPARE(ds.sample_shape, (Shape{1, 5, 3}));
        check_split(ds.train_x, ds.train_y, s.train_px, s.train_lb, 5, 3);
        check_split(ds.test_x, ds.test_y, s.test_px, s.test_lb, 5, 3);
        QCOMPARE(ds.class_names[0], std::string("T-shirt/top"));
        QCOMPARE(ds.class_names[9], std::string("Ankle boot"));
    }

    void truncated_files() {
        QTemporaryDir tmp;
        const std::string raw = tmp.path().toStdString() + "/imgs";
        // Header says 10 images of 28x28; only 5 present.
        write_file(raw, images_bytes(10, 28, 28, pattern(5 * 784, 0)), false);
        QString msg = error_text<DataError>([&] { read_idx_images(raw); });
        VERIFY_MSG(msg, "truncated", raw.c_str(), "7856", "3936");

        // Inside the header.
        write_file(raw, {0, 0, 8, 3, 0, 0}, false);
        msg = error_text<DataError>([&] { read_idx_images(raw); });
        VERIFY_MSG(msg, "truncated", raw.c_str(), "16", "6 bytes");

        // A gzip file cut in half.
        const std::string gz = tmp.path().toStdString() + "/imgs.gz";
        write_file(gz, images_bytes(50, 28, 28, pattern(50 * 784, 3)), true);
        const auto size = std::filesystem::file_size(gz);
        std::filesystem::resize_file(gz, size / 2);
        msg = error_text<DataError>([&] { read_idx_images(gz); });
        VERIFY_MSG(msg, "truncated", gz.c_str());

        // A gzip file missing only its 8-byte trailer still counts as truncated.
        write_file(gz, labels_bytes(4, {1, 2, 3, 4}), true);
        std::filesystem::resize_file(gz, std::filesystem::file_size(gz) - 8);
        msg = error_text<DataError>([&] { read_idx_labels(gz); });
        VERIFY_MSG(msg, "truncated", gz.c_str());
    }

    void trailing_garbage() {
        QTemporaryDir tmp;
        const std::string path = tmp.path().toStdString() + "/labels";
        auto bytes = labels_bytes(4, {1, 2, 3, 4});
        bytes.insert(bytes.end(), {9, 9, 9});
        write_file(path, bytes, false);
        const QString msg = error_text<DataError>([&] { read_idx_labels(path); });
        VERIFY_MSG(msg, "3 unexpected trailing bytes", path.c_str(), "expected 12", "has 15");
    }

    void wrong_magic() {
        QTemporaryDir tmp;
        const std::string path = tmp.path().toStdString() + "/train-images-idx3-ubyte";
        write_file(path, labels_bytes(4, {1, 2, 3, 4}), false);
        QString msg = error_text<DataError>([&] { read_idx_images(path); });
        VERIFY_MSG(msg, "magic", "0x00000801", "0x00000803", path.c_str(), "label file");
        write_file(path, images_bytes(1, 2, 2, {1, 2, 3, 4}, 0x12345678), false);
        msg = error_text<DataError>([&] { read_idx_images(path); });
        VERIFY_MSG(msg, "magic", "0x12345678", path.c_str());
        write_file(path, images_bytes(1, 2, 2, {1, 2, 3, 4}), false);
        msg = error_text<DataError>([&] { read_idx_labels(path); });
        VERIFY_MSG(msg, "magic", "0x00000803", "image file");
    }

    void wrong_dimensions() {
        QTemporaryDir tmp;
        const std::string path = tmp.path().toStdString() + "/imgs";
        // Header says 28x28 but the data is sized for 14x14 images.
        write_file(path, images_bytes(3, 28, 28, pattern(3 * 14 * 14, 0)), false);
        QString msg = error_text<DataError>([&] { read_idx_images(path); });
        VERIFY_MSG(msg, path.c_str(), "3 images of 28x28", "expected 2368", "has 604");
        write_file(path, images_bytes(3, 0, 28, {}), false);
        msg = error_text<DataError>([&] { read_idx_images(path); });
        VERIFY_MSG(msg, path.c_str(), "dimensions", "0x28");
    }

    void count_mismatch_and_missing_files() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        write_set(dir, 4, 4, false);
        write_file(dir + "/train-labels-idx1-ubyte", labels_bytes(4, {1, 2, 3, 4}), false);
        QString msg = error_text<DataError>([&] { load_idx_dataset(dir); });
        VERIFY_MSG(msg, "mismatch", "5 images", "4 labels", "train-labels-idx1-ubyte");

        std::filesystem::remove(dir + "/train-labels-idx1-ubyte");
        msg = error_text<DataError>([&] { load_idx_dataset(dir); });
        const std::string missing = dir + "/train-labels-idx1-ubyte";
        VERIFY_MSG(msg, "missing", missing.c_str());

        msg = error_text<DataError>([&] { load_idx_dataset(dir + "/no-such-folder"); });
        VERIFY_MSG(msg, "no-such-folder", "does not exist");

        // Train and test with different image sizes.
        const std::string d2 = dir + "/mixed";
        std::filesystem::create_directory(d2);
        write_set(d2, 4, 4, false);
        write_file(d2 + "/t10k-images-idx3-ubyte", images_bytes(3, 5, 5, pattern(75, 0)), false);
        msg = error_text<DataError>([&] { load_idx_dataset(d2); });
        VERIFY_MSG(msg, "4x4", "5x5", "t10k-images-idx3-ubyte");
    }

    // A path holding escape or bell is escaped in the message, not printed raw to the terminal.
    void messages_escape_the_path() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString() + "/set\x1b[31m\a";
        std::filesystem::create_directory(dir);
        write_set(dir, 4, 4, false);
        write_file(dir + "/train-labels-idx1-ubyte", labels_bytes(4, {1, 2, 3, 4}), false);
        const QString msg = error_text<DataError>([&] { load_idx_dataset(dir); });
        VERIFY_MSG(msg, "mismatch", "set\\x1b[31m\\a/train-labels-idx1-ubyte");
        QVERIFY2(std::none_of(msg.begin(), msg.end(), [](QChar c) { return c.unicode() < 0x20; }),
                 qPrintable(msg));
    }

    void label_out_of_range() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        write_set(dir, 4, 4, true);
        write_file(dir + "/t10k-labels-idx1-ubyte.gz", labels_bytes(3, {1, 10, 2}), true);
        const QString msg = error_text<DataError>([&] { load_idx_dataset(dir); });
        VERIFY_MSG(msg, "label 10", "index 1", "t10k-labels-idx1-ubyte.gz", "[0, 10)");
    }

    void corrupt_gzip() {
        QTemporaryDir tmp;
        const std::string path = tmp.path().toStdString() + "/x.gz";
        // gzip magic, then garbage.
        write_file(path, {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0, 1, 2, 3}, false);
        const QString msg = error_text<DataError>([&] { read_idx_images(path); });
        VERIFY_MSG(msg, path.c_str());
        QVERIFY2(msg.contains("gzip") || msg.contains("truncated"), qPrintable(msg));
    }

    // A .gz image file whose header promises far more images than its label file has labels:
    // the counts are compared from the two headers before the body is inflated (a 2 MB file
    // inflating to 2^31 images took 6.5 GB first). The body here is damaged past its first
    // megabyte, so an error about the damage would show that the body was read.
    void counts_compared_before_the_body_is_read() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        write_set(dir, 32, 32, true);
        std::vector<uint8_t> noise(4u << 20);
        uint32_t state = 12345;
        for (uint8_t& b : noise) {  // incompressible, so the damage sits far into the file
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            b = static_cast<uint8_t>(state);
        }
        const std::string images = dir + "/train-images-idx3-ubyte.gz";
        write_file(images, images_bytes(4096, 32, 32, noise), true);
        {
            std::fstream f(images, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(-4096, std::ios::end);
            const std::string junk(2048, '\xff');
            f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
        }
        const QString msg = error_text<DataError>([&] { load_idx_dataset(dir); });
        VERIFY_MSG(msg, "mismatch", "4096 images", "5 labels", "train-images-idx3-ubyte.gz");
    }

    // Dimensions whose product is beyond the element limit are refused from the header.
    void element_limit_from_the_header() {
        QTemporaryDir tmp;
        const std::string path = tmp.path().toStdString() + "/big.gz";
        write_file(path, images_bytes(100000, 1000, 1000, pattern(64, 0)), true);
        const QString msg = error_text<DataError>([&] { read_idx_images(path); });
        VERIFY_MSG(msg, "big.gz", "100000 images of 1000x1000", "100,000,000,000", "limit");
        // 2^32-1 labels in a raw file of 9 bytes: refused from the header and the file's size.
        const std::string labels = tmp.path().toStdString() + "/labels";
        write_file(labels, labels_bytes(0xFFFFFFFFu, {1}), false);
        VERIFY_MSG(error_text<DataError>([&] { read_idx_labels(labels); }), "labels", "4294967295 labels");
    }

    // A folder given where a file is expected (fopen succeeds on a folder).
    void folder_instead_of_file() {
        QTemporaryDir tmp;
        const std::string dir = tmp.path().toStdString();
        VERIFY_MSG(error_text<DataError>([&] { read_idx_images(dir); }), dir.c_str(), "is a folder");
        VERIFY_MSG(error_text<DataError>([&] { read_idx_labels(dir); }), dir.c_str(), "is a folder");
    }

    void installed_fashion_mnist() {
        if (!std::filesystem::exists(kDebianFashionMnistDir))
            QSKIP(
                "Fashion-MNIST not installed at /usr/share/datasets/fashion-mnist "
                "(Debian package dataset-fashion-mnist)");
        QElapsedTimer timer;
        timer.start();
        const Dataset ds = load_idx_dataset(kDebianFashionMnistDir);
        qInfo("loaded Fashion-MNIST (70000 images) in %lld ms", static_cast<long long>(timer.elapsed()));
        QCOMPARE(ds.train_x.shape(), (Shape{60000, 1, 28, 28}));
        QCOMPARE(ds.test_x.shape(), (Shape{10000, 1, 28, 28}));
        QCOMPARE(ds.train_y.shape(), (Shape{60000}));
        QCOMPARE(ds.test_y.shape(), (Shape{10000}));
        QCOMPARE(ds.class_names[0], std::string("T-shirt/top"));
        check_dataset_finite(ds);
        for (const Tensor* t : {&ds.train_x, &ds.test_x}) {
            float lo = 1, hi = 0;
            for (float v : t->span()) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
            QCOMPARE(lo, 0.0f);
            QCOMPARE(hi, 1.0f);
        }
        // Fashion-MNIST is balanced: 6000 train and 1000 test images per class.
        int64_t train_counts[10] = {}, test_counts[10] = {};
        for (float v : ds.train_y.span()) train_counts[static_cast<int>(v)]++;
        for (float v : ds.test_y.span()) test_counts[static_cast<int>(v)]++;
        for (int k = 0; k < 10; ++k) {
            QCOMPARE(train_counts[k], int64_t{6000});
            QCOMPARE(test_counts[k], int64_t{1000});
        }
    }
};

QTEST_APPLESS_MAIN(TestIdxReader)
#include "test_idx_reader.moc"
