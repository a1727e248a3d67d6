// Tests of core/common/json_input: the one JSON reader. Nesting deeper than the limit is refused
// (100k levels, which overflowed the stack of every recursive walk, included), every nlohmann
// exception comes out as a JsonInputError naming the source and the field, and files are
// checked (missing, folder, over the size limit) before their body is read. Also the
// overflow-checked size arithmetic of core/common/checked_arith.h.
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>

#include "core/common/checked_arith.h"
#include "core/common/json_input.h"
#include "tests/common/test_support.h"

using mpwb::test::error_text;
using namespace mpwb;

namespace {

std::string nested_arrays(int depth) {
    return std::string(size_t(depth), '[') + std::string(size_t(depth), ']');
}

QString parse_error(const std::string& text, const JsonLimits& limits = {}) {
    return error_text<JsonInputError>([&] { parse_json_text(text, "test input", limits); });
}

}  // namespace

class TestJsonInput : public QObject {
    Q_OBJECT
private slots:
    void depthLimit() {
        // At the limit: fine.
        const auto ok = parse_json_text(nested_arrays(kJsonMaxDepth), "x");
        QVERIFY(ok.is_array());
        // One more level, and 100k levels (a crafted bundle): refused, naming source and limit.
        VERIFY_MSG(parse_error(nested_arrays(kJsonMaxDepth + 1)), "test input",
                   "nested deeper than 64 levels");
        VERIFY_MSG(parse_error(nested_arrays(100000)), "test input", "nested deeper than 64 levels");
        // Objects count too; a smaller limit is honoured.
        VERIFY_MSG(parse_error(R"({"a": {"b": {"c": 1}}})", JsonLimits{2, kJsonMaxBytes}),
                   "deeper than 2 levels", "at a.b");
        QVERIFY(check_json_text_ok(R"({"a": {"b": 1}})", JsonLimits{2, kJsonMaxBytes}));
    }

    void everyLibraryErrorNamesSourceAndField() {
        // out_of_range.406, which the GUI did not catch (std::terminate).
        QString msg = parse_error(R"({"layers": [{"type": "Linear", "out": 1e400}]})");
        VERIFY_MSG(msg, "test input", "layers[0].out", "1e400");
        QVERIFY2(!msg.contains("json.exception"), qPrintable(msg));
        // parse_error with its position.
        msg = parse_error("{\"layers\": [1, 2,, 3]}");
        VERIFY_MSG(msg, "test input", "not valid JSON", "layers[2]", "line 1");
        msg = parse_error("");
        VERIFY_MSG(msg, "test input", "not valid JSON");
        // Invalid UTF-8 in a string.
        msg = parse_error(std::string("{\"name\": \"a\xff\"}"));
        VERIFY_MSG(msg, "test input", "name");
        // A type_error from reading a parsed value is named by with_json_source.
        const auto j = parse_json_text(R"({"name": 5})", "x");
        msg = error_text<JsonInputError>(
            [&] { with_json_source("preset p.json", [&] { return j.at("name").get<std::string>(); }); });
        VERIFY_MSG(msg, "preset p.json", "type must be string");
        QVERIFY2(!msg.contains("json.exception"), qPrintable(msg));
    }

    void sizeLimit() {
        const std::string big(1000, ' ');
        VERIFY_MSG(parse_error(big + "1", JsonLimits{kJsonMaxDepth, 500}), "test input", "1001 bytes",
                   "500 bytes");
    }

    void files() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        // A folder: the stream library would fail with "basic_filebuf::underflow".
        QString msg = error_text<JsonInputError>([&] { read_json_file(d, "network file"); });
        VERIFY_MSG(msg, "network file", d.c_str(), "is a folder");
        msg = error_text<JsonInputError>([&] { read_json_file(d + "/nope.json", "network file"); });
        VERIFY_MSG(msg, "nope.json", "does not exist");
        // A 50 MB file (sparse, so the test writes almost nothing) is refused from its size,
        // before its body is read: the body is not even JSON, and the message is about the size.
        const std::string huge = d + "/huge.json";
        std::ofstream(huge) << "{\"layers\": [";
        std::filesystem::resize_file(huge, 50u << 20);
        msg = error_text<JsonInputError>([&] { read_json_file(huge, "network file"); });
        VERIFY_MSG(msg, "huge.json", "50 MiB", "4 MiB");
        // A normal file parses; a bad one names the file and the field.
        const std::string good = d + "/good.json";
        std::ofstream(good) << R"({"layers": [{"type": "ReLU"}]})";
        QCOMPARE(read_json_file(good, "network file")["layers"][0]["type"].get<std::string>(),
                 std::string("ReLU"));
        std::ofstream(good) << R"({"layers": [{"type": "Linear", "out": 1e400}]})";
        msg = error_text<JsonInputError>([&] { read_json_file(good, "network file"); });
        VERIFY_MSG(msg, "network file", "good.json", "layers[0].out");
    }

    // The strict setting reader: a field is named by its path, types are not converted, and a
    // number beyond the field's C++ type is refused instead of being cast.
    void settingReader() {
        const auto j = nlohmann::json::parse(
            R"({"epochs": 3, "lr": 0.5, "name": "x", "on": true, "big": 1e300, "huge": 9223372036854775808,
                "neg": -1, "wide": 4294967296})");
        int64_t epochs = 0;
        read_setting(j, "", "epochs", epochs);
        QCOMPARE(epochs, int64_t{3});
        float lr = 0.0f;
        read_setting(j, "opt", "lr", lr);
        QCOMPARE(lr, 0.5f);
        std::string untouched = "kept";
        read_setting(j, "opt", "missing", untouched);
        QCOMPARE(untouched, std::string("kept"));

        auto message = [&](auto value_type, const char* key) {
            return error_text<ConfigError>(
                [&] { (void)setting_value<decltype(value_type)>(j.at(key), std::string("opt.") + key); });
        };
        VERIFY_MSG(message(int{}, "lr"), "setting 'opt.lr' must be an integer, got 0.5");
        VERIFY_MSG(message(bool{}, "epochs"), "'opt.epochs'", "true or false");
        VERIFY_MSG(message(std::string{}, "on"), "'opt.on'", "a string");
        VERIFY_MSG(message(float{}, "name"), "'opt.name'", "a number", "\"x\"");
        VERIFY_MSG(message(float{}, "big"), "'opt.big'", "largest float");
        VERIFY_MSG(message(int64_t{}, "huge"), "'opt.huge'", "64-bit");
        VERIFY_MSG(message(uint64_t{}, "neg"), "'opt.neg'", "unsigned 64-bit");
        VERIFY_MSG(message(int{}, "wide"), "'opt.wide'", "32-bit", "4294967296");
        QCOMPARE(setting_value<double>(j.at("big"), "big"), 1e300);

        // Unknown keys are refused naming the object and the valid keys; non-objects too.
        VERIFY_MSG(error_text<ConfigError>([&] {
                       check_setting_keys(j, "optimizer", {"epochs", "lr"});
                   }),
                   "unknown setting '", "in optimizer", "valid settings: epochs, lr");
        VERIFY_MSG(error_text<ConfigError>(
                       [&] { check_setting_keys(nlohmann::json::array(), "schedule", {"kind"}); }),
                   "schedule must be a JSON object");
        // A long or non-UTF-8 value is shown cut, and showing it does not throw.
        const nlohmann::json long_bad = std::string(500, 'a') + "\xff";
        const QString m = error_text<ConfigError>([&] { (void)setting_value<int>(long_bad, "k"); });
        QVERIFY2(m.size() < 200 && m.contains("setting 'k' must be an integer"), qPrintable(m));
    }

    void checkedArithmetic() {
        QCOMPARE(checked_mul(int64_t{1} << 31, int64_t{1} << 31).value(), int64_t{1} << 62);
        QVERIFY(!checked_mul(4611686018427388032, 784));
        QVERIFY(!checked_add(kInt64Max, 1));
        QCOMPARE(saturating_mul(kInt64Max / 2, 3), kInt64Max);
        QVERIFY(!checked_product({4611686018427388032, 2, 2}));
        QCOMPARE(checked_product({2, 3, 4}).value(), int64_t{24});
        QCOMPARE(QString::fromStdString(size_text(268435456)), QString("268,435,456"));
        QCOMPARE(QString::fromStdString(size_text(kInt64Max)), QString("over 9,223,372,036,854,775,807"));
    }

private:
    static bool check_json_text_ok(const std::string& text, const JsonLimits& limits) {
        check_json_text(text, "x", limits);
        return true;
    }
};

QTEST_APPLESS_MAIN(TestJsonInput)
#include "test_json_input.moc"
