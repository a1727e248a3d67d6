// The report of a text run (issue 26, items 5 and 8): where an image run's report would show
// inputs it shows what the model wrote (the run's stored "sample" events) as monospace text, with
// control characters made printable; it has no image section of its own (no decision boundary),
// and its summary names the figures per token: next-token accuracy, tokens/s, the loss in nats and
// bits per character. The run is recorded by the built mpwb-cli from a preset file whose text and
// sample prompt hold an ESC, the character a terminal or a careless renderer would act on.
#include <QApplication>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include "../cli/program_runner.h"
#include "app/report/report.h"
#include "app/report/report_pdf.h"

using namespace mpwb;

namespace {

const QString kCli = QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli");

QByteArray read_all(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool write_all(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

}  // namespace

class TestTextReport : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString db_;

    double read_only_test_accuracy() {
        const auto show = run_program(kCli, {"runs", "show", "1", "--json", "--db", db_});
        return QJsonDocument::fromJson(show.out).object()["test_accuracy"].toDouble(-1);
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        db_ = dir_.filePath(QStringLiteral("runs.sqlite"));
        QVERIFY(write_all(dir_.filePath("text.txt"),
                          QByteArray("a lazy dog\x1b[2J sleeps <b>&</b>.\n").repeated(30)));
        // Built as JSON values, not a raw string: moc's parser loses its way in one around an ESC.
        const QJsonArray layers{QJsonObject{{"type", "Embedding"}, {"d_model", 16}, {"context", 8}},
                                QJsonObject{{"type", "TransformerBlock"}, {"heads", 2}},
                                QJsonObject{{"type", "LayerNorm"}},
                                QJsonObject{{"type", "Linear"}, {"out", 0}}};
        const QJsonObject dataset{
            {"kind", "text"}, {"path", dir_.filePath("text.txt")}, {"tokenizer", "char"}, {"context", 8}};
        const QJsonObject training{
            {"dataset", dataset},
            {"max_steps", 30},
            {"batch_size", 16},
            {"lr", 0.01},
            {"eval_every", 10},
            {"samples", QJsonObject{{"prompt", QStringLiteral("dog\x1b[2J <b>")}, {"tokens", 40}}}};
        const QJsonObject network{{"name", "tiny-gpt"}, {"loss", "token_cross_entropy"}, {"layers", layers}};
        const QByteArray preset =
            QJsonDocument(QJsonObject{{"name", "tiny-gpt"}, {"network", network}, {"training", training}})
                .toJson();
        QVERIFY(write_all(dir_.filePath("gpt.json"), preset));
        const auto run = run_program(kCli, {"train", "--network", dir_.filePath("gpt.json"), "--backend",
                                            "cpu", "--quiet", "--db", db_});
        QVERIFY2(run.exit_code == 0, run.err.constData());
    }

    void textRunShowsTokensNotImages() {
        ReportRequest request;
        request.database = db_.toStdString();
        request.run_ids = {1};
        request.output = dir_.filePath("text.html").toStdString();
        request.extra_outputs = {dir_.filePath("text.pdf").toStdString()};
        write_report(request);
        const QString keep = qEnvironmentVariable("MPWB_KEEP_REPORT_DIR");
        if (!keep.isEmpty())
            for (const char* name : {"text.html", "text.pdf"})
                QFile::copy(dir_.filePath(name), keep + QLatin1Char('/') + QLatin1String(name));
        const QByteArray html = read_all(dir_.filePath("text.html"));
        QVERIFY(!html.isEmpty());
        // The text section: three samples (after steps 10, 20 and 30), monospace, prompt in bold.
        QVERIFY2(html.contains("<h2>Text samples · #1 tiny-gpt"), html.left(3000).constData());
        QCOMPARE(html.count("<pre style=\"font-family:'DejaVu Sans Mono'"),
                 3 + 3);  // samples and test windows
        for (const char* step : {"<b>step 10</b>", "<b>step 20</b>", "<b>step 30</b>"})
            QVERIFY(html.contains(step));
        // Made safe twice: the ESC printable (\x1b), the markup escaped, never a raw control byte.
        QVERIFY(html.contains("<b>dog\\x1b[2J &lt;b&gt;</b>"));
        QVERIFY(!html.contains('\x1b'));
        QVERIFY(html.contains("one token a character"));
        // Test windows with the final weights' predictions: the first, middle and last, one
        // monospace cell per token.
        QVERIFY(html.contains("<h2>Test windows · #1 tiny-gpt"));
        QCOMPARE(html.count("<b>window "), 3);
        QCOMPARE(html.count(" next tokens right</p>"), 3);
        QVERIFY(html.contains("<b>window 0</b>"));
        // The predictions are the final evaluation's (same weights, FP32): a run right on every
        // test position is right on every shown one.
        if (read_only_test_accuracy() == 1.0) QCOMPARE(html.count(" 8 of 8 next tokens right</p>"), 3);
        QVERIFY(html.contains("input      ") && html.contains("predicted  ") && html.contains("true next  "));
        QVERIFY(html.contains("input      &gt;&amp;&lt;/b&gt;.⏎"));  // window 11: markup escaped, ⏎ one cell
        // No image section of a text run's own; the figures per token.
        QVERIFY(!html.contains("Decision boundaries"));
        QVERIFY(html.contains("final next-token acc."));
        QVERIFY(html.contains(">tokens/s</th>"));
        QVERIFY(html.contains("Tokens per second of each training step"));
        QVERIFY(html.contains(" nats/token ("));
        QVERIFY(html.contains(" bits/character)"));

        // The PDF's pages hold the same section, its samples as monospace blocks.
        const report_detail::PdfLayout layout = report_detail::layout_report_pdf(request);
        int samples = 0;
        bool heading = false;
        for (const auto& page : layout.pages)
            for (const report_detail::PdfPiece& piece : page) {
                samples += piece.html.contains(QStringLiteral("<pre style=\"font-family:'DejaVu Sans Mono'"));
                heading = heading || piece.html.contains(QStringLiteral("Text samples · #1"));
                QVERIFY(piece.width <= layout.text_width + 0.5);
            }
        QCOMPARE(samples, 3 + 3);  // samples and test windows
        QVERIFY(heading);
        QVERIFY(read_all(dir_.filePath("text.pdf")).startsWith("%PDF"));
    }

    // A sample stored by something else (a bundle from elsewhere) with control characters (ESC,
    // BEL): the report makes them printable itself.
    void foreignSampleTextIsMadePrintable() {
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(db_.toUtf8().constData(), &db), SQLITE_OK);
        // JSON escapes, as a JSON writer stores control characters: the report decodes them.
        const char* update =
            "UPDATE events SET json = '{\"prompt\": \"x\", \"text\": \"\\u001b[31mred\\u0007\"}' "
            "WHERE kind = 'sample' AND step = 10";
        char* error = nullptr;
        QVERIFY2(sqlite3_exec(db, update, nullptr, nullptr, &error) == SQLITE_OK, error);
        QCOMPARE(sqlite3_changes(db), 1);
        sqlite3_close(db);
        ReportRequest request;
        request.database = db_.toStdString();
        request.run_ids = {1};
        request.output = dir_.filePath("foreign.html").toStdString();
        write_report(request);
        const QByteArray html = read_all(dir_.filePath("foreign.html"));
        QVERIFY2(html.contains("<b>x</b>\\x1b[31mred\\a</pre>"),
                 html.mid(html.indexOf("step 10"), 500).constData());
        for (const char control : {'\x1b', '\a'})
            QVERIFY2(!html.contains(control),
                     html.mid(std::max<qsizetype>(0, html.indexOf(control) - 300), 400).constData());
    }
};

QTEST_MAIN(TestTextReport)
#include "test_text_report.moc"
