// Tests of the scaled recipes on mpwb-cli's command line, through the built binary: every field of
// scaled_recipe_fields() is a flag (its name with '_' as '-'), given values reach the stored
// configuration, bad values and flags the precision does not use are refused naming the flag,
// `compare --precisions` runs every scaled recipe beside fp32 and bf16-mixed, and `runs show`
// lists the scaling summary of a scaled run. mxfp4 and the FP4 options (--hadamard-signs,
// --nvfp4-4over6) reach the stored configuration.
#include <QJsonDocument>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

#include "core/precision/scaled_recipe_config.h"
#include "program_runner.h"
#include "sessions/run_store.h"

namespace {

ProgramResult run_cli(const QStringList& args) {
    return run_program(QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli"), args);
}

QString flag_of(const char* field) {
    return QStringLiteral("--") + QString::fromLatin1(field).replace('_', '-');
}

}  // namespace

class TestRecipeFlags : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    QString fresh_db() { return dir_.filePath(QStringLiteral("runs_%1.sqlite").arg(++n_)); }

    // train on the spiral for a few steps with extra arguments; returns the result.
    ProgramResult train(const QString& db, const QStringList& extra) {
        QStringList args = {
            QStringLiteral("train"),       QStringLiteral("--preset"), QStringLiteral("spiral-mlp"),
            QStringLiteral("--max-steps"), QStringLiteral("4"),        QStringLiteral("--stats-every"),
            QStringLiteral("2"),           QStringLiteral("--db"),     db};
        return run_cli(args + extra);
    }

    void expectRefused(const QStringList& extra, const QString& flag, const QString& problem) {
        const auto r = train(fresh_db(), extra);
        const QString err = QString::fromUtf8(r.err);
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(err.contains(flag), qPrintable(err));
        QVERIFY2(err.contains(problem), qPrintable(err));
    }

private slots:
    void everyRecipeFieldIsAFlag() {
        const auto r = run_cli({QStringLiteral("train"), QStringLiteral("--help")});
        QCOMPARE(r.exit_code, 0);
        const QString help = QString::fromUtf8(r.out);
        for (const auto& f : mpwb::scaled_recipe_fields())
            QVERIFY2(help.contains(flag_of(f.name) + QLatin1Char(' ')), f.name);
        // compare takes them too.
        const auto c = run_cli({QStringLiteral("compare"), QStringLiteral("--help")});
        for (const auto& f : mpwb::scaled_recipe_fields())
            QVERIFY2(QString::fromUtf8(c.out).contains(flag_of(f.name) + QLatin1Char(' ')), f.name);
    }

    void givenValuesReachTheStoredConfiguration() {
        const QString db = fresh_db();
        const auto r =
            train(db, {QStringLiteral("--precision"), QStringLiteral("fp8-delayed"),
                       QStringLiteral("--amax-history-len"), QStringLiteral("16"),
                       QStringLiteral("--amax-algorithm"), QStringLiteral("most_recent"),
                       QStringLiteral("--margin"), QStringLiteral("2"), QStringLiteral("--fp8-format"),
                       QStringLiteral("e4m3"), QStringLiteral("--accumulator-bits"), QStringLiteral("13")});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        mpwb::RunStore store(db.toStdString());
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t(1));
        const auto config = QJsonDocument::fromJson(QByteArray::fromStdString(runs[0].config_json)).object();
        const auto recipe = config.value(QStringLiteral("recipe")).toObject();
        QCOMPARE(recipe.value(QStringLiteral("amax_history_len")).toInt(), 16);
        QCOMPARE(recipe.value(QStringLiteral("amax_algorithm")).toString(), QStringLiteral("most_recent"));
        QCOMPARE(recipe.value(QStringLiteral("margin")).toInt(), 2);
        QCOMPARE(recipe.value(QStringLiteral("fp8_format")).toString(), QStringLiteral("e4m3"));
        QCOMPARE(recipe.value(QStringLiteral("accumulator_bits")).toInt(), 13);
        QVERIFY(!store.scaling_stats(runs[0].id).empty());
    }

    void fp4OptionsReachTheStoredConfiguration() {
        const QString db = fresh_db();
        auto r = train(
            db, {QStringLiteral("--precision"), QStringLiteral("mxfp4"), QStringLiteral("--hadamard-signs"),
                 QStringLiteral("fixed"), QStringLiteral("--mx-scale-rounding"), QStringLiteral("floor")});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        r = train(db,
                  {QStringLiteral("--precision"), QStringLiteral("nvfp4"), QStringLiteral("--nvfp4-4over6"),
                   QStringLiteral("true"), QStringLiteral("--nvfp4-4over6-error"), QStringLiteral("mae")});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        mpwb::RunStore store(db.toStdString());
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t(2));
        for (const auto& run : runs) {
            const auto recipe = QJsonDocument::fromJson(QByteArray::fromStdString(run.config_json))
                                    .object()
                                    .value(QStringLiteral("recipe"))
                                    .toObject();
            QVERIFY(!store.scaling_stats(run.id).empty());
            if (run.precision == "mxfp4") {
                QCOMPARE(recipe.value(QStringLiteral("hadamard_signs")).toString(), QStringLiteral("fixed"));
                QCOMPARE(recipe.value(QStringLiteral("mx_scale_rounding")).toString(),
                         QStringLiteral("floor"));
                QVERIFY(!recipe.contains(QStringLiteral("nvfp4_4over6")));
                for (const auto& rec : store.scaling_stats(run.id))
                    QCOMPARE(rec.stats.element, mpwb::Format::E2M1);
            } else {
                QCOMPARE(QString::fromStdString(run.precision), QStringLiteral("nvfp4"));
                QCOMPARE(recipe.value(QStringLiteral("nvfp4_4over6")).toBool(), true);
                QCOMPARE(recipe.value(QStringLiteral("nvfp4_4over6_error")).toString(),
                         QStringLiteral("mae"));
                QCOMPARE(recipe.value(QStringLiteral("hadamard_signs")).toString(), QStringLiteral("random"));
            }
        }
        expectRefused({QStringLiteral("--precision"), QStringLiteral("mxfp4"),
                       QStringLiteral("--nvfp4-4over6"), QStringLiteral("true")},
                      QStringLiteral("--nvfp4-4over6 is not a setting of --precision mxfp4"), QString());
        expectRefused({QStringLiteral("--precision"), QStringLiteral("nvfp4"),
                       QStringLiteral("--hadamard-signs"), QStringLiteral("sometimes")},
                      QStringLiteral("--hadamard-signs"), QStringLiteral("random or fixed"));
    }

    void badValuesAreRefusedNamingTheFlag() {
        const QStringList delayed = {QStringLiteral("--precision"), QStringLiteral("fp8-delayed")};
        expectRefused(delayed + QStringList{QStringLiteral("--margin"), QStringLiteral("99")},
                      QStringLiteral("--margin"), QStringLiteral("(got 99)"));
        expectRefused(delayed + QStringList{QStringLiteral("--amax-history-len"), QStringLiteral("ten")},
                      QStringLiteral("--amax-history-len"), QStringLiteral("'ten' is not a whole number"));
        expectRefused(delayed + QStringList{QStringLiteral("--amax-algorithm"), QStringLiteral("mean")},
                      QStringLiteral("--amax-algorithm"), QStringLiteral("max or most_recent"));
        expectRefused(delayed + QStringList{QStringLiteral("--fixed-scale"), QStringLiteral("inf")},
                      QStringLiteral("--fixed-scale"), QStringLiteral("a finite number"));
        expectRefused({QStringLiteral("--precision"), QStringLiteral("nvfp4"), QStringLiteral("--hadamard"),
                       QStringLiteral("maybe")},
                      QStringLiteral("--hadamard"), QStringLiteral("true or false"));
    }

    void flagsThePrecisionDoesNotUseAreRefused() {
        expectRefused({QStringLiteral("--precision"), QStringLiteral("fp32"), QStringLiteral("--margin"),
                       QStringLiteral("1")},
                      QStringLiteral("--margin is not a setting of --precision fp32"),
                      QStringLiteral("mxfp8"));
        expectRefused({QStringLiteral("--precision"), QStringLiteral("mxfp8"),
                       QStringLiteral("--amax-history-len"), QStringLiteral("8")},
                      QStringLiteral("--amax-history-len is not a setting of --precision mxfp8"), QString());
    }

    void compareRunsEveryScaledRecipe() {
        const QString db = fresh_db();
        const QStringList precisions = {QStringLiteral("fp32"),        QStringLiteral("bf16-mixed"),
                                        QStringLiteral("fp8-delayed"), QStringLiteral("mxfp8"),
                                        QStringLiteral("nvfp4"),       QStringLiteral("mxfp4")};
        const auto r =
            run_cli({QStringLiteral("compare"), QStringLiteral("--preset"), QStringLiteral("spiral-mlp"),
                     QStringLiteral("--max-steps"), QStringLiteral("4"), QStringLiteral("--stats-every"),
                     QStringLiteral("2"), QStringLiteral("--precisions"), precisions.join(','),
                     QStringLiteral("--mx-scale-rounding"), QStringLiteral("floor"), QStringLiteral("--db"),
                     db, QStringLiteral("--quiet")});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        mpwb::RunStore store(db.toStdString());
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t(6));
        std::set<std::string> seen;
        for (const auto& run : runs) {
            seen.insert(run.precision);
            const bool scaled = run.precision == "fp8-delayed" || run.precision == "mxfp8" ||
                                run.precision == "nvfp4" || run.precision == "mxfp4";
            QCOMPARE(!store.scaling_stats(run.id).empty(), scaled);
            const auto config = QJsonDocument::fromJson(QByteArray::fromStdString(run.config_json)).object();
            if (run.precision == "mxfp8" || run.precision == "mxfp4")
                QCOMPARE(config.value(QStringLiteral("recipe"))
                             .toObject()
                             .value(QStringLiteral("mx_scale_rounding"))
                             .toString(),
                         QStringLiteral("floor"));
        }
        for (const auto& p : precisions) QVERIFY2(seen.count(p.toStdString()), qPrintable(p));
    }

    void runsShowListsTheScalingSummary() {
        const QString db = fresh_db();
        QCOMPARE(train(db, {QStringLiteral("--precision"), QStringLiteral("mxfp8")}).exit_code, 0);
        mpwb::RunStore store(db.toStdString());
        const auto id = store.list_runs().front().id;
        const auto r = run_cli({QStringLiteral("runs"), QStringLiteral("show"), QString::number(id),
                                QStringLiteral("--db"), db});
        QCOMPARE(r.exit_code, 0);
        const QString out = QString::fromUtf8(r.out);
        QVERIFY2(out.contains(QStringLiteral("scaling (last statistics step per layer and operand)")),
                 qPrintable(out));
        // One line per layer and operand, naming both, at the last statistics step.
        std::set<std::pair<std::string, std::string>> pairs;
        std::int64_t last = 0;
        for (const auto& rec : store.scaling_stats(id)) {
            pairs.insert({rec.layer_label, rec.stats.operand});
            last = std::max(last, rec.step);
        }
        QVERIFY(!pairs.empty());
        const QString section = out.mid(out.indexOf(QStringLiteral("scaling (last")));
        for (const auto& [label, operand] : pairs) {
            const QRegularExpression line(
                QStringLiteral("\\n%1 +%2 +mxfp8 +e4m3 +%3 ")
                    .arg(QRegularExpression::escape(QString::fromStdString(label)),
                         QRegularExpression::escape(QString::fromStdString(operand)))
                    .arg(last));
            QVERIFY2(line.match(section).hasMatch(),
                     qPrintable(QString::fromStdString(label + " " + operand) + "\n" + section));
        }
        // --json carries the same rows.
        const auto j = run_cli({QStringLiteral("runs"), QStringLiteral("show"), QString::number(id),
                                QStringLiteral("--db"), db, QStringLiteral("--json")});
        const auto scaling =
            QJsonDocument::fromJson(j.out).object().value(QStringLiteral("scaling")).toArray();
        QCOMPARE(static_cast<std::size_t>(scaling.size()), pairs.size());
    }
};

QTEST_GUILESS_MAIN(TestRecipeFlags)
#include "test_recipe_flags.moc"
