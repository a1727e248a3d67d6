// read_plot_series, the reader the plot board and the report share: a short series comes back
// whole; a long one as its min/max envelope, so a one-step spike, a loss-scale drop and an
// overflow marker survive however far the series is downsampled.
#include "sessions/plot_series.h"
#include "sessions/metric_keys.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "test_support.h"

#include <QTemporaryDir>

#include <algorithm>

using namespace mpwb;

class TestPlotSeries : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::string path_;
    std::int64_t id_ = 0;
    static constexpr int kSteps = 20000;
    static constexpr int kSpikeStep = 12345;

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        path_ = dir_.filePath(QStringLiteral("plot_series.sqlite")).toStdString();
        RunStore store(path_);
        id_ = store.create_run(RunInfo{});
        RunWriter w(path_, id_);
        int overflows = 0;
        for (int s = 1; s <= kSteps; ++s) {
            const bool drop = s == kSpikeStep;  // one overflow: the scale halves for one step
            overflows += drop;
            w.log_metric(metric_key::loss_scale, s, s, drop ? 32768.0 : 65536.0);
            w.log_metric(metric_key::train_loss, s, s, s == kSpikeStep ? 50.0 : 1.0 / s);
            w.log_metric(metric_key::overflow_count, s, s, overflows);
            w.log_metric(metric_key::skipped, s, s, drop ? 1 : 0);
        }
        QVERIFY(w.finish(RunStatus::Finished));
    }

    void shortSeriesComesBackWhole() {
        RunStore store(path_);
        const Run run = store.get_run(id_);
        const PlotSeries s = read_plot_series(store, run, metric_key::loss_scale, kSteps);
        QVERIFY(!s.envelope);
        QCOMPARE(s.steps.size(), std::size_t(kSteps));
        QCOMPARE(s.values[kSpikeStep - 1], 32768.0);
    }

    void spikeAndScaleDropSurviveDownsampling() {
        RunStore store(path_);
        const Run run = store.get_run(id_);
        for (int budget : {4000, 200, 10}) {
            const PlotSeries scale = read_plot_series(store, run, metric_key::loss_scale, budget);
            QVERIFY(scale.envelope);
            QVERIFY2(scale.steps.size() <= std::size_t(budget) + 2,
                     qPrintable(QString::number(scale.steps.size())));
            QCOMPARE(*std::min_element(scale.values.begin(), scale.values.end()), 32768.0);
            const PlotSeries loss = read_plot_series(store, run, metric_key::train_loss, budget);
            QCOMPARE(*std::max_element(loss.values.begin(), loss.values.end()), 50.0);
            QVERIFY(std::is_sorted(loss.steps.begin(), loss.steps.end()));
        }
    }

    void markersComeFromTheFullSeries() {
        RunStore store(path_);
        const ScaleMarkers m = read_scale_markers(store, store.get_run(id_));
        QCOMPARE(m.overflow_steps, std::vector<double>{double(kSpikeStep)});
        QCOMPARE(m.skip_steps, std::vector<double>{double(kSpikeStep)});
    }

    void missingKeyIsEmpty() {
        RunStore store(path_);
        QVERIFY(read_plot_series(store, store.get_run(id_), "no_such_metric", 100).steps.empty());
    }
};

QTEST_APPLESS_MAIN(TestPlotSeries)
#include "test_plot_series.moc"
