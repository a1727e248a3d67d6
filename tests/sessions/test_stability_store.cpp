// The instability indicators in the run store: a short text run of a tiny GPT (two blocks, built
// here) with statistics every 2 steps records every indicator under its key
// (stability/<block label>/<indicator>, stability/output/<indicator>) at the statistics steps,
// reads back through read_stability_series and latest_stability, travels in a bundle, and a run
// without statistics stores none.
#include "core/backend/backend.h"
#include "core/data/text_corpus.h"
#include "core/train/trainer.h"
#include "sessions/metric_keys.h"
#include "sessions/run_bundle.h"
#include "sessions/run_recorder.h"
#include "sessions/run_store.h"
#include "sessions/stability_series.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest/QtTest>

using namespace mpwb;

namespace {

const Dataset& letters() {
    static const Dataset d = [] {
        std::string text;
        for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + (i * i + i / 3) % 7);
        return make_text_corpus(text, {TokenizerKind::Char, 8, 0.2}, "test text", "letters").data;
    }();
    return d;
}

nlohmann::json tiny_gpt() {
    return {{"name", "gpt"},
            {"loss", "token_cross_entropy"},
            {"layers",
             {{{"type", "Embedding"}, {"d_model", 8}, {"context", 8}},
              {{"type", "TransformerBlock"}, {"heads", 2}},
              {{"type", "TransformerBlock"}, {"heads", 2}},
              {{"type", "LayerNorm"}},
              {{"type", "Linear"}, {"out", 0}}}}};
}

const char* const kBlockIndicators[] = {metric_key::attn_logit_max, metric_key::attn_entropy_mean,
                                        metric_key::attn_entropy_min, metric_key::residual_rms,
                                        metric_key::outlier_ratio};

}  // namespace

class TestStabilityStore : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    int n_ = 0;
    std::string fresh() { return dir_.filePath(QString("s_%1.sqlite").arg(++n_)).toStdString(); }

    std::int64_t train(const std::string& path, int64_t stats_every) {
        auto backend = make_cpu_backend();
        Network net = Network::from_json(tiny_gpt());
        TrainConfig c;
        c.max_steps = 5;
        c.batch_size = 4;
        c.lr = 0.01f;
        c.threads = 1;
        c.eval_batch = 16;
        c.stats_every = stats_every;
        Trainer trainer(net, letters(), c, *backend);
        RunRecorder::Options o;
        o.db_path = path;
        RunRecorder recorder(o);
        trainer.add_observer(&recorder);
        const RunSummary s = trainer.run();
        if (s.status != RunStatus::Finished) qWarning("run ended: %s", s.error.c_str());
        if (!recorder.complete()) qWarning("recorder: %s", recorder.error().c_str());
        return recorder.run_id();
    }

private slots:
    void records_every_indicator_at_the_statistics_steps() {
        const std::string path = fresh();
        const std::int64_t id = train(path, 2);
        QVERIFY(id > 0);
        RunStore store(path);
        const Run run = store.get_run(id);
        for (const char* block : {"1 TransformerBlock", "2 TransformerBlock"})
            for (const char* indicator : kBlockIndicators) {
                const std::string key = metric_key::stability_key(block, indicator);
                std::vector<std::int64_t> steps;
                for (const MetricPoint& p : store.series(id, key)) steps.push_back(p.step);
                QVERIFY2(steps == (std::vector<std::int64_t>{1, 2, 4}), key.c_str());
            }
        for (const char* indicator : {metric_key::logit_max, metric_key::log_z_mean})
            QCOMPARE(store.series(id, metric_key::stability_key("output", indicator)).size(), size_t{3});
        QCOMPARE(store.series(id, "stability/2 TransformerBlock/attn_logit_max").size(), size_t{3});

        const std::vector<StabilityLatest> latest = latest_stability(run);
        QCOMPARE(latest.size(), size_t{2 * 5 + 2});
        QCOMPARE(latest.front().source, std::string("1 TransformerBlock"));
        QCOMPARE(latest.front().indicator, std::string(metric_key::attn_logit_max));
        QCOMPARE(latest.back().source, std::string("output"));
        for (const auto& l : latest) QCOMPARE(l.step, std::int64_t{4});
        const auto series = read_stability_series(store, run, 100);
        QCOMPARE(series.size(), size_t{12});
        QCOMPARE(series.back().indicator, std::string(metric_key::log_z_mean));
        QCOMPARE(series.front().series.steps, (std::vector<double>{1, 2, 4}));

        // A bundle carries them: they are metrics like any other.
        const std::string bundle = dir_.filePath("stability.mpwb").toStdString();
        export_bundle(store, {id}, bundle);
        const std::string other = fresh();
        RunStore target(other);
        const ImportReport report = import_bundle(target, bundle);
        QCOMPARE(report.imported.size(), size_t{1});
        const Run imported = target.get_run(report.imported.front().store_id);
        const auto imported_latest = latest_stability(imported);
        QCOMPARE(imported_latest.size(), latest.size());
        for (size_t i = 0; i < latest.size(); ++i) QCOMPARE(imported_latest[i].value, latest[i].value);
    }

    void none_without_statistics() {
        const std::string path = fresh();
        const std::int64_t id = train(path, 0);
        RunStore store(path);
        const Run run = store.get_run(id);
        QVERIFY(run.latest.count(metric_key::train_loss));
        QVERIFY(latest_stability(run).empty());
        QVERIFY(read_stability_series(store, run, 100).empty());
    }

    void keys_parse_back() {
        std::string source, indicator;
        QVERIFY(parse_stability_key("stability/3 TransformerBlock/residual_rms", &source, &indicator));
        QCOMPARE(source, std::string("3 TransformerBlock"));
        QCOMPARE(indicator, std::string("residual_rms"));
        QVERIFY(!parse_stability_key("underflow/3 Linear/activation_grad", &source, &indicator));
        QVERIFY(!parse_stability_key("stability/", &source, &indicator));
        QVERIFY(!parse_stability_key("stability//x", &source, &indicator));
    }
};

QTEST_GUILESS_MAIN(TestStabilityStore)
#include "test_stability_store.moc"
