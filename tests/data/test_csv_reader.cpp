// Tests of the CSV reader: headers, label column by name and index, class mapping of string and
// arbitrary integer labels, regression, the seeded split, and errors that name line and column.
#include <QtTest>
#include <QTemporaryDir>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/common/error.h"
#include "core/data/csv_reader.h"
#include "core/train/dataset_source.h"
#include "tests/common/test_support.h"

using mpwb::test::error_text;

using namespace mpwb;

namespace {

std::string write(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir.path().toStdString() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

// Every (features -> target) pair of both splits; features joined as text for lookup.
std::map<std::vector<float>, float> pairs(const Dataset& ds) {
    std::map<std::vector<float>, float> out;
    const int64_t nf = ds.sample_shape[0];
    for (int split = 0; split < 2; ++split) {
        const Tensor& x = split ? ds.test_x : ds.train_x;
        const Tensor& y = split ? ds.test_y : ds.train_y;
        for (int64_t i = 0; i < x.dim(0); ++i)
            out[std::vector<float>(x.data() + i * nf, x.data() + (i + 1) * nf)] = y[i];
    }
    return out;
}

}  // namespace

class TestCsvReader : public QObject {
    Q_OBJECT
private slots:
    void header_and_integer_labels() {
        QTemporaryDir tmp;
        std::string text = "x1, x2 ,label\n";
        std::map<std::vector<float>, float> expect;
        for (int i = 0; i < 20; ++i) {
            const float a = i * 0.5f, b = -i * 1.25f;
            const int label = i % 3;
            text += std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(label) + "\n";
            expect[{a, b}] = static_cast<float>(label);
        }
        const std::string path = write(tmp, "points.csv", text);
        CsvOptions opt;
        opt.test_ratio = 0.25;
        const Dataset ds = load_csv_dataset(path, opt);
        QCOMPARE(ds.name, std::string("points"));
        QCOMPARE(ds.num_classes, 3);
        QCOMPARE(ds.sample_shape, (Shape{2}));
        QCOMPARE(ds.train_x.shape(), (Shape{15, 2}));
        QCOMPARE(ds.test_x.shape(), (Shape{5, 2}));
        QCOMPARE(ds.train_y.shape(), (Shape{15}));
        QVERIFY(pairs(ds) == expect);
        QCOMPARE(ds.class_names, (std::vector<std::string>{"0", "1", "2"}));

        // Same seed, same split; another seed, another split.
        const Dataset again = load_csv_dataset(path, opt);
        QVERIFY(std::equal(ds.test_y.span().begin(), ds.test_y.span().end(), again.test_y.span().begin()));
        QVERIFY(std::equal(ds.test_x.span().begin(), ds.test_x.span().end(), again.test_x.span().begin()));
        opt.seed = 2;
        const Dataset other = load_csv_dataset(path, opt);
        QVERIFY(!std::equal(ds.test_x.span().begin(), ds.test_x.span().end(), other.test_x.span().begin()));
        QVERIFY(pairs(other) == expect);
    }

    void string_labels_by_name() {
        QTemporaryDir tmp;
        // Label in the middle column, quoted cells, CRLF, comments, blank lines, a BOM.
        const std::string path = write(tmp, "animals.csv",
                                       "\xEF\xBB\xBFweight,species,height\r\n"
                                       "# a comment\r\n"
                                       "1.5,dog,30\r\n"
                                       "\r\n"
                                       "0.2,\"cat\",25\r\n"
                                       "3e1,bird,5\r\n"
                                       " 2 , dog , 40 \r\n"
                                       "0.5,cat,\"26\"\r\n");
        CsvOptions opt;
        opt.label_name = "species";
        opt.test_ratio = 0.4;
        const Dataset ds = load_csv_dataset(path, opt);
        QCOMPARE(ds.class_names, (std::vector<std::string>{"bird", "cat", "dog"}));
        QCOMPARE(ds.num_classes, 3);
        QCOMPARE(ds.train_size() + ds.test_size(), int64_t{5});
        QCOMPARE(ds.test_size(), int64_t{2});
        const std::map<std::vector<float>, float> expect = {
            {{1.5f, 30}, 2}, {{0.2f, 25}, 1}, {{30, 5}, 0}, {{2, 40}, 2}, {{0.5f, 26}, 1}};
        QVERIFY(pairs(ds) == expect);

        // By index: column 0 as a (non-integer) label is refused for classification.
        opt.label_name.clear();
        opt.label_index = 0;
        const QString msg = error_text<DataError>([&] { load_csv_dataset(path, opt); });
        VERIFY_MSG(msg, "line 3", "column", "not a number");  // 'dog' is now a feature
    }

    void arbitrary_integers_remapped() {
        QTemporaryDir tmp;
        const std::string path = write(tmp, "pm.csv", "1,2,-1\n3,4,1\n5,6,-1\n7,8,1\n");
        const Dataset ds = load_csv_dataset(path);  // no header: first row is numeric
        QCOMPARE(ds.class_names, (std::vector<std::string>{"-1", "1"}));
        const std::map<std::vector<float>, float> expect = {
            {{1, 2}, 0}, {{3, 4}, 1}, {{5, 6}, 0}, {{7, 8}, 1}};
        QVERIFY(pairs(ds) == expect);

        const std::string p2 = write(tmp, "123.csv", "a,b\n0.1,3\n0.2,1\n0.3,2\n0.4,10\n");
        const Dataset d2 = load_csv_dataset(p2);
        QCOMPARE(d2.class_names, (std::vector<std::string>{"1", "2", "3", "10"}));  // numeric order
        QCOMPARE(d2.sample_shape, (Shape{1}));
        const std::map<std::vector<float>, float> e2 = {{{0.1f}, 2}, {{0.2f}, 0}, {{0.3f}, 1}, {{0.4f}, 3}};
        QVERIFY(pairs(d2) == e2);
    }

    void regression() {
        QTemporaryDir tmp;
        const std::string path = write(tmp, "reg.csv", "y,a,b\n0.5,1,2\n-1.25,3,4\n7,5,6\n2.5e-3,7,8\n");
        CsvOptions opt;
        opt.regression = true;
        opt.label_index = 0;
        opt.test_ratio = 0.5;
        const Dataset ds = load_csv_dataset(path, opt);
        QCOMPARE(ds.num_classes, 0);
        QVERIFY(ds.class_names.empty());
        QCOMPARE(ds.train_y.shape(), (Shape{2, 1}));
        QCOMPARE(ds.test_y.shape(), (Shape{2, 1}));
        QCOMPARE(ds.target_width(), int64_t{1});
        const std::map<std::vector<float>, float> expect = {
            {{1, 2}, 0.5f}, {{3, 4}, -1.25f}, {{5, 6}, 7.0f}, {{7, 8}, 2.5e-3f}};
        QVERIFY(pairs(ds) == expect);

        const std::string bad = write(tmp, "regnan.csv", "a,y\n1,2\n3,nan\n");
        const QString msg =
            error_text<DataError>([&] { load_csv_dataset(bad, opt = CsvOptions{.regression = true}); });
        VERIFY_MSG(msg, "line 3", "column 2", "'y'", "NaN");
    }

    void errors_name_line_and_column() {
        QTemporaryDir tmp;
        QString msg;
        msg = error_text<DataError>(
            [&] { load_csv_dataset(write(tmp, "r.csv", "a,b,c\n1,2,0\n3,4,1\n5,6\n")); });
        VERIFY_MSG(msg, "r.csv", "line 4", "ragged", "2 cells", "expected 3");

        msg =
            error_text<DataError>([&] { load_csv_dataset(write(tmp, "n.csv", "a,b,c\n1,2,0\n3,abc,1\n")); });
        VERIFY_MSG(msg, "n.csv", "line 3", "column 2", "('b')", "'abc' is not a number");

        msg = error_text<DataError>(
            [&] { load_csv_dataset(write(tmp, "nan.csv", "1,2,0\n3,4,1\nNaN,6,0\n")); });
        VERIFY_MSG(msg, "line 3", "column 1", "NaN");

        msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "inf.csv", "1,2,0\n3,-inf,1\n")); });
        VERIFY_MSG(msg, "line 2", "column 2", "infinite");
        msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "big.csv", "1,2,0\n3,1e39,1\n")); });
        VERIFY_MSG(msg, "line 2", "column 2", "infinite");

        msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "e.csv", "a,b,c\n1,,0\n2,3,1\n")); });
        VERIFY_MSG(msg, "line 2", "column 2", "empty cell");

        msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "empty.csv", "")); });
        VERIFY_MSG(msg, "empty.csv", "empty");
        msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "blank.csv", "\n\n  \n")); });
        VERIFY_MSG(msg, "empty");
        msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "h.csv", "a,b,c\n")); });
        VERIFY_MSG(msg, "no data rows");
        msg = error_text<DataError>([&] { load_csv_dataset(tmp.path().toStdString() + "/nope.csv"); });
        VERIFY_MSG(msg, "nope.csv", "cannot open");

        msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "f.csv", "a,b\n1,0.5\n2,1\n")); });
        VERIFY_MSG(msg, "line 2", "not an integer", "regression");
        msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "one.csv", "a,b\n1,x\n2,x\n")); });
        VERIFY_MSG(msg, "single class", "'x'");

        const std::string good = write(tmp, "g.csv", "a,b,c\n1,2,0\n3,4,1\n");
        CsvOptions opt;
        opt.label_name = "label";
        msg = error_text<ConfigError>([&] { load_csv_dataset(good, opt); });
        VERIFY_MSG(msg, "'label'", "a, b, c");
        opt = {};
        opt.label_index = 5;
        msg = error_text<ConfigError>([&] { load_csv_dataset(good, opt); });
        VERIFY_MSG(msg, "index 5", "3 columns");
        opt = {};
        opt.test_ratio = 1.0;
        QVERIFY_THROWS_EXCEPTION(ConfigError, load_csv_dataset(good, opt));
    }

    // Inputs whose errors explained nothing: label_column "-" ("stoi"), a one-row file ("single
    // class"), a folder given as the file ("basic_filebuf::underflow").
    void hostile_inputs_name_file_field_and_problem() {
        QTemporaryDir tmp;
        const std::string good = write(tmp, "g.csv", "a,b,c\n1,2,0\n3,4,1\n");
        DatasetSpec spec;
        spec.kind = "csv";
        spec.path = good;
        spec.normalize = false;
        for (const char* text : {"-", "--1", "1-", "99999999999999999999"}) {
            spec.label_column = text;
            const QString msg = error_text<ConfigError>([&] { load_dataset(spec); });
            VERIFY_MSG(msg, "label_column", text, "g.csv");
        }
        spec.label_column = "-1";
        QCOMPARE(load_dataset(spec).sample_shape, (Shape{2}));
        spec.label_column = "c";
        QCOMPARE(load_dataset(spec).num_classes, 2);

        QString msg = error_text<DataError>([&] { load_csv_dataset(write(tmp, "row.csv", "a,b\n1,0\n")); });
        VERIFY_MSG(msg, "row.csv", "1 data row", "at least 2");
        QVERIFY2(!msg.contains("single class"), qPrintable(msg));

        const std::string folder = tmp.path().toStdString();
        msg = error_text<DataError>([&] { load_csv_dataset(folder); });
        VERIFY_MSG(msg, folder.c_str(), "is a folder");

        // Over the size limit: refused from its size (a sparse file; nothing is read).
        const std::string huge = write(tmp, "huge.csv", "a,b\n");
        std::filesystem::resize_file(huge, 300u << 20);
        msg = error_text<DataError>([&] { load_csv_dataset(huge); });
        VERIFY_MSG(msg, "huge.csv", "300 MiB", "256 MiB");
    }

    // A file name, a cell or a header field holding escape or bell would act on the terminal that
    // prints the message; each is escaped, and a long cell is cut.
    void messages_escape_what_the_file_holds() {
        QTemporaryDir tmp;
        const auto has_control = [](const QString& m) {
            return std::any_of(m.begin(), m.end(), [](QChar c) { return c.unicode() < 0x20; });
        };
        const std::string named = write(tmp, "t\x1b[2J\a.csv", "a,b\n1,0\n");
        QString msg = error_text<DataError>([&] { load_csv_dataset(named); });
        VERIFY_MSG(msg, "t\\x1b[2J\\a.csv", "1 data row");
        QVERIFY2(!has_control(msg), qPrintable(msg));
        const std::string cell = write(tmp, "cell.csv", "x\x1b]0;t\a,label\n1\x1b[31m,0\n2,1\n");
        msg = error_text<DataError>([&] { load_csv_dataset(cell); });
        VERIFY_MSG(msg, "'x\\x1b]0;t\\a'", "'1\\x1b[31m' is not a number");
        QVERIFY2(!has_control(msg), qPrintable(msg));
        const std::string long_cell =
            write(tmp, "long.csv", "a,b\n" + std::string(100000, '7') + "z,0\n2,1\n");
        msg = error_text<DataError>([&] { load_csv_dataset(long_cell); });
        VERIFY_MSG(msg, "is not a number", "\u2026'");
        QVERIFY2(msg.size() < 300, qPrintable(msg));
        // String class names are stored with the run: escaped like the messages.
        const std::string labels =
            write(tmp, "labels.csv", "a,label\n1,cat\a\n2,dog\xFF\n3,cat\a\n4,dog\xFF\n");
        QCOMPARE(load_csv_dataset(labels).class_names, (std::vector<std::string>{"cat\\a", "dog\\xff"}));
    }

    void explicit_header_modes() {
        QTemporaryDir tmp;
        // A numeric header ("1,2,3") is only recognised when asked for.
        const std::string path = write(tmp, "nh.csv", "1,2,3\n4,5,0\n6,7,1\n8,9,0\n");
        CsvOptions opt;
        opt.header = CsvHeader::Yes;
        opt.test_ratio = 0.34;
        const Dataset ds = load_csv_dataset(path, opt);
        QCOMPARE(ds.train_size() + ds.test_size(), int64_t{3});
        opt.header = CsvHeader::No;
        const Dataset all = load_csv_dataset(path, opt);
        QCOMPARE(all.train_size() + all.test_size(), int64_t{4});
        QCOMPARE(all.num_classes, 3);  // labels 3, 0, 1, 0 -> remapped (not 0..K-1)
        QCOMPARE(all.class_names, (std::vector<std::string>{"0", "1", "3"}));
        // Semicolon-separated.
        opt = {};
        opt.delimiter = ';';
        const Dataset semi = load_csv_dataset(write(tmp, "s.csv", "a;b\n1.5;0\n2;1\n"), opt);
        QCOMPARE(semi.sample_shape, (Shape{1}));
        QCOMPARE(semi.num_classes, 2);
    }
};

QTEST_APPLESS_MAIN(TestCsvReader)
#include "test_csv_reader.moc"
