// printable_text (core/common/printable.h): text read from files reaches messages and stored
// names as valid UTF-8 without anything a terminal acts on; distinct bytes stay distinct.
#include "core/common/printable.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>
#include <string>

using namespace mpwb;
using namespace std::string_literals;

class TestPrintable : public QObject {
    Q_OBJECT

private slots:
    void plain_text_and_utf8_stay() {
        QCOMPARE(printable_text("cats/0001.png"), "cats/0001.png"s);
        QCOMPARE(printable_text("caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x90\x88"),
                 "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x90\x88"s);
        QCOMPARE(quoted_text("a b"), "'a b'"s);
    }

    void controls_are_escaped() {
        QCOMPARE(printable_text("a\x1b[2Jb\a.png"), "a\\x1b[2Jb\\a.png"s);
        QCOMPARE(printable_text("tab\there\nnew\rline"), "tab\\there\\nnew\\rline"s);
        QCOMPARE(printable_text("del\x7f"), "del\\x7f"s);
        QCOMPARE(printable_text(std::string_view("nul\0end", 7)), "nul\\x00end"s);
        QCOMPARE(printable_text("csi\xC2\x9B"), "csi\\u009B"s);                    // C1 CSI, U+009B
        QCOMPARE(printable_text("rlo\xE2\x80\xAEgnp.exe"), "rlo\\u202Egnp.exe"s);  // U+202E
        QCOMPARE(printable_text("back\\slash"), "back\\\\slash"s);  // so "\x1b" typed in a name differs
    }

    // Text a model wrote keeps its lines and tabs; everything else is escaped as printable_text does.
    void lines_keep_their_breaks_and_tabs() {
        QCOMPARE(printable_lines("Q: why?\n\tA: \x1b[31mred\r\n"), "Q: why?\n\tA: \\x1b[31mred\\r\n"s);
        QCOMPARE(printable_lines("\xff\n"), "\\xff\n"s);
        QCOMPARE(printable_lines(""), ""s);
    }

    void invalid_utf8_bytes_are_escaped() {
        QCOMPARE(printable_text("caf\xE9"), "caf\\xe9"s);                       // Latin-1
        QCOMPARE(printable_text("\xC0\xAF"), "\\xc0\\xaf"s);                    // overlong '/'
        QCOMPARE(printable_text("\xED\xA0\x80"), "\\xed\\xa0\\x80"s);           // a surrogate
        QCOMPARE(printable_text("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"s);  // past U+10FFFF
        QCOMPARE(printable_text("cut\xE2\x9C"), "cut\\xe2\\x9c"s);              // a sequence cut short
        std::string every_byte;
        for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
        const std::string text = printable_text(every_byte);
        QVERIFY(!nlohmann::json(text).dump().empty());  // the JSON writer throws on invalid UTF-8
        for (unsigned char c : text) QVERIFY(c >= 0x20 && c != 0x7F);
    }

    // A prompt typed in the Samples tab: the escapes printable_text writes are read back.
    void escapes_are_read_back() {
        QCOMPARE(text_from_printable("Q:\\n\\tA \\\\ \\x1b\\u00e9"), "Q:\n\tA \\ \x1b\xC3\xA9"s);
        QCOMPARE(text_from_printable("C:\\dir\\x4"), "C:\\dir\\x4"s);  // no escape: the backslash stays
        QCOMPARE(text_from_printable("end\\"), "end\\"s);
        std::string every_byte;
        for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
        const std::string samples[] = {every_byte, "caf\xC3\xA9 \xE2\x80\xAE\xC2\x9B \\n", "\n"};
        for (const std::string& bytes : samples) QCOMPARE(text_from_printable(printable_text(bytes)), bytes);
    }

    void long_text_is_cut_at_a_character() {
        QCOMPARE(printable_text("abcdef", 4), "abcd\xE2\x80\xA6"s);
        QCOMPARE(printable_text("ab\xC3\xA9", 3), "ab\xE2\x80\xA6"s);  // not half of the é
        QCOMPARE(printable_text("abc", 3), "abc"s);
    }
};

QTEST_APPLESS_MAIN(TestPrintable)
#include "test_printable.moc"
