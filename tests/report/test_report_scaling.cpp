// Tests of the report's scaling section: runs recorded by mpwb-cli (fp32, fp8-delayed and mxfp8
// on the spiral, statistics every 10 steps); the HTML must give the section only for the scaled
// runs, an SQNR table whose first, last and minimum values are computed here from the stored
// records, the amax plot of both scaled runs, the scale plot only for the per-tensor recipe and a
// block-scale histogram per layer only for the block recipe; the PDF gains pages with it.
// MPWB_KEEP_REPORT_DIR=<folder> keeps the HTML and PDF there for looking at them.
#include "../cli/program_runner.h"
#include "app/report/report.h"
#include "sessions/run_store.h"

#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace mpwb;

namespace {

QByteArray read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

int pdf_pages(const QByteArray& pdf) {
    return static_cast<int>(pdf.count("/Type /Page\n") + pdf.count("/Type /Page\r") +
                            pdf.count("/Type /Page>>") + pdf.count("/Type /Page /"));
}

QString sqnr_cell(double db) {
    return std::isnan(db) ? QStringLiteral("—")
           : db >= 999    ? QStringLiteral("lossless")
                          : QString::number(db, 'f', 1);
}

}  // namespace

class TestReportScaling : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::string db_;
    std::map<std::string, std::int64_t> ids_;  // by precision

    std::vector<std::string> report(const std::vector<std::int64_t>& ids, const QString& stem) {
        ReportRequest request;
        request.database = db_;
        request.run_ids = ids;
        request.output = dir_.filePath(stem + QStringLiteral(".html")).toStdString();
        request.extra_outputs = {dir_.filePath(stem + QStringLiteral(".pdf")).toStdString()};
        const auto written = write_report(request);
        const QString keep = qEnvironmentVariable("MPWB_KEEP_REPORT_DIR");
        if (!keep.isEmpty())
            for (const auto& file : written)
                QFile::copy(QString::fromStdString(file),
                            keep + QLatin1Char('/') + QFileInfo(QString::fromStdString(file)).fileName());
        return written;
    }

private slots:
    void initTestCase() {
        db_ = dir_.filePath(QStringLiteral("runs.sqlite")).toStdString();
        for (const char* precision : {"fp32", "fp8-delayed", "mxfp8"}) {
            const auto r = run_program(
                QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli"),
                {QStringLiteral("train"), QStringLiteral("--preset"), QStringLiteral("spiral-mlp"),
                 QStringLiteral("--max-steps"), QStringLiteral("60"), QStringLiteral("--stats-every"),
                 QStringLiteral("10"), QStringLiteral("--precision"), QString::fromLatin1(precision),
                 QStringLiteral("--run-name"), QString::fromLatin1(precision), QStringLiteral("--db"),
                 QString::fromStdString(db_)});
            QVERIFY2(r.exit_code == 0, r.err.constData());
        }
        RunStore store(db_);
        for (const Run& run : store.list_runs()) ids_[run.precision] = run.id;
        QCOMPARE(ids_.size(), std::size_t(3));
    }

    void htmlHasTheScalingSectionOfScaledRuns() {
        const auto written =
            report({ids_["fp32"], ids_["fp8-delayed"], ids_["mxfp8"]}, QStringLiteral("all"));
        const QString html = QString::fromUtf8(read_all(QString::fromStdString(written[0])));
        const int at = html.indexOf(QStringLiteral("<h2>Scaling</h2>"));
        QVERIFY2(at > 0, "no scaling section");
        const QString section = html.mid(at, html.indexOf(QStringLiteral("<h2>"), at + 5) - at);
        const QString fp32 = QStringLiteral("<h3>#%1 ").arg(ids_["fp32"]);
        QVERIFY(!section.contains(fp32));
        for (const char* p : {"fp8-delayed", "mxfp8"})
            QVERIFY2(section.contains(QStringLiteral("<h3>#%1 ").arg(ids_[p])), p);
        QCOMPARE(section.count(QStringLiteral("amax per layer")), 2 * 2);  // alt text and caption
        QCOMPARE(section.count(QStringLiteral("scale per layer")), 2);     // fp8-delayed only

        // The SQNR table: first, last and minimum per layer and operand, from the stored records.
        RunStore store(db_);
        for (const char* p : {"fp8-delayed", "mxfp8"}) {
            struct Expected {
                std::int64_t first_step = std::numeric_limits<std::int64_t>::max(), last_step = -1;
                double first = 0, last = 0, min = std::numeric_limits<double>::infinity();
                std::string format;
            };
            std::map<std::pair<std::string, std::string>, Expected> expected;
            for (const auto& r : store.scaling_stats(ids_[p])) {
                Expected& e = expected[{r.layer_label, r.stats.operand}];
                if (r.step < e.first_step) e.first_step = r.step, e.first = r.stats.sqnr_db;
                if (r.step > e.last_step) e.last_step = r.step, e.last = r.stats.sqnr_db;
                e.min = std::min(e.min, r.stats.sqnr_db);
                e.format = r.stats.element == Format::E5M2 ? "E5M2" : "E4M3";
            }
            QVERIFY(!expected.empty());
            for (const auto& [key, e] : expected) {
                QCOMPARE(e.last_step, std::int64_t(60));
                // layer, operand, recipe (the run's own: its precision), format
                const QString row = QStringLiteral("<td>%1</td><td>%2</td><td>%3</td><td>%4</td>")
                                        .arg(QString::fromStdString(key.first).toHtmlEscaped(),
                                             QString::fromStdString(key.second).toHtmlEscaped(),
                                             QString::fromLatin1(p), QString::fromStdString(e.format));
                const QRegularExpression cells(
                    QRegularExpression::escape(row) +
                    QStringLiteral("(?:<td>[^<]*</td>){4}<td>%1</td><td>%2</td><td>%3</td>")
                        .arg(sqnr_cell(e.first), sqnr_cell(e.last), sqnr_cell(e.min)));
                QVERIFY2(cells.match(section).hasMatch(), qPrintable(row + QStringLiteral(" in run ") + p));
            }
        }
        // One block-scale histogram per layer of the block recipe, none for the per-tensor one.
        std::set<std::size_t> layers;
        for (const auto& r : store.scaling_stats(ids_["mxfp8"])) layers.insert(r.layer);
        QCOMPARE(section.count(QStringLiteral("block scales at step 60")),
                 static_cast<int>(2 * layers.size()));
        QVERIFY(!section.contains(QStringLiteral("#%1 fp8-delayed · layer").arg(ids_["fp8-delayed"])));
    }

    void runsWithoutScalingHaveNoSection() {
        const auto written = report({ids_["fp32"]}, QStringLiteral("fp32"));
        QVERIFY(!read_all(QString::fromStdString(written[0])).contains("<h2>Scaling</h2>"));
    }

    void pdfGainsTheScalingPages() {
        const auto plain = report({ids_["fp32"]}, QStringLiteral("plain"));
        const auto scaled = report({ids_["fp32"], ids_["mxfp8"]}, QStringLiteral("scaled"));
        const QByteArray a = read_all(QString::fromStdString(plain[1]));
        const QByteArray b = read_all(QString::fromStdString(scaled[1]));
        QVERIFY(a.startsWith("%PDF") && b.startsWith("%PDF"));
        QVERIFY2(pdf_pages(b) > pdf_pages(a),
                 qPrintable(QStringLiteral("%1 vs %2 pages").arg(pdf_pages(b)).arg(pdf_pages(a))));
    }
};

QTEST_MAIN(TestReportScaling)
#include "test_report_scaling.moc"
