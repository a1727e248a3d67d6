// Tests of the loss scaler on mpwb-cli's command line, through the built binary: every field of
// loss_scaler_fields() is a flag (its name with '_' as '-'; the mode is --scaler), so a field
// added to the table without a flag fails here; a value for every field reaches the run's
// configuration; the spellings from before the flags came from the table still work; bad values
// and out-of-range settings are refused naming the flag and the setting.
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <map>

#include "core/precision/loss_scaler_config.h"
#include "program_runner.h"

namespace {

ProgramResult run_cli(const QStringList& args) {
    return run_program(QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli"), args);
}

// The flag a field is given: its name, except the mode, whose name alone would say nothing.
QString flag_of(const char* field) {
    if (QLatin1String(field) == QLatin1String("mode")) return QStringLiteral("--scaler");
    return QStringLiteral("--") + QString::fromLatin1(field).replace('_', '-');
}

// One step of the spiral with extra arguments; the run's scaler configuration from --json.
QJsonObject trained_scaler(const QStringList& extra) {
    const auto r = run_cli(QStringList{"train", "--preset", "spiral-mlp", "--max-steps", "1", "--no-store",
                                       "--json", "--quiet"} +
                           extra);
    if (r.exit_code != 0) {
        qWarning("%s", r.err.constData());
        return {};
    }
    return QJsonDocument::fromJson(r.out).object()["config"].toObject()["scaler"].toObject();
}

}  // namespace

class TestScalerFlags : public QObject {
    Q_OBJECT

private slots:
    void everyScalerFieldIsAFlag() {
        for (const char* command : {"train", "compare"}) {
            const auto r = run_cli({QString::fromLatin1(command), QStringLiteral("--help")});
            QCOMPARE(r.exit_code, 0);
            const QString help = QString::fromUtf8(r.out);
            for (const auto& f : mpwb::loss_scaler_fields())
                QVERIFY2(help.contains(flag_of(f.name) + QLatin1Char(' ')) ||
                             help.contains(flag_of(f.name) + QLatin1Char(',')),
                         qPrintable(QString::fromLatin1(command) + ": " + flag_of(f.name)));
            QVERIFY(help.contains(QStringLiteral("--scaler-like ")));
        }
    }

    // A value other than the default (or the preset's) for every field, each found in the run's
    // configuration.
    void everyFieldReachesTheConfiguration() {
        const std::map<std::string, QString> values = {{"mode", "static"},
                                                       {"initial_scale", "1024"},
                                                       {"growth_factor", "3"},
                                                       {"backoff_factor", "0.25"},
                                                       {"growth_interval", "7"},
                                                       {"growth_timing", "after_interval"},
                                                       {"hysteresis", "2"},
                                                       {"refill", "every_clean_step"},
                                                       {"min_scale", "0.5"},
                                                       {"max_scale", "4096"},
                                                       {"on_overflow", "retry"},
                                                       {"max_retries", "9"},
                                                       {"count_skipped_steps", "false"},
                                                       {"grow_only_if_finite", "false"}};
        QStringList args;
        for (const auto& f : mpwb::loss_scaler_fields()) {
            const auto it = values.find(f.name);
            QVERIFY2(it != values.end(), f.name);  // a new field needs its value here
            args << flag_of(f.name) << it->second;
        }
        const QJsonObject scaler = trained_scaler(args);
        QVERIFY(!scaler.isEmpty());
        for (const auto& f : mpwb::loss_scaler_fields()) {
            const QJsonValue got = scaler[QString::fromLatin1(f.name)];
            const QString shown = got.isString() ? got.toString()
                                  : got.isBool() ? QString::fromLatin1(got.toBool() ? "true" : "false")
                                                 : QString::number(got.toDouble());
            QCOMPARE(shown, values.at(f.name));
        }
    }

    void theOldSpellingsStillWork() {
        const QJsonObject scaler =
            trained_scaler({"--init-scale", "2048", "--hysteresis-refill", "every_clean_step",
                            "--count-skipped", "false", "--hysteresis", "3"});
        QCOMPARE(scaler["initial_scale"].toDouble(), 2048.0);
        QCOMPARE(scaler["refill"].toString(), QStringLiteral("every_clean_step"));
        QCOMPARE(scaler["count_skipped_steps"].toBool(), false);
        // A scaler setting without a mode asks for scaling: the fp32 preset becomes dynamic.
        QCOMPARE(scaler["mode"].toString(), QStringLiteral("dynamic"));
        // A known system's rules first, the flags over them.
        const QJsonObject nnabla = trained_scaler({"--scaler-like", "nnabla", "--max-retries", "7"});
        QCOMPARE(nnabla["growth_timing"].toString(), QStringLiteral("after_interval"));
        QCOMPARE(nnabla["max_retries"].toInt(), 7);
    }

    void badValuesNameTheFlagAndTheSetting_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("nan through the old spelling")
            << QStringList{"--init-scale", "nan"}
            << "--initial-scale: 'nan' is not a finite number (setting initial_scale)";
        QTest::newRow("hysteresis 0")
            << QStringList{"--hysteresis", "0"} << "--hysteresis: hysteresis must be at least 1 (got 0)";
        QTest::newRow("growth timing")
            << QStringList{"--growth-timing", "later"}
            << "unknown growth_timing 'later' (expected on_interval or after_interval)";
        QTest::newRow("backoff")
            << QStringList{"--backoff-factor", "1"}
            << "--backoff-factor: backoff_factor must be a finite number in (0, 1) (got 1)";
        QTest::newRow("between the scales") << QStringList{"--min-scale", "10", "--max-scale", "1"}
                                            << "--min-scale: min_scale 10 is greater than max_scale 1";
        QTest::newRow("flag") << QStringList{"--grow-only-if-finite", "maybe"}
                              << "--grow-only-if-finite: 'maybe' is not true or false";
    }

    void badValuesNameTheFlagAndTheSetting() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const auto r =
            run_cli(QStringList{"train", "--preset", "spiral-mlp", "--max-steps", "1", "--no-store"} + args);
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(QString::fromUtf8(r.err).contains(message), r.err.constData());
    }
};

QTEST_APPLESS_MAIN(TestScalerFlags)
#include "test_scaler_flags.moc"
