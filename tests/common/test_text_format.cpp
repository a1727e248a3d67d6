// The shared spellings of core/common/text_format.h: shortest round-trip numbers (a double and a
// float read back to the same value, non-finite values by name) and RFC 4180 CSV quoting.
#include "core/common/text_format.h"

#include <QtTest/QtTest>

#include <clocale>
#include <cstdlib>
#include <limits>

using namespace mpwb;

class TestTextFormat : public QObject {
    Q_OBJECT

private slots:
    void numbers_are_shortest_and_round_trip() {
        QCOMPARE(shortest_text(0.1), std::string("0.1"));
        QCOMPARE(shortest_text(0.001f), std::string("0.001"));
        QCOMPARE(shortest_text(65504.0f), std::string("65504"));
        QCOMPARE(shortest_text(std::numeric_limits<double>::quiet_NaN()), std::string("nan"));
        QCOMPARE(shortest_text(-std::numeric_limits<float>::infinity()), std::string("-inf"));
        for (double v : {1.0 / 3.0, 6.103515625e-05, 5.960464477539063e-08, -1e300})
            QCOMPARE(std::strtod(shortest_text(v).c_str(), nullptr), v);
        for (float v : {1.0f / 3.0f, 1.17549435e-38f, 3.4028235e38f})
            QCOMPARE(std::strtof(shortest_text(v).c_str(), nullptr), v);
    }

    void a_float_saved_as_json_reads_as_typed() {
        QCOMPARE(float_as_json_double(0.001f), 0.001);
        QCOMPARE(static_cast<float>(float_as_json_double(1e-4f)), 1e-4f);
        // Whatever locale the GUI set: a comma-decimal one must not turn 0.5 into 0.
        const std::string previous = std::setlocale(LC_NUMERIC, nullptr);
        if (std::setlocale(LC_NUMERIC, "de_DE.UTF-8") || std::setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
            QCOMPARE(float_as_json_double(0.5f), 0.5);
            std::setlocale(LC_NUMERIC, previous.c_str());
        }
    }

    void csv_fields_are_quoted_only_when_needed() {
        QCOMPARE(csv_field("plain"), std::string("plain"));
        QCOMPARE(csv_field("a,b"), std::string("\"a,b\""));
        QCOMPARE(csv_field("say \"hi\""), std::string("\"say \"\"hi\"\"\""));
        QCOMPARE(csv_field("two\nlines"), std::string("\"two\nlines\""));
        QCOMPARE(csv_field("cr\r"), std::string("\"cr\r\""));
        QCOMPARE(csv_field(""), std::string(""));
    }
};

QTEST_GUILESS_MAIN(TestTextFormat)
#include "test_text_format.moc"
