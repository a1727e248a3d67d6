// Tests of the report's precision tables, from runs mpwb-cli records on the spiral (20 steps,
// statistics every 10): a bf16-mixed run with what-if mxfp8 and nvfp4 and a precision rule gets
// the "Precision per GEMM" table (the rule's pass in mxfp8), the recipe advisor with a column per
// what-if recipe and graded cells whose SQNR is recipe_advisor's of the stored records, and the
// what-if rows in a table of their own; an mxfp8 run without what-if has no advisor.
#include "../cli/program_runner.h"
#include "app/report/report.h"
#include "sessions/recipe_advisor.h"
#include "sessions/run_store.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace mpwb;

namespace {

QByteArray read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestReportPrecision : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::string db_;

    std::int64_t train(const QStringList& extra, const QString& name) {
        QStringList args{
            QStringLiteral("train"),       QStringLiteral("--preset"),   QStringLiteral("spiral-mlp"),
            QStringLiteral("--max-steps"), QStringLiteral("20"),         QStringLiteral("--stats-every"),
            QStringLiteral("10"),          QStringLiteral("--run-name"), name,
            QStringLiteral("--db"),        QString::fromStdString(db_)};
        args += extra;
        const auto r = run_program(QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli"), args);
        if (r.exit_code != 0) qFatal("mpwb-cli train failed: %s", r.err.constData());
        RunStore store(db_);
        for (const Run& run : store.list_runs())
            if (run.name == name.toStdString()) return run.id;
        qFatal("run %s not stored", qPrintable(name));
    }

    QString html_of(std::int64_t id) {
        ReportRequest request;
        request.database = db_;
        request.run_ids = {id};
        request.output = dir_.filePath(QStringLiteral("r%1.html").arg(id)).toStdString();
        const auto written = write_report(request);
        return QString::fromUtf8(read_all(QString::fromStdString(written.at(0))));
    }

private slots:
    void initTestCase() { db_ = dir_.filePath(QStringLiteral("runs.sqlite")).toStdString(); }

    void whatIfRunHasTheAdvisorAndThePrecisionTable() {
        const std::int64_t id = train({QStringLiteral("--precision"), QStringLiteral("bf16-mixed"),
                                       QStringLiteral("--what-if"), QStringLiteral("mxfp8,nvfp4"),
                                       QStringLiteral("--precision-rule"), QStringLiteral("2=wgrad:mxfp8")},
                                      QStringLiteral("whatif"));
        const QString html = html_of(id);
        QVERIFY2(html.contains(QStringLiteral("<h4>Precision per GEMM</h4>")), "no precision table");
        QVERIFY2(html.contains(QStringLiteral("<td>2</td><td>bf16</td><td>bf16</td><td>mxfp8</td>")),
                 "the rule's wgrad pass is not mxfp8 in the precision table");
        const int at = html.indexOf(QStringLiteral("<h4>Recipe advisor</h4>"));
        QVERIFY2(at > 0, "no advisor");
        const QString advisor = html.mid(at, html.indexOf(QStringLiteral("</table>"), at) - at);
        for (const char* column : {"this run</th>", "mxfp8 (what-if)</th>", "nvfp4 (what-if)</th>"})
            QVERIFY2(advisor.contains(QLatin1String(column)), column);

        RunStore store(db_);
        const AdvisorTable expected = recipe_advisor(store.scaling_stats(id));
        QVERIFY(!expected.rows.empty());
        QCOMPARE(advisor.count(QStringLiteral("<td style=\"background:#")),
                 static_cast<int>(expected.rows.size() * expected.columns.size()));
        for (const AdvisorRow& row : expected.rows) {
            const AdvisorCell& what_if = row.cells.at(1);
            QVERIFY(what_if.present);
            const QString cell = QString::number(what_if.min_sqnr_db, 'f', 1) + QStringLiteral(" dB");
            QVERIFY2(
                advisor.contains(QStringLiteral("<td>%1</td>").arg(QString::fromStdString(row.gemm_label))),
                row.gemm_label.c_str());
            QVERIFY2(advisor.contains(cell), qPrintable(cell));
        }
        QVERIFY2(html.contains(QStringLiteral("<h4>What-if recipes</h4>")), "no what-if table");
    }

    void runWithoutWhatIfHasNoAdvisor() {
        const std::int64_t id =
            train({QStringLiteral("--precision"), QStringLiteral("mxfp8")}, QStringLiteral("plain"));
        const QString html = html_of(id);
        QVERIFY(html.contains(QStringLiteral("<h2>Scaling</h2>")));
        QVERIFY(!html.contains(QStringLiteral("<h4>Recipe advisor</h4>")));
        QVERIFY(!html.contains(QStringLiteral("<h4>What-if recipes</h4>")));
    }
};

QTEST_MAIN(TestReportPrecision)
#include "test_report_precision.moc"
