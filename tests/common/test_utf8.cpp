// core/common/utf8.h: which byte sequences are well-formed UTF-8 (Unicode table 3-7), where the
// first bad one is, how each bad sequence becomes one U+FFFD, and JSON of such text written
// instead of thrown.
#include "core/common/utf8.h"

#include <QtTest/QtTest>

using namespace mpwb;

class TestUtf8 : public QObject {
    Q_OBJECT

private slots:
    void wellFormedTextIsValid() {
        for (const char* text : {"", "plain ascii", "\xC3\xA9t\xC3\xA9", "\xE2\x82\xAC", "\xED\x9F\xBF",
                                 "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"})
            QVERIFY2(is_valid_utf8(text), text);
        QVERIFY(is_valid_utf8(std::string_view("a\0b", 3)));
    }

    void eachKindOfBadSequenceIsFound_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<int>("offset");
        QTest::newRow("lone continuation") << QByteArray("ab\x80") << 2;
        QTest::newRow("invalid lead") << QByteArray("\xFF") << 0;
        QTest::newRow("overlong 2") << QByteArray("x\xC0\xAF") << 1;
        QTest::newRow("overlong 3") << QByteArray("\xE0\x80\xAF") << 0;
        QTest::newRow("overlong 4") << QByteArray("\xF0\x80\x80\xAF") << 0;
        QTest::newRow("surrogate") << QByteArray("\xED\xA0\x80") << 0;
        QTest::newRow("above U+10FFFF") << QByteArray("\xF4\x90\x80\x80") << 0;
        QTest::newRow("cut short") << QByteArray("ok\xE2\x82") << 2;
        QTest::newRow("after a good one") << QByteArray("\xC3\xA9\xC3") << 2;
    }
    void eachKindOfBadSequenceIsFound() {
        QFETCH(QByteArray, text);
        QFETCH(int, offset);
        const std::string_view view(text.constData(), static_cast<std::size_t>(text.size()));
        QVERIFY(!is_valid_utf8(view));
        QCOMPARE(first_invalid_utf8(view), static_cast<std::size_t>(offset));
        QVERIFY(utf8_problem(view).find("at offset " + std::to_string(offset)) != std::string::npos);
    }

    void problemNamesTheByte() {
        QCOMPARE(utf8_problem("run \xFF"), std::string("byte 0xFF at offset 4 is not valid UTF-8"));
        QCOMPARE(utf8_problem("fine"), std::string());
    }

    // One U+FFFD per maximal ill-formed part: "\xE2\x82" (a cut three-byte form) is one, "\xC0\xAF"
    // (a lead that starts nothing, then a stray continuation byte) is two.
    void repairReplacesMaximalParts() {
        const std::string fffd = "\xEF\xBF\xBD";
        QCOMPARE(replace_invalid_utf8("a\xE2\x82z"), "a" + fffd + "z");
        QCOMPARE(replace_invalid_utf8("\xC0\xAF"), fffd + fffd);
        QCOMPARE(replace_invalid_utf8("\xF0\x9F\x98\x80 ok"), std::string("\xF0\x9F\x98\x80 ok"));
        QCOMPARE(replace_invalid_utf8("end\xF4"), "end" + fffd);
        QVERIFY(is_valid_utf8(replace_invalid_utf8("\xFF\xFE\xED\xA0\x80\xF4\x90")));
    }

    // nlohmann's dump throws type_error 316 on the first bad byte; json_text writes U+FFFD.
    void jsonTextReplacesInsteadOfThrowing() {
        const nlohmann::json j{{"name", "bad \xFF name"}, {"ok", "fine"}};
        QVERIFY_THROWS_EXCEPTION(nlohmann::json::type_error, (void)j.dump());
        const std::string text = json_text(j);
        QVERIFY(is_valid_utf8(text));
        QCOMPARE(nlohmann::json::parse(text)["name"].get<std::string>(),
                 std::string("bad \xEF\xBF\xBD name"));
        QVERIFY(json_text(j, 2).find('\n') != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestUtf8)
#include "test_utf8.moc"
