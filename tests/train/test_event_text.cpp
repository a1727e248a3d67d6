// Tests of event_text: each event kind as the scaler and the trainer write it, read back as a line.
#include <QtTest>

#include "core/precision/loss_scaler.h"
#include "core/train/event_text.h"

using namespace mpwb;
using nlohmann::json;

class TestEventText : public QObject {
    Q_OBJECT
private slots:
    void scales() {
        QCOMPARE(scale_text(65536), std::string("2^16"));
        QCOMPARE(scale_text(0.25), std::string("2^-2"));
        QCOMPARE(scale_text(1), std::string("2^0"));
        QCOMPARE(scale_text(1000), std::string("1000"));
        QCOMPARE(scale_text(std::nan("")), std::string("nan"));
    }

    void scalerKinds_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("detail");
        QTest::addColumn<QString>("expected");
        QTest::newRow("backoff") << "backoff"
                                 << R"({"from":65536,"to":32768,"clamped_at_min":false,"layer":"2:Linear"})"
                                 << "scale 2^16 → 2^15, overflow in 2:Linear";
        QTest::newRow("growth clamped") << "growth"
                                        << R"({"from":8192,"to":16384,"clamped_at_max":true})"
                                        << "scale 2^13 → 2^14 (clamped at max_scale)";
        QTest::newRow("skip")
            << "overflow_skip"
            << R"({"scale_used":65536,"next_scale":32768,"layer":"0:Linear","reason":"x","retries":0,"at_min":false})"
            << "step skipped at scale 2^16, overflow in 0:Linear; next scale 2^15";
        QTest::newRow("retry")
            << "retry"
            << R"({"retry":1,"max_retries":4,"scale_used":1024,"next_scale":512,"layer":""})"
            << "retry 1 of 4: overflow at scale 2^10, again at 2^9";
        QTest::newRow("config")
            << "config_changed"
            << R"({"changes":{"growth_interval":{"from":2000,"to":500}},"scale_before":1024,"scale_after":1024,"scale_restarted":false})"
            << "scaler settings: growth_interval 2000 → 500";
        QTest::newRow("user scale") << "user_set_scale"
                                    << R"({"requested":256,"scale_before":1024,"scale_after":256})"
                                    << "scale set to 2^8: 2^10 → 2^8";
        QTest::newRow("lr") << "lr_changed"
                            << R"({"from":0.001,"to":0.01})"
                            << "learning rate 0.001 → 0.01";
        QTest::newRow("summary")
            << "summary"
            << R"({"status":"finished","error":"","steps":3750,"samples_per_second":98765.4,"test_accuracy":0.98754,"skipped_steps":3})"
            << "finished after 3750 steps, test accuracy 98.75%, 98,765 samples/s, 3 skipped";
        QTest::newRow("paused") << "paused"
                                << "{}"
                                << "";
        QTest::newRow("interrupted") << "interrupted"
                                     << R"({"checkpoint_step":100})"
                                     << "checkpoint at step 100; resumable";
        QTest::newRow("resumed") << "resumed_from_checkpoint"
                                 << R"({"step":100,"epoch":1,"batch":4})"
                                 << "resumed from the checkpoint at step 100 (epoch 2, batch 5)";
        QTest::newRow("no checkpoints") << "checkpoints_unavailable"
                                        << R"({"engine":"CUDA graphs"})"
                                        << "no checkpoints: the CUDA graphs engine cannot save its state";
        QTest::newRow("unknown") << "something_new"
                                 << R"({"a":1,"b":"x"})"
                                 << "a=1, b=x";
    }
    void scalerKinds() {
        QFETCH(QString, kind);
        QFETCH(QString, detail);
        QFETCH(QString, expected);
        QCOMPARE(QString::fromStdString(event_text(kind.toStdString(), json::parse(detail.toStdString()))),
                 expected);
    }

    // What a real scaler emits on an overflow and on growth reads as a sentence, never as JSON.
    void realScalerEvents() {
        LossScalerConfig c;
        c.initial_scale = 1024;
        c.growth_interval = 2;
        LossScaler scaler(c);
        for (int64_t step = 1; step <= 4; ++step)
            scaler.on_step_result(step, step == 1, step == 1 ? "3:Linear" : "");
        const auto events = scaler.take_events();
        QVERIFY(events.size() >= 2);
        for (const auto& e : events) {
            const std::string line = event_text(e.kind, e.detail);
            QVERIFY2(!line.empty() && line.find('{') == std::string::npos, line.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestEventText)
#include "test_event_text.moc"
