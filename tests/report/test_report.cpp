// Tests of the comparison report (app/report): a temporary store with an FP32 and an FP16-mixed
// run written through RunWriter; the HTML must name both runs, show the summary values computed
// here from the inserted data, embed its images and reach no external URL; the PDF must be a PDF
// with pages; the CSV beside it must hold every stored point; bad requests give clear errors.
#include "app/report/report.h"
#include "app/report/report_pdf.h"
#include "app/report/report_sections.h"
#include "core/train/decision_boundary.h"
#include "sessions/run_figures.h"
#include "core/numeric/exponent_histogram.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"

#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <random>
#include <unistd.h>

using namespace mpwb;

namespace {

struct Inserted {
    std::int64_t id = 0;
    QString name;
    double best_accuracy = 0;
    double final_accuracy = 0;
    double throughput = 0;  // samples trained / seconds in training steps
    std::int64_t first_step_over_80 = -1;
    int skipped = 0;
    double scale_min = 0, scale_max = 0;
    double mean_underflow = 0;  // activation gradients vs FP16
    std::size_t metric_points = 0;
};

// A gradient-like tensor: log-normal magnitudes around 2^center with spread `sigma` binades.
std::vector<float> gradient(std::mt19937& rng, double center, double sigma, int n) {
    std::normal_distribution<double> d(center, sigma);
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) v[i] = static_cast<float>(std::exp2(d(rng)) * (i % 2 ? -1 : 1));
    return v;
}

// Spiral points (2-D) through 16 hidden units to 3 classes; the parameter count the report must
// show is computed from these sizes in architectureTableCountsParameters.
constexpr int kInputs = 2, kHidden = 16, kClasses = 3;
const std::string kNetworkJson = R"({"name":"tiny","layers":[{"type":"Linear","out":16},{"type":"ReLU"},)"
                                 R"({"type":"Linear","out":3}],"loss":"cross_entropy"})";
constexpr int kEventsPerRun = 30;

Inserted insert_run(const std::string& db, bool mixed) {
    Inserted r;
    RunStore store(db);
    RunInfo info;
    info.name = mixed ? "mixed fp16 run" : "baseline fp32 run";
    info.precision = mixed ? "fp16-mixed" : "fp32";
    info.dataset = "spiral";
    info.backend = "cpu";
    info.device = "CPU (test)";
    info.machine = "testhost / Test CPU (2 cores)";
    info.versions_json = R"({"compiler":"gcc 12.2","sqlite":"3.40.1","openblas_core":"Haswell"})";
    info.config_json = std::string(R"({"precision":")") + info.precision +
                       R"(","optimizer":{"kind":"sgd"},"lr":0.1,"batch_size":64,"seed":7})";
    info.seed = 7;
    info.network_json = kNetworkJson;
    r.id = store.create_run(info);
    store.set_tag(r.id, "suite", mixed ? "mixed" : "baseline");
    store.set_tag(r.id, "reviewed");
    store.set_note(r.id, mixed ? "mixed note: scale backs off twice" : "baseline note: reference run");
    r.name = QString::fromStdString(info.name);
    const double t0 = store.get_run(r.id).started.value_or(store_now());

    RunWriter w(db, r.id);
    std::mt19937 rng(mixed ? 2 : 1);
    double samples = 0, train_seconds = 0;
    const double batch = 64;
    double scale = mixed ? 65536 : 1;
    r.scale_min = r.scale_max = scale;
    int overflow = 0;
    const int steps = 400;
    for (int s = 1; s <= steps; ++s) {
        const double t = t0 + s * (mixed ? 0.01 : 0.015);
        const double loss = 2.0 * std::exp(-s / 150.0) + 0.05 * std::sin(s);
        const double sps = (mixed ? 1500 : 1000) + (s % 7) * 3.0;
        samples += batch;
        train_seconds += batch / sps;
        bool skipped = false;
        if (mixed && (s == 100 || s == 250)) {
            skipped = true;
            ++overflow;
            scale /= 2;
        }
        r.scale_min = std::min(r.scale_min, scale);
        r.scale_max = std::max(r.scale_max, scale);
        w.log_metric("train_loss", s, t, loss);
        w.log_metric("train_accuracy", s, t, 1 - loss / 2.5);
        w.log_metric("samples_per_second", s, t, sps);
        w.log_metric("step_seconds", s, t, batch / sps);
        w.log_metric("loss_scale", s, t, scale);
        w.log_metric("skipped", s, t, skipped ? 1 : 0);
        w.log_metric("overflow_count", s, t, overflow);
        w.log_metric("skipped_count", s, t, overflow);
        r.metric_points += 8;
        if (s % 50 == 0) {
            const double acc = std::min(0.95, 0.3 + s / 400.0 * (mixed ? 0.62 : 0.6)) - (s == 400 ? 0.02 : 0);
            w.log_metric("test_accuracy", s, t, acc);
            w.log_metric("test_loss", s, t, loss * 1.1);
            r.metric_points += 2;
            r.best_accuracy = std::max(r.best_accuracy, acc);
            r.final_accuracy = acc;
            if (acc >= 0.8 && r.first_step_over_80 < 0) r.first_step_over_80 = s;
        }
        if (s % 100 == 0) {
            const auto act = gradient(rng, -20 - s / 100.0, 4, 5000);
            const auto wgt = gradient(rng, -12, 3, 20000);
            const ExponentHistogram ha = ExponentHistogram::compute(act.data(), act.size());
            const ExponentHistogram hw = ExponentHistogram::compute(wgt.data(), wgt.size());
            r.mean_underflow += range_stats(ha, Format::FP16).underflow_fraction / 4;
            w.log_histogram(s, "1 Linear", "activation_grad", ha.to_blob());
            w.log_histogram(s, "1 Linear", "weight_grad:weight", hw.to_blob());
            // A layer recorded only once, early: not part of the last step's small multiples.
            if (s == 100) w.log_histogram(s, "3 Linear", "weight_grad:weight", hw.to_blob());
        }
        if (s <= kEventsPerRun)
            w.log_event(s, t, "growth", R"({"from":1024.0,"to":2048.0,"source":"scaler"})");
    }
    r.throughput = samples / train_seconds;
    r.skipped = overflow;
    w.finish(RunStatus::Finished);
    return r;
}

QString read_all(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll());
}

// Runs the report command with stderr sent to a file; returns the exit status and what it printed.
std::pair<int, QString> run_capturing_stderr(std::vector<QByteArray> args, const QString& err_path) {
    std::vector<char*> argv;
    for (QByteArray& a : args) argv.push_back(a.data());
    std::fflush(stderr);
    const int saved = dup(2);
    const int fd = ::open(err_path.toLocal8Bit().constData(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    const int status = run_report_command(static_cast<int>(argv.size()), argv.data());
    std::fflush(stderr);
    dup2(saved, 2);
    ::close(fd);
    ::close(saved);
    return {status, read_all(err_path)};
}

QString pct(double fraction, int decimals = 2) {
    return QString::number(fraction * 100, 'f', decimals) + QLatin1Char('%');
}

}  // namespace

class TestReport : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void htmlHoldsTheComparison();
    void pdfIsAPdfWithPages();
    void csvHoldsEveryPoint();
    void commandLineWritesTheReport();
    void badRequestsGiveClearErrors();
    void notesAndTagsAreShown();
    void architectureTableCountsParameters();
    void configurationIsComplete();
    void eventsAreListedAndCapped();
    void histogramSmallMultiplePerRecordedLayer();
    void boundaryOnlyForTwoDimensionalRuns();
    void pdfLayoutKeepsPagesFullAndInsideMargins();
    void smoothingIsStated();
    void badSmoothingNamesTheOption();

private:
    QTemporaryDir dir_;
    std::string db_;
    Inserted fp32_, mixed_;
    std::vector<std::string> written_;
};

void TestReport::initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath(QStringLiteral("runs.sqlite")).toStdString();
    fp32_ = insert_run(db_, false);
    mixed_ = insert_run(db_, true);
    ReportRequest req;
    req.database = db_;
    req.run_ids = {fp32_.id, mixed_.id};
    req.output = dir_.filePath(QStringLiteral("report.html")).toStdString();
    req.extra_outputs = {dir_.filePath(QStringLiteral("report.pdf")).toStdString()};
    req.target_accuracy = 0.8;
    written_ = write_report(req);
    QCOMPARE(written_.size(), std::size_t(3));
}

void TestReport::htmlHoldsTheComparison() {
    const QString html = read_all(dir_.filePath(QStringLiteral("report.html")));
    QVERIFY(html.size() > 10000);
    QVERIFY(html.contains(fp32_.name));
    QVERIFY(html.contains(mixed_.name));
    // Summary values, computed here from what was inserted.
    for (const Inserted* r : {&fp32_, &mixed_}) {
        QVERIFY2(html.contains(pct(r->best_accuracy)), qPrintable(pct(r->best_accuracy)));
        QVERIFY2(html.contains(pct(r->final_accuracy)), qPrintable(pct(r->final_accuracy)));
        const QString sps = QString::fromStdString(samples_per_second_text(r->throughput));
        QVERIFY2(html.contains(QStringLiteral("<td>") + sps + QStringLiteral("</td>")), qPrintable(sps));
        QVERIFY2(html.contains(QStringLiteral("step %1 (").arg(r->first_step_over_80)),
                 qPrintable(QStringLiteral("step %1").arg(r->first_step_over_80)));
    }
    const QString speedup =
        QString::number(mixed_.throughput / fp32_.throughput, 'f', 2) + QStringLiteral("×");
    QVERIFY2(html.contains(speedup), qPrintable(speedup));
    QVERIFY(html.contains(QStringLiteral("1.00×")));
    const QString scale = QStringLiteral("2^%1 … 2^%2")
                              .arg(std::lround(std::log2(mixed_.scale_min)))
                              .arg(std::lround(std::log2(mixed_.scale_max)));
    QVERIFY2(html.contains(scale), qPrintable(scale));
    QVERIFY(html.contains(QStringLiteral("<td>%1</td>").arg(mixed_.skipped)));
    QVERIFY2(html.contains(pct(mixed_.mean_underflow, 3) + QStringLiteral(" (FP16)")),
             qPrintable(pct(mixed_.mean_underflow, 3)));
    QVERIFY(html.contains(QStringLiteral("time to 80.0%")));
    // Configuration differences: precision differs, lr does not.
    QVERIFY(html.contains(QStringLiteral("<code>precision</code>")));
    QVERIFY(!html.contains(QStringLiteral("<code>lr</code>")));
    // Machine and versions.
    QVERIFY(html.contains(QStringLiteral("testhost / Test CPU (2 cores)")));
    QVERIFY(html.contains(QStringLiteral("sqlite: 3.40.1")));
    // Embedded images only: loss, accuracy, throughput, loss scale, 2 histograms + heatmap per run.
    const int images = html.count(QStringLiteral("src=\"data:image/png;base64,"));
    QVERIFY2(images >= 4 + 2 * 2, qPrintable(QString::number(images)));
    QCOMPARE(html.count(QStringLiteral("src=\"")), images);
    // A URL scheme, not the letters: base64 image data may hold "http" by chance.
    QVERIFY(!html.contains(
        QRegularExpression(QStringLiteral("https?:"), QRegularExpression::CaseInsensitiveOption)));
    QVERIFY(!html.contains(QStringLiteral("url("), Qt::CaseInsensitive));
    QVERIFY(!html.contains(QStringLiteral("<link"), Qt::CaseInsensitive));
    QVERIFY(!html.contains(QStringLiteral("<script"), Qt::CaseInsensitive));
    // The images decode as PNGs of real size.
    const QRegularExpression re(QStringLiteral("data:image/png;base64,([A-Za-z0-9+/=]+)"));
    const auto m = re.match(html);
    QVERIFY(m.hasMatch());
    QImage img;
    QVERIFY(img.loadFromData(QByteArray::fromBase64(m.captured(1).toLatin1()), "PNG"));
    QVERIFY(img.width() >= 800 && img.height() >= 300);
}

void TestReport::pdfIsAPdfWithPages() {
    QFile f(dir_.filePath(QStringLiteral("report.pdf")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray pdf = f.readAll();
    QVERIFY(pdf.startsWith("%PDF-"));
    QVERIFY(pdf.size() > 20000);
    const int pages =
        QString::fromLatin1(pdf).count(QRegularExpression(QStringLiteral("/Type\\s*/Page[^s]")));
    QVERIFY2(pages >= 1, qPrintable(QString::number(pages)));
    QVERIFY(!QFile::exists(dir_.filePath(QStringLiteral("report.pdf.part"))));
}

void TestReport::csvHoldsEveryPoint() {
    const QString csv = read_all(dir_.filePath(QStringLiteral("report.csv")));
    const QStringList lines = csv.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.first(), QStringLiteral("run_id,run_name,key,step,wall_time,value"));
    QCOMPARE(std::size_t(lines.size() - 1), fp32_.metric_points + mixed_.metric_points);
    // One known row: the mixed run's loss scale after the second overflow.
    bool found = false;
    for (const QString& l : lines) {
        const QStringList c = l.split(QLatin1Char(','));
        if (c.size() == 6 && c[0] == QString::number(mixed_.id) && c[2] == QLatin1String("loss_scale") &&
            c[3] == QLatin1String("300"))
            found = c[5].toDouble() == 16384.0;
    }
    QVERIFY(found);
}

void TestReport::commandLineWritesTheReport() {
    const QString out = dir_.filePath(QStringLiteral("cli.html"));
    const QByteArray db = QByteArray::fromStdString(db_);
    const QByteArray runs =
        QByteArray::number(qlonglong(fp32_.id)) + ',' + QByteArray::number(qlonglong(mixed_.id));
    const QByteArray outb = out.toUtf8();
    char* argv[] = {const_cast<char*>("mpwb"),   const_cast<char*>("report"),
                    const_cast<char*>("--runs"), const_cast<char*>(runs.constData()),
                    const_cast<char*>("--out"),  const_cast<char*>(outb.constData()),
                    const_cast<char*>("--db"),   const_cast<char*>(db.constData())};
    QCOMPARE(run_report_command(8, argv), 0);
    const QString html = read_all(out);
    QVERIFY(html.contains(mixed_.name));
    // Default target: 95% of the best final accuracy.
    const double target = 0.95 * std::max(fp32_.final_accuracy, mixed_.final_accuracy);
    QVERIFY2(html.contains(QStringLiteral("time to ") + pct(target, 1)), qPrintable(pct(target, 1)));
    QVERIFY(QFile::exists(dir_.filePath(QStringLiteral("cli.csv"))));

    char* bad[] = {const_cast<char*>("mpwb"),   const_cast<char*>("report"),
                   const_cast<char*>("--runs"), const_cast<char*>("abc"),
                   const_cast<char*>("--out"),  const_cast<char*>(outb.constData())};
    QCOMPARE(run_report_command(6, bad), 2);
    char* missing[] = {const_cast<char*>("mpwb"),   const_cast<char*>("report"),
                       const_cast<char*>("--runs"), const_cast<char*>("424242"),
                       const_cast<char*>("--out"),  const_cast<char*>(outb.constData()),
                       const_cast<char*>("--db"),   const_cast<char*>(db.constData())};
    QCOMPARE(run_report_command(8, missing), 1);
}

void TestReport::badRequestsGiveClearErrors() {
    auto message = [](const ReportRequest& r) -> QString {
        try {
            write_report(r);
        } catch (const ReportError& e) {
            return QString::fromUtf8(e.what());
        }
        return QStringLiteral("<no error>");
    };
    ReportRequest r;
    r.database = db_;
    r.output = dir_.filePath(QStringLiteral("x.html")).toStdString();
    r.run_ids = {fp32_.id, 999};
    QString m = message(r);
    QVERIFY2(m.contains(QStringLiteral("run 999")) && m.contains(QStringLiteral("does not exist")),
             qPrintable(m));
    r.run_ids = {};
    m = message(r);
    QVERIFY2(m.contains(QStringLiteral("no runs selected")), qPrintable(m));
    r.run_ids = {fp32_.id};
    r.output = "/nonexistent-dir-for-report/x.html";
    m = message(r);
    QVERIFY2(m.contains(QStringLiteral("/nonexistent-dir-for-report")), qPrintable(m));
    r.output = dir_.filePath(QStringLiteral("x.txt")).toStdString();
    m = message(r);
    QVERIFY2(m.contains(QStringLiteral(".html or .pdf")), qPrintable(m));
    r.output = dir_.filePath(QStringLiteral("x.html")).toStdString();
    r.database = dir_.filePath(QStringLiteral("missing.sqlite")).toStdString();
    m = message(r);
    QVERIFY2(m.contains(QStringLiteral("missing.sqlite")), qPrintable(m));
    QVERIFY(!QFile::exists(dir_.filePath(QStringLiteral("missing.sqlite"))));  // not created
    // A single run is a valid report (no comparison table).
    r.database = db_;
    r.run_ids = {mixed_.id};
    QCOMPARE(message(r), QStringLiteral("<no error>"));
    QVERIFY(read_all(dir_.filePath(QStringLiteral("x.html"))).contains(QStringLiteral("nothing to compare")));
}

void TestReport::smoothingIsStated() {
    // The default report (initTestCase) is not smoothed and says so.
    const QString plain = read_all(dir_.filePath(QStringLiteral("report.html")));
    QVERIFY(plain.contains(QStringLiteral("Training curves not smoothed.")));
    QVERIFY(!plain.contains(QStringLiteral("EMA α")));
    ReportRequest req;
    req.database = db_;
    req.run_ids = {fp32_.id, mixed_.id};
    req.output = dir_.filePath(QStringLiteral("smoothed.html")).toStdString();
    req.smoothing = 0.6;
    write_report(req);
    const QString html = read_all(dir_.filePath(QStringLiteral("smoothed.html")));
    QVERIFY(html.contains(QStringLiteral("Training curves smoothed with EMA α = 0.6;")));
    QVERIFY(!html.contains(QStringLiteral("not smoothed")));
}

void TestReport::badSmoothingNamesTheOption() {
    const QString err = dir_.filePath(QStringLiteral("stderr.txt"));
    const QByteArray runs = QByteArray::number(qlonglong(fp32_.id));
    const QByteArray out = dir_.filePath(QStringLiteral("bad.html")).toUtf8();
    for (const char* bad : {"1", "1.5", "-0.1", "abc"}) {
        const auto [status, text] =
            run_capturing_stderr({"mpwb", "report", "--runs", runs, "--out", out, "--db",
                                  QByteArray::fromStdString(db_), "--smoothing", bad},
                                 err);
        QCOMPARE(status, 2);
        QVERIFY2(text.contains(QStringLiteral("--smoothing: \"%1\"").arg(QLatin1String(bad))),
                 qPrintable(text));
    }
    QVERIFY(!QFile::exists(QString::fromUtf8(out)));
    ReportRequest req;
    req.database = db_;
    req.run_ids = {fp32_.id};
    req.output = out.toStdString();
    req.smoothing = 1;
    try {
        write_report(req);
        QFAIL("smoothing 1 was accepted");
    } catch (const ReportError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("smoothing 1")), e.what());
    }
}

void TestReport::notesAndTagsAreShown() {
    const QString html = read_all(dir_.filePath(QStringLiteral("report.html")));
    QVERIFY(html.contains(QStringLiteral("baseline note: reference run")));
    QVERIFY(html.contains(QStringLiteral("mixed note: scale backs off twice")));
    QVERIFY(html.contains(QStringLiteral("reviewed, suite=baseline")));
    QVERIFY(html.contains(QStringLiteral("reviewed, suite=mixed")));
}

void TestReport::architectureTableCountsParameters() {
    const QString html = read_all(dir_.filePath(QStringLiteral("report.html")));
    // Weights and biases of the two Linear layers, from the sizes the network was given.
    const int first = kInputs * kHidden + kHidden;
    const int second = kHidden * kClasses + kClasses;
    QVERIFY2(html.contains(QStringLiteral("<tr><td>0</td><td>Linear</td><td>[%1]</td><td>%2</td></tr>")
                               .arg(kHidden)
                               .arg(first)),
             qPrintable(html.mid(html.indexOf(QStringLiteral("Network architecture")), 800)));
    QVERIFY(html.contains(
        QStringLiteral("<tr><td>1</td><td>ReLU</td><td>[%1]</td><td>0</td></tr>").arg(kHidden)));
    QVERIFY(html.contains(QStringLiteral("<tr><td>2</td><td>Linear</td><td>[%1]</td><td>%2</td></tr>")
                              .arg(kClasses)
                              .arg(second)));
    QVERIFY(html.contains(QStringLiteral("<b>%1</b>").arg(first + second)));
    // Both runs trained the same network on the same data: one table naming both.
    QCOMPARE(html.count(QStringLiteral("<h3>Network tiny, input [%1]").arg(kInputs)), 1);
}

void TestReport::configurationIsComplete() {
    const QString html = read_all(dir_.filePath(QStringLiteral("report.html")));
    const int start = html.indexOf(QStringLiteral("<h2>Configuration</h2>"));
    QVERIFY(start > 0);
    const QString section = html.mid(start, html.indexOf(QStringLiteral("<h2>"), start + 5) - start);
    QCOMPARE(section.count(QStringLiteral("<details>")), 2);
    // Every stored setting, not only the differences (lr and batch size are the same in both).
    QVERIFY(section.contains(QStringLiteral("&quot;batch_size&quot;: 64")));
    QVERIFY(section.contains(QStringLiteral("&quot;lr&quot;: 0.1")));
    QVERIFY(section.contains(QStringLiteral("&quot;precision&quot;: &quot;fp16-mixed&quot;")));
}

void TestReport::eventsAreListedAndCapped() {
    const QString html = read_all(dir_.filePath(QStringLiteral("report.html")));
    const int start = html.indexOf(QStringLiteral("<h2>Events</h2>"));
    QVERIFY(start > 0);
    const QString section = html.mid(start, html.indexOf(QStringLiteral("<h2>"), start + 5) - start);
    // The readable text of core/train/event_text.h, not the stored JSON.
    QCOMPARE(section.count(QStringLiteral("scale 2^10 → 2^11")), 2 * int(report_detail::kMaxEventsPerRun));
    QCOMPARE(
        section.count(QStringLiteral("… and %1 more").arg(kEventsPerRun - report_detail::kMaxEventsPerRun)),
        2);
}

void TestReport::histogramSmallMultiplePerRecordedLayer() {
    const QString html = read_all(dir_.filePath(QStringLiteral("report.html")));
    // Each run recorded "1 Linear" (activation and weight gradient) at its last step; "3 Linear"
    // only at step 100.
    QCOMPARE(html.count(QStringLiteral("alt=\"1 Linear · activation grad\"")), 2);
    QCOMPARE(html.count(QStringLiteral("alt=\"1 Linear · weight grad\"")), 2);
    QCOMPARE(html.count(QStringLiteral("alt=\"3 Linear")), 0);
    QCOMPARE(html.count(QStringLiteral("every layer at step 400")), 2);
}

void TestReport::boundaryOnlyForTwoDimensionalRuns() {
    // A run on 3-feature CSV data, with a boundary blob stored anyway: the report shows none.
    const QString csv = dir_.filePath(QStringLiteral("three.csv"));
    {
        QFile f(csv);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("a,b,c,label\n");
        for (int i = 0; i < 40; ++i)
            f.write(QByteArray::number(i % 7) + ",1," + QByteArray::number(i) + "," +
                    QByteArray::number(i % 2) + "\n");
    }
    BoundaryGrid grid;
    grid.step = 400;
    grid.x_min = grid.y_min = -2;
    grid.x_max = grid.y_max = 2;
    grid.nx = grid.ny = 8;
    grid.classes = kClasses;
    for (int i = 0; i < 64; ++i) {
        grid.predicted.push_back(i % kClasses);
        grid.confidence.push_back(0.9f);
    }
    std::int64_t csv_run = 0;
    {
        RunStore store(db_);
        RunInfo info;
        info.name = "csv run";
        info.precision = "fp32";
        info.dataset = "csv";
        info.network_json = kNetworkJson;
        info.config_json = R"({"dataset":{"kind":"csv","path":")" + csv.toStdString() + R"("}})";
        csv_run = store.create_run(info);
        store.set_boundary(csv_run, 400, boundary_to_blob(grid));
        store.set_boundary(mixed_.id, 400, boundary_to_blob(grid));
    }
    ReportRequest req;
    req.database = db_;
    req.run_ids = {mixed_.id, csv_run};
    req.output = dir_.filePath(QStringLiteral("boundary.html")).toStdString();
    write_report(req);
    const QString html = read_all(dir_.filePath(QStringLiteral("boundary.html")));
    QCOMPARE(html.count(QStringLiteral(" · decision boundary at step 400\" width=")), 1);
    QVERIFY(html.contains(
        QStringLiteral("alt=\"#%1 mixed fp16 run · decision boundary at step 400\"").arg(mixed_.id)));
    QVERIFY(!html.contains(QStringLiteral("#%1 csv run · decision boundary").arg(csv_run)));
    // The CSV run's network sees 3 inputs: a second layer table with its own count.
    QVERIFY(html.contains(QStringLiteral("<h3>Network tiny, input [3]")));
    QVERIFY(html.contains(
        QStringLiteral("<b>%1</b>").arg(3 * kHidden + kHidden + kHidden * kClasses + kClasses)));
    // The report of the runs without a stored boundary has no boundary section.
    QVERIFY(!read_all(dir_.filePath(QStringLiteral("smoothed.html")))
                 .contains(QStringLiteral("Decision boundaries")));
}

void TestReport::pdfLayoutKeepsPagesFullAndInsideMargins() {
    ReportRequest req;
    req.database = db_;
    req.run_ids = {fp32_.id, mixed_.id};
    const report_detail::PdfLayout layout = report_detail::layout_report_pdf(req);
    QVERIFY(layout.text_width > 1000 && layout.page_height > layout.text_width);
    QVERIFY2(layout.pages.size() >= 3 && layout.pages.size() <= 14,
             qPrintable(QString::number(layout.pages.size())));
    int figures = 0;
    for (std::size_t p = 0; p < layout.pages.size(); ++p) {
        double used = 0;
        for (const report_detail::PdfPiece& piece : layout.pages[p]) {
            used += piece.height;
            figures += piece.figure;
            // Tables wrap or shrink to the text width; nothing runs into the margin.
            QVERIFY2(piece.width <= layout.text_width + 0.5, qPrintable(QStringLiteral("page %1: %2 > %3: %4")
                                                                            .arg(p + 1)
                                                                            .arg(piece.width)
                                                                            .arg(layout.text_width)
                                                                            .arg(piece.html.left(200))));
        }
        QVERIFY2(used <= layout.page_height + 0.5 || layout.pages[p].size() == 1,
                 qPrintable(QString::number(p + 1)));
        // No page but the last is mostly empty; none ends with a heading.
        if (p + 1 < layout.pages.size()) {
            QVERIFY2(
                used >= 0.5 * layout.page_height,
                qPrintable(
                    QStringLiteral("page %1 is %2% full").arg(p + 1).arg(100 * used / layout.page_height)));
            QVERIFY2(!layout.pages[p].back().heading, qPrintable(layout.pages[p].back().html));
        }
    }
    // Curves, heatmaps and small-multiple rows: each image with its caption in one piece.
    QVERIFY(figures >= 4 + 2);
}

QTEST_MAIN(TestReport)
#include "test_report.moc"
