// One recorded run, four views, one set of figures: the run browser's table, `mpwb-cli runs
// compare`, the report and the run's "summary" event must show the same samples/s (training
// throughput, evaluation excluded), accuracies, skipped steps, speed-up and loss-scale range.
// The expected figures come from what the trainer told an independent observer, not from the
// code under test.
#include <QApplication>
#include <QFile>
#include <QHeaderView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "../cli/program_runner.h"
#include "app/report/report.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/train/dataset_source.h"
#include "core/train/event_text.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "sessions/run_figures.h"
#include "sessions/run_recorder.h"
#include "widgets/run_browser.h"

using namespace mpwb;

namespace {

// What the trainer reported, kept beside the recorder.
struct Tape final : TrainingObserver {
    double samples = 0, seconds = 0;
    double min_scale = INFINITY, max_scale = 0;
    RunSummary summary;
    void on_step(const StepMetrics& m) override {
        samples += m.samples_per_second * m.step_seconds;
        seconds += m.step_seconds;
        min_scale = std::min(min_scale, double(m.loss_scale));
        max_scale = std::max(max_scale, double(m.loss_scale));
    }
    void on_run_end(const RunSummary& s) override { summary = s; }
};

struct Recorded {
    std::int64_t id = 0;
    Tape tape;
};

void record(const std::string& db, PrecisionKind precision, Recorded& out) {
    Preset preset = load_preset("spiral-mlp");
    preset.training.precision = precision;
    preset.training.max_steps = 60;
    preset.training.stats_every = 10;
    preset.training.eval_every = 20;
    preset.training.threads = 1;
    if (precision != PrecisionKind::FP32) {
        LossScalerConfig scaler = preset.training.effective_scaler();
        scaler.growth_interval = 5;  // the scale moves within 60 steps: a range, not one value
        preset.training.scaler = scaler;
    }
    Dataset data = load_dataset(preset.training.dataset);
    Network net = Network::from_json(preset.network);
    CpuBackend backend;
    Trainer trainer(net, data, preset.training, backend);
    RunRecorder::Options o;
    o.db_path = db;
    RunRecorder recorder(o);
    trainer.add_observer(&out.tape);
    trainer.add_observer(&recorder);
    trainer.run();
    out.id = recorder.run_id();
}

// The cell of `label`'s row in the column of `run_id` in `runs compare`'s summary table.
QString compare_cell(const QString& out, const QString& label, int column) {
    const QStringList lines = out.split(QLatin1Char('\n'));
    const int summary = lines.indexOf(QStringLiteral("summary"));
    for (int i = std::max(0, summary); i < lines.size(); ++i)
        if (lines[i].startsWith(label + QStringLiteral("  "))) {
            const QStringList cells =
                lines[i]
                    .mid(label.size())
                    .split(QRegularExpression(QStringLiteral("\\s{2,}")), Qt::SkipEmptyParts);
            return column < cells.size() ? cells[column].trimmed() : QString();
        }
    return {};
}

}  // namespace

class TestSummaryFigures : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        db_ = dir_.filePath(QStringLiteral("runs.sqlite")).toStdString();
        record(db_, PrecisionKind::FP32, fp32_);
        record(db_, PrecisionKind::FP16Mixed, mixed_);
        QVERIFY(fp32_.id > 0 && mixed_.id > 0);
        RunStore store(db_);
        for (Recorded* r : {&fp32_, &mixed_}) figures_.push_back(run_figures(store, store.get_run(r->id)));
    }

    // The figure is the training throughput the trainer measured: samples over step seconds.
    void figuresAreTheTrainersThroughput() {
        for (std::size_t i = 0; i < 2; ++i) {
            const Tape& t = (i == 0 ? fp32_ : mixed_).tape;
            QVERIFY(figures_[i].samples_per_second.has_value());
            QVERIFY2(std::abs(*figures_[i].samples_per_second / (t.samples / t.seconds) - 1) < 1e-6,
                     qPrintable(QString::number(*figures_[i].samples_per_second)));
            QCOMPARE(*figures_[i].samples_per_second, t.summary.samples_per_second);
            QCOMPARE(figures_[i].loss_scale->min, t.min_scale);
            QCOMPARE(figures_[i].loss_scale->max, t.max_scale);
            QCOMPARE(figures_[i].skipped_steps, t.summary.skipped_steps);
        }
        QVERIFY2(mixed_.tape.min_scale < mixed_.tape.max_scale, "the scale should have moved");
    }

    void runTableShowsTheFigures() {
        RunBrowser browser;
        QVERIFY(browser.setDatabase(QString::fromStdString(db_)));
        auto* table = browser.findChild<QTableWidget*>(QStringLiteral("runTable"));
        QVERIFY(table);
        int speed = -1, final_acc = -1;
        for (int c = 0; c < table->columnCount(); ++c) {
            const QString h = table->horizontalHeaderItem(c)->text();
            if (h == QStringLiteral("Samples/s")) speed = c;
            if (h == QStringLiteral("Final test acc")) final_acc = c;
        }
        QVERIFY(speed >= 0 && final_acc >= 0);
        for (std::size_t i = 0; i < 2; ++i) {
            const std::int64_t id = (i == 0 ? fp32_ : mixed_).id;
            int row = -1;
            for (int r = 0; r < browser.rowCount(); ++r)
                if (browser.runIdAt(r) == id) row = r;
            QVERIFY(row >= 0);
            QCOMPARE(table->item(row, speed)->text(), sps_text(i));
            QCOMPARE(table->item(row, final_acc)->text(), acc_text(*figures_[i].final_test_accuracy));
        }
    }

    void runsCompareShowsTheFigures() {
        const ProgramResult r = run_program(QStringLiteral(MPWB_BINARY_DIR "/app/cli/mpwb-cli"),
                                            {QStringLiteral("runs"), QStringLiteral("compare"),
                                             QStringLiteral("%1,%2").arg(fp32_.id).arg(mixed_.id),
                                             QStringLiteral("--db"), QString::fromStdString(db_)});
        QCOMPARE(r.exit_code, 0);
        const QString out = QString::fromUtf8(r.out);
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(compare_cell(out, QStringLiteral("samples/s"), i), sps_text(i));
            QCOMPARE(compare_cell(out, QStringLiteral("final test accuracy"), i),
                     acc_text(*figures_[i].final_test_accuracy));
            QCOMPARE(compare_cell(out, QStringLiteral("best test accuracy"), i),
                     acc_text(*figures_[i].best_test_accuracy));
            QCOMPARE(compare_cell(out, QStringLiteral("skipped steps"), i),
                     QString::number(figures_[i].skipped_steps));
            QCOMPARE(compare_cell(out, QStringLiteral("loss scale range"), i), scale_text(i));
        }
        QCOMPARE(compare_cell(out, QStringLiteral("speed-up over fp32"), 1), speedup());
    }

    void reportShowsTheFiguresAndSaysWhatSamplesPerSecondIs() {
        ReportRequest request;
        request.database = db_;
        request.run_ids = {fp32_.id, mixed_.id};
        request.output = dir_.filePath(QStringLiteral("report.html")).toStdString();
        write_report(request);
        QFile f(QString::fromStdString(request.output));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString html = QString::fromUtf8(f.readAll());
        for (int i = 0; i < 2; ++i) {
            QVERIFY2(html.contains(QStringLiteral("<td>") + sps_text(i) + QStringLiteral("</td>")),
                     qPrintable(sps_text(i)));
            QVERIFY2(html.contains(scale_text(i)), qPrintable(scale_text(i)));
            QVERIFY2(html.contains(acc_text(*figures_[i].best_test_accuracy)),
                     qPrintable(acc_text(*figures_[i].best_test_accuracy)));
        }
        QVERIFY2(html.contains(speedup()), qPrintable(speedup()));
        QVERIFY(html.contains(QStringLiteral("Samples/s: training throughput")));
        QVERIFY(html.contains(QStringLiteral("evaluation excluded")));
    }

    // The summary event's sentence (the workbench's event log) names the same throughput.
    void eventsSummaryShowsTheSameThroughput() {
        for (int i = 0; i < 2; ++i) {
            const RunSummary& s = (i == 0 ? fp32_ : mixed_).tape.summary;
            const QString text = QString::fromStdString(event_text("summary", s.to_json()));
            const QString figure = sps_text(i);  // spelled as the table spells it, separators included
            QVERIFY2(text.contains(figure + QStringLiteral(" samples/s")), qPrintable(text + " / " + figure));
        }
    }

private:
    QString sps_text(std::size_t i) const {
        return QString::fromStdString(
            samples_per_second_text((i == 0 ? fp32_ : mixed_).tape.summary.samples_per_second));
    }
    static QString acc_text(double v) { return QString::fromStdString(percent_text(v)); }
    QString scale_text(std::size_t i) const {
        const Tape& t = (i == 0 ? fp32_ : mixed_).tape;
        return QString::fromStdString(scale_range_text(ScaleRange{t.min_scale, t.max_scale}));
    }
    QString speedup() const {
        return QString::fromStdString(
            speedup_text(mixed_.tape.summary.samples_per_second / fp32_.tape.summary.samples_per_second));
    }

    QTemporaryDir dir_;
    std::string db_;
    Recorded fp32_, mixed_;
    std::vector<RunFigures> figures_;
};

QTEST_MAIN(TestSummaryFigures)
#include "test_summary_figures.moc"
