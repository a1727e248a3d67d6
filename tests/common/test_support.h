// Checks shared by the Qt Test executables: the text of an expected exception, messages that
// must name things, and exact float comparison (QCOMPARE compares floats fuzzily).
#pragma once
#include <QString>
#include <QtTest>
#include <exception>

namespace mpwb::test {

// The message of the E that f() throws; a marker text when it throws nothing or something else,
// so a check on the text fails with a readable reason.
template <class E, class F>
QString error_text(F f) {
    try {
        f();
    } catch (const E& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return QString("<wrong exception type: %1>").arg(e.what());
    }
    return "<no exception>";
}

}  // namespace mpwb::test

// Every needle must appear in msg.
#define VERIFY_MSG(msg, ...)                                                  \
    do {                                                                      \
        const QString m_ = (msg);                                             \
        for (const char* needle : {__VA_ARGS__})                              \
            QVERIFY2(m_.contains(QString::fromUtf8(needle)),                  \
                     qPrintable(QString("'%1' lacks '%2'").arg(m_, needle))); \
    } while (0)

// The exact float, bit for bit but for the sign of zero.
#define EXPECT_EXACT(actual, expected)                                    \
    do {                                                                  \
        const float a_ = (actual), e_ = (expected);                       \
        QVERIFY2(a_ == e_, qPrintable(QString("%1 is %2, expected %3")    \
                                          .arg(#actual)                   \
                                          .arg(double(a_), 0, 'g', 10)    \
                                          .arg(double(e_), 0, 'g', 10))); \
    } while (0)
