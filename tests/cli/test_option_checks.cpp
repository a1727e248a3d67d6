// The numeric option validators of mpwb-cli (app/cli/option_checks.h), called directly: what
// they accept, and that a refusal spells the option's range as the user would type it back
// (shortest round-trip form: "0.99", not "0.98999999999999999").
#include <QtTest>

#include <string>

#include "app/cli/option_checks.h"

namespace {

// The validator's answer for `text`: empty when accepted, else why not.
std::string check(const CLI::Validator& validator, std::string text) { return validator(text); }

}  // namespace

class TestOptionChecks : public QObject {
    Q_OBJECT

private slots:
    void realNumberRangeSpelledShortest() {
        const CLI::Validator fraction = mpwb::cli::real_number(0.01, 0.99);
        QVERIFY(check(fraction, "0.5").empty());
        QVERIFY(check(fraction, "0.99").empty());
        QCOMPARE(QString::fromStdString(check(fraction, "1")),
                 QStringLiteral("'1' is out of range: expected a number in [0.01, 0.99]"));
        QCOMPARE(QString::fromStdString(check(fraction, "x")),
                 QStringLiteral("'x' is not a finite number: expected one in [0.01, 0.99]"));
        QCOMPARE(QString::fromStdString(fraction.get_description()),
                 QStringLiteral("NUMBER in [0.01, 0.99]"));
    }

    void realNumberOpenAndInfiniteBounds() {
        const CLI::Validator lr = mpwb::cli::real_number(0, 1e30, true);
        QVERIFY(check(lr, "1e30").empty());
        QCOMPARE(QString::fromStdString(check(lr, "0")),
                 QStringLiteral("'0' is out of range: expected a number in (0, 1e+30]"));
        const CLI::Validator unbounded = mpwb::cli::real_number(-HUGE_VAL, HUGE_VAL, true, true);
        QCOMPARE(QString::fromStdString(check(unbounded, "nan")),
                 QStringLiteral("'nan' is not a finite number: expected one in (-infinity, infinity)"));
    }

    void wholeNumberRefusals() {
        const CLI::Validator epochs = mpwb::cli::whole_number(1, 1000);
        QVERIFY(check(epochs, "+5").empty());
        QCOMPARE(QString::fromStdString(check(epochs, "0")),
                 QStringLiteral("'0' is out of range: expected a whole number from 1 to 1000"));
        QCOMPARE(QString::fromStdString(check(epochs, "010x")),
                 QStringLiteral("'010x' is not a whole number: expected a whole number from 1 to 1000"));
    }
};

QTEST_GUILESS_MAIN(TestOptionChecks)
#include "test_option_checks.moc"
