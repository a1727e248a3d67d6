// Tests of the learning-rate schedules at chosen iterations against their closed forms written
// out here, warm-up composed with each kind, and configuration errors naming the setting.
#include <QtTest/QtTest>

#include <cmath>
#include <numbers>
#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/optim/lr_schedule.h"
#include "tests/common/test_support.h"

using mpwb::test::error_text;

using namespace mpwb;

namespace {
bool close(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b) + 1e-12; }

}  // namespace

class TestLrSchedule : public QObject {
    Q_OBJECT

private slots:
    void constant() {
        LrSchedule s(ScheduleConfig{}, 0.05f);
        EXPECT_EXACT(s.lr_at(0), 0.05f);
        EXPECT_EXACT(s.lr_at(123456789), 0.05f);
        EXPECT_EXACT(s.lr_at(-3), 0.05f);
    }

    void stepDecay() {
        ScheduleConfig c;
        c.kind = "step";
        c.step_size = 30;
        c.gamma = 0.5f;
        LrSchedule s(c, 0.8f);
        EXPECT_EXACT(s.lr_at(0), 0.8f);
        EXPECT_EXACT(s.lr_at(29), 0.8f);
        EXPECT_EXACT(s.lr_at(30), 0.4f);
        EXPECT_EXACT(s.lr_at(59), 0.4f);
        EXPECT_EXACT(s.lr_at(60), 0.2f);
        EXPECT_EXACT(s.lr_at(95), 0.1f);  // floor(95/30) = 3: 0.8 * 0.5^3
        c.gamma = 0.1f;
        LrSchedule t(c, 1.0f);
        QVERIFY(close(t.lr_at(65), 0.01));  // 0.1^2
    }

    void cosine() {
        ScheduleConfig c;
        c.kind = "cosine";
        c.total_steps = 100;
        c.min_lr = 0.001f;
        LrSchedule s(c, 0.1f);
        const double base = double(0.1f), lo = double(0.001f);
        QVERIFY(close(s.lr_at(0), base));
        QVERIFY(close(s.lr_at(50), lo + (base - lo) * 0.5));
        QVERIFY(close(s.lr_at(25), lo + (base - lo) * (1 + std::cos(std::numbers::pi / 4)) / 2));
        QVERIFY(close(s.lr_at(99), lo + (base - lo) * (1 + std::cos(std::numbers::pi * 0.99)) / 2));
        EXPECT_EXACT(s.lr_at(100), 0.001f);
        EXPECT_EXACT(s.lr_at(250), 0.001f);  // held at the floor past the planned end
        // Decreasing over the run.
        for (int64_t t = 1; t <= 100; ++t) QVERIFY(s.lr_at(t) <= s.lr_at(t - 1));
    }

    void warmupThenCosine() {
        ScheduleConfig c;
        c.kind = "cosine";
        c.total_steps = 110;
        c.warmup_steps = 10;
        LrSchedule s(c, 0.1f);
        EXPECT_EXACT(s.lr_at(0), 0.0f);
        QVERIFY(close(s.lr_at(5), 0.1 * 5 / 10));
        QVERIFY(close(s.lr_at(9), 0.1 * 9 / 10));
        QVERIFY(close(s.lr_at(10), 0.1));        // cosine starts at the base rate
        QVERIFY(close(s.lr_at(60), 0.1 * 0.5));  // half way through the 100 cosine steps
        QVERIFY(close(s.lr_at(35), 0.1 * (1 + std::cos(std::numbers::pi * 25 / 100)) / 2));
        EXPECT_EXACT(s.lr_at(110), 0.0f);
    }

    void warmupStartFactorWithStepAndConstant() {
        ScheduleConfig c;
        c.kind = "step";
        c.step_size = 10;
        c.gamma = 0.1f;
        c.warmup_steps = 4;
        c.warmup_start_factor = 0.25f;
        LrSchedule s(c, 2.0f);
        QVERIFY(close(s.lr_at(0), 2.0 * 0.25));
        QVERIFY(close(s.lr_at(2), 2.0 * (0.25 + 0.75 * 2 / 4)));
        QVERIFY(close(s.lr_at(4), 2.0));
        QVERIFY(close(s.lr_at(13), 2.0));        // u = 9
        QVERIFY(close(s.lr_at(14), 2.0 * 0.1));  // u = 10
        c.kind = "constant";
        LrSchedule k(c, 2.0f);
        QVERIFY(close(k.lr_at(1), 2.0 * (0.25 + 0.75 / 4)));
        EXPECT_EXACT(k.lr_at(4), 2.0f);
        EXPECT_EXACT(k.lr_at(1000), 2.0f);
    }

    void validationNamesTheSetting() {
        auto msg = [](auto mutate, float base = 0.1f) {
            ScheduleConfig c;
            mutate(c);
            return error_text<ConfigError>([&] { LrSchedule s(c, base); });
        };
        QString m = msg([](ScheduleConfig& c) { c.kind = "exponential"; });
        QVERIFY2(m.contains("exponential") && m.contains("constant, step, cosine"), qPrintable(m));
        m = msg([](ScheduleConfig& c) {
            c.kind = "step";
            c.step_size = 0;
        });
        QVERIFY2(m.contains("step_size = 0"), qPrintable(m));
        m = msg([](ScheduleConfig& c) {
            c.kind = "step";
            c.gamma = 0.0f;
        });
        QVERIFY2(m.contains("gamma = 0"), qPrintable(m));
        m = msg([](ScheduleConfig& c) { c.gamma = NAN; });
        QVERIFY2(m.contains("gamma") && m.contains("nan"), qPrintable(m));
        m = msg([](ScheduleConfig& c) {
            c.kind = "cosine";
            c.total_steps = 10;
            c.warmup_steps = 10;
        });
        QVERIFY2(m.contains("total_steps = 10") && m.contains("warmup_steps"), qPrintable(m));
        m = msg([](ScheduleConfig& c) { c.warmup_steps = -1; });
        QVERIFY2(m.contains("warmup_steps = -1"), qPrintable(m));
        m = msg([](ScheduleConfig& c) { c.warmup_start_factor = 1.5f; });
        QVERIFY2(m.contains("warmup_start_factor = 1.5"), qPrintable(m));
        m = msg([](ScheduleConfig& c) { c.min_lr = -0.01f; });
        QVERIFY2(m.contains("min_lr = -0.01"), qPrintable(m));
        m = msg([](ScheduleConfig&) {}, -1.0f);
        QVERIFY2(m.contains("learning rate = -1"), qPrintable(m));
        m = msg([](ScheduleConfig&) {}, INFINITY);
        QVERIFY2(m.contains("learning rate = inf"), qPrintable(m));
    }

    void json() {
        ScheduleConfig c;
        c.kind = "cosine";
        c.total_steps = 5000;
        c.min_lr = 1e-5f;
        c.warmup_steps = 200;
        c.warmup_start_factor = 0.1f;
        const nlohmann::json j = c;
        QCOMPARE(j.at("min_lr").dump(), std::string("1e-05"));
        QCOMPARE(nlohmann::json::parse(j.dump()).get<ScheduleConfig>(), c);
        const auto partial =
            nlohmann::json::parse(R"({"kind": "step", "step_size": 7})").get<ScheduleConfig>();
        QCOMPARE(partial.step_size, int64_t{7});
        EXPECT_EXACT(partial.gamma, 0.1f);

        auto msg = [](const char* text) {
            return error_text<ConfigError>([&] { (void)nlohmann::json::parse(text).get<ScheduleConfig>(); });
        };
        QString m = msg(R"({"kind": "step", "milestones": [1, 2]})");
        QVERIFY2(m.contains("'milestones'"), qPrintable(m));
        m = msg(R"({"kind": "step", "step_size": 2.5})");
        QVERIFY2(m.contains("step_size") && m.contains("integer"), qPrintable(m));
        m = msg(R"({"kind": "step", "step_size": 9223372036854775808})");  // INT64_MAX + 1: no wrap
        QVERIFY2(m.contains("step_size") && m.contains("64-bit"), qPrintable(m));
        m = msg(R"({"kind": "cosine", "total_steps": 5, "warmup_steps": 5})");
        QVERIFY2(m.contains("total_steps = 5"), qPrintable(m));
        // total_steps 0 is a valid config ("the whole run", set by the trainer) but no schedule
        // can be built from it until it is filled in.
        const auto whole_run = nlohmann::json::parse(R"({"kind": "cosine"})").get<ScheduleConfig>();
        QCOMPARE(whole_run.total_steps, int64_t{0});
        m = error_text<ConfigError>([&] { LrSchedule s(whole_run, 0.1f); });
        QVERIFY2(m.contains("total_steps"), qPrintable(m));
        m = msg(R"({"gamma": null})");
        QVERIFY2(m.contains("gamma"), qPrintable(m));
    }
};

QTEST_APPLESS_MAIN(TestLrSchedule)
#include "test_lr_schedule.moc"
