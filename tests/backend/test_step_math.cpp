// The device step's two rules (core/backend/cuda/step_math.h) against the core engine they
// replace on the GPU, run here on the host, where both can be driven side by side:
//   scaler_rule     vs LossScaler::on_step_result (OverflowAction::Skip) over long random
//                   overflow sequences for every mode and every rule: scale, scale_used,
//                   trackers, counters and the verdict compared after every step, bit for bit;
//   optimizer_rule  vs Optimizer::step for SGD (plain, momentum, Nesterov, weight decay), Adam
//                   and AdamW (with and without weight decay) over several steps, bit for bit.
// step_math.h does its arithmetic with the CUDA round-to-nearest intrinsics on the device and
// with the same operations here, so agreement here is agreement of the formulas; the kernels add
// only loads, stores and format conversions. No GPU needed.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/cuda/step_math.h"
#include "core/engine/cuda/step_math_host.h"
#include "core/common/rng.h"
#include "core/optim/optimizer.h"
#include "core/precision/loss_scaler.h"
#include "core/tensor/parameter.h"
#include "tests/common/test_support.h"

using namespace mpwb;
using cuda::OptimizerConstants;
using cuda::OptimizerKind;
using cuda::ScalerRuleConfig;
using cuda::ScalerState;

namespace {

uint32_t bits(float x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

struct NamedScalerConfig {
    std::string name;
    LossScalerConfig config;
    bool expect_min = false;  // the random sequence must drive the scale to min_scale
    bool expect_max = false;  // ... and to max_scale (or to the refused growth below FLT_MAX)
};

std::vector<NamedScalerConfig> scaler_configs() {
    std::vector<NamedScalerConfig> out;
    const float flt_max = std::numeric_limits<float>::max();
    for (int hysteresis = 1; hysteresis <= 3; ++hysteresis)
        for (auto refill : {HysteresisRefill::OnGrowth, HysteresisRefill::EveryCleanStep})
            for (auto timing : {GrowthTiming::OnInterval, GrowthTiming::AfterInterval})
                for (bool count_skipped : {true, false}) {
                    LossScalerConfig c;
                    c.hysteresis = hysteresis;
                    c.refill = refill;
                    c.growth_timing = timing;
                    c.count_skipped_steps = count_skipped;
                    c.growth_interval = 1 + (hysteresis * 2 + static_cast<int>(refill)) % 4;  // 1..4
                    c.initial_scale = 1024;
                    c.min_scale = 1.0 / 64;
                    c.max_scale = 65536;
                    out.push_back({"dynamic h" + std::to_string(hysteresis) + " " +
                                       setting_enum_name(refill) + " " + setting_enum_name(timing) +
                                       (count_skipped ? " count" : " nocount"),
                                   c, true, true});
                }
    // Factors and clamps that are not FP32 values: the products must be formed in double.
    {
        LossScalerConfig c;
        c.growth_factor = 1.7;
        c.backoff_factor = 0.3;
        c.growth_interval = 2;
        c.initial_scale = 1000.1;
        c.min_scale = 0.1;
        c.max_scale = 1e6 + 0.3;
        c.hysteresis = 2;
        out.push_back({"odd factors and clamps", c, true, true});
    }
    // Growth past FLT_MAX: refused (grow_only_if_finite) or clamped at max_scale.
    for (bool only_finite : {true, false}) {
        LossScalerConfig c;
        c.growth_factor = 3.0;
        c.backoff_factor = 0.75;
        c.growth_interval = 1;
        c.initial_scale = 1e30;
        c.min_scale = 1e20;
        c.max_scale = flt_max;
        c.grow_only_if_finite = only_finite;
        out.push_back({std::string("up to FLT_MAX, grow_only_if_finite ") + (only_finite ? "on" : "off"), c,
                       true, true});
    }
    // Down to the smallest subnormal scale (PyTorch's clamps).
    {
        LossScalerConfig c = loss_scaler_preset("pytorch");
        c.growth_interval = 3;
        c.initial_scale = 1e-40;
        out.push_back({"pytorch preset near the subnormal minimum", c, true, false});
    }
    for (const char* preset : {"deepspeed", "megatron", "nnabla", "static", "none"}) {
        LossScalerConfig c = loss_scaler_preset(preset);
        c.on_overflow = OverflowAction::Skip;  // the device rule is the skip rule
        if (c.mode == ScalerMode::Dynamic) c.growth_interval = 5;
        out.push_back({std::string("preset ") + preset, c, false, false});
    }
    return out;
}

// One step of the random overflow sequence: phases of calm, rare, frequent and constant
// overflows, so the scale climbs to the maximum, falls to the minimum and wanders between.
class OverflowSequence {
public:
    explicit OverflowSequence(uint64_t seed) : rng_(seed) {}
    bool next() {
        if (left_ == 0) {
            static constexpr float kRates[] = {0.0f, 0.02f, 0.3f, 0.7f, 1.0f};
            rate_ = kRates[rng_.below(5)];
            left_ = 1 + static_cast<int64_t>(rng_.below(200));
        }
        --left_;
        return rng_.uniform() < rate_;
    }

private:
    Rng rng_;
    float rate_ = 0.0f;
    int64_t left_ = 0;
};

// Formats its message only on a mismatch (QVERIFY2 formats it on every check, which over
// millions of comparisons costs more than the comparisons).
#define COMPARE_FIELD(device, host, what)                                                          \
    do {                                                                                           \
        if (!((device) == (host)))                                                                 \
            QFAIL(qPrintable(QString("%1, step %2: %3 is %4 on the device rule, %5 in LossScaler") \
                                 .arg(QString::fromStdString(name))                                \
                                 .arg(step)                                                        \
                                 .arg(what)                                                        \
                                 .arg(double(device), 0, 'g', 17)                                  \
                                 .arg(double(host), 0, 'g', 17)));                                 \
    } while (0)

struct OptimizerCase {
    std::string name;
    OptimizerConfig config;
};

std::vector<OptimizerCase> optimizer_cases() {
    std::vector<OptimizerCase> out;
    auto add = [&](std::string name, std::string kind, float momentum, bool nesterov, float wd) {
        OptimizerConfig c;
        c.kind = std::move(kind);
        c.momentum = momentum;
        c.nesterov = nesterov;
        c.weight_decay = wd;
        out.push_back({std::move(name), c});
    };
    add("sgd plain", "sgd", 0.0f, false, 0.0f);
    add("sgd plain, weight decay", "sgd", 0.0f, false, 0.01f);
    add("sgd momentum", "sgd", 0.9f, false, 0.0f);
    add("sgd momentum, weight decay", "sgd", 0.85f, false, 5e-4f);
    add("sgd nesterov", "sgd", 0.9f, true, 0.0f);
    add("sgd nesterov, weight decay", "sgd", 0.9f, true, 1e-3f);
    add("adam", "adam", 0.0f, false, 0.0f);
    add("adam, L2 weight decay", "adam", 0.0f, false, 0.01f);
    add("adamw", "adamw", 0.0f, false, 0.0f);
    add("adamw, decoupled weight decay", "adamw", 0.0f, false, 0.05f);
    OptimizerConfig odd;
    odd.kind = "adamw";
    odd.beta1 = 0.8f;
    odd.beta2 = 0.95f;
    odd.eps = 1e-6f;
    odd.weight_decay = 0.1f;
    out.push_back({"adamw, other betas and eps", odd});
    return out;
}

}  // namespace

class TestStepMath : public QObject {
    Q_OBJECT

private slots:
    void host_bridges_copy_every_field();
    void scaler_rule_matches_loss_scaler();
    void scaler_rule_after_live_state();
    void optimizer_rule_matches_optimizer();
    void step_lr_and_clip_coefficient();
};

void TestStepMath::host_bridges_copy_every_field() {
    LossScalerConfig c;
    c.mode = ScalerMode::Static;
    c.growth_factor = 1.5;
    c.backoff_factor = 0.25;
    c.growth_interval = 77;
    c.hysteresis = 3;
    c.refill = HysteresisRefill::EveryCleanStep;
    c.min_scale = 0.5;
    c.max_scale = 1e7;
    c.initial_scale = 4096;
    c.count_skipped_steps = false;
    c.grow_only_if_finite = false;
    c.growth_timing = GrowthTiming::AfterInterval;
    const ScalerRuleConfig r = cuda::scaler_rule_config(c);
    QCOMPARE(r.mode, 1);
    QCOMPARE(r.growth_factor, 1.5);
    QCOMPARE(r.backoff_factor, 0.25);
    QCOMPARE(r.growth_interval, int64_t{77});
    QCOMPARE(r.hysteresis, 3);
    QCOMPARE(r.refill_every_clean_step, 1);
    QCOMPARE(r.min_scale, 0.5);
    QCOMPARE(r.max_scale, 1e7);
    QCOMPARE(r.count_skipped_steps, 0);
    QCOMPARE(r.grow_only_if_finite, 0);
    QCOMPARE(r.growth_after_interval, 1);
    QCOMPARE(cuda::scaler_rule_config(LossScalerConfig{}).mode, 2);

    LossScaler scaler(c);
    for (int64_t step = 1; step <= 5; ++step) scaler.on_step_result(step, step == 2);
    const ScalerState s = cuda::scaler_state_from(scaler);
    QCOMPARE(bits(s.scale), bits(scaler.scale()));
    QCOMPARE(bits(s.scale_used), bits(scaler.scale()));
    QCOMPARE(s.hysteresis_tracker, scaler.hysteresis_tracker());
    QCOMPARE(s.growth_tracker, scaler.growth_tracker());
    QCOMPARE(s.optimizer_iteration, scaler.optimizer_iteration());
    QCOMPARE(s.applied_steps, int64_t{4});
    QCOMPARE(s.skipped_steps, int64_t{1});
    QCOMPARE(s.overflow_count, int64_t{1});
    QCOMPARE(s.last_applied, 1);
}

void TestStepMath::scaler_rule_matches_loss_scaler() {
    constexpr int64_t kSteps = 6000;
    uint64_t seed = 1;
    for (const auto& [name, config, expect_min, expect_max] : scaler_configs()) {
        LossScaler scaler(config);
        const ScalerRuleConfig rule = cuda::scaler_rule_config(config);
        ScalerState s = cuda::scaler_state_from(scaler);
        OverflowSequence overflows(seed++);
        bool saw_min = false, saw_max = false, saw_skip = false, saw_apply = false;
        float lowest = s.scale, highest = s.scale;
        for (int64_t step = 1; step <= kSteps; ++step) {
            const bool overflow = overflows.next();
            const StepOutcome out = scaler.on_step_result(step, overflow);
            QVERIFY(out.action != StepAction::Retry);
            const bool applied = cuda::scaler_rule(rule, overflow, s);
            COMPARE_FIELD(applied, out.action == StepAction::Apply, "the verdict");
            COMPARE_FIELD(s.last_applied, applied ? 1 : 0, "last_applied");
            COMPARE_FIELD(bits(s.scale_used), bits(out.scale_used), "scale_used (bits)");
            COMPARE_FIELD(bits(s.scale), bits(scaler.scale()), "scale (bits)");
            COMPARE_FIELD(s.hysteresis_tracker, scaler.hysteresis_tracker(), "hysteresis_tracker");
            COMPARE_FIELD(s.growth_tracker, scaler.growth_tracker(), "growth_tracker");
            COMPARE_FIELD(s.optimizer_iteration, scaler.optimizer_iteration(), "optimizer_iteration");
            COMPARE_FIELD(s.applied_steps, scaler.applied_steps(), "applied_steps");
            COMPARE_FIELD(s.skipped_steps, scaler.skipped_steps(), "skipped_steps");
            COMPARE_FIELD(s.overflow_count, scaler.overflow_count(), "overflow_count");
            saw_min |= scaler.at_min();
            // At the top: at max_scale, or growth refused because the grown scale is not finite.
            saw_max |= scaler.at_max() || !std::isfinite(static_cast<float>(
                                              static_cast<double>(scaler.scale()) * config.growth_factor));
            saw_skip |= !applied;
            saw_apply |= applied;
            lowest = std::min(lowest, s.scale);
            highest = std::max(highest, s.scale);
        }
        // The sequence must have exercised the rules, or agreement would prove nothing.
        QVERIFY2(saw_skip && saw_apply, name.c_str());
        if (expect_min) QVERIFY2(saw_min, (name + ": the scale never reached min_scale").c_str());
        if (expect_max) QVERIFY2(saw_max, (name + ": the scale never reached the top").c_str());
        if (config.mode == ScalerMode::Dynamic)
            QVERIFY2(lowest < highest, (name + ": the scale never moved").c_str());
    }
}

// The device starts from a scaler that has already run (a resumed run, or one handed to the GPU
// mid-way): scaler_state_from must carry everything the rule needs to continue identically.
void TestStepMath::scaler_rule_after_live_state() {
    LossScalerConfig c;
    c.hysteresis = 3;
    c.growth_interval = 4;
    c.growth_timing = GrowthTiming::AfterInterval;
    LossScaler scaler(c);
    OverflowSequence overflows(99);
    int64_t step = 1;
    for (; step <= 333; ++step) scaler.on_step_result(step, overflows.next());
    ScalerState s = cuda::scaler_state_from(scaler);
    const ScalerRuleConfig rule = cuda::scaler_rule_config(c);
    const std::string name = "continued";
    for (; step <= 3000; ++step) {
        const bool overflow = overflows.next();
        const StepOutcome out = scaler.on_step_result(step, overflow);
        const bool applied = cuda::scaler_rule(rule, overflow, s);
        COMPARE_FIELD(applied, out.action == StepAction::Apply, "the verdict");
        COMPARE_FIELD(bits(s.scale), bits(scaler.scale()), "scale (bits)");
        COMPARE_FIELD(s.hysteresis_tracker, scaler.hysteresis_tracker(), "hysteresis_tracker");
        COMPARE_FIELD(s.growth_tracker, scaler.growth_tracker(), "growth_tracker");
        COMPARE_FIELD(s.applied_steps, scaler.applied_steps(), "applied_steps");
        COMPARE_FIELD(s.overflow_count, scaler.overflow_count(), "overflow_count");
    }
}

void TestStepMath::optimizer_rule_matches_optimizer() {
    constexpr int kSteps = 6;
    const std::vector<int64_t> sizes{1000, 37, 1};
    uint64_t seed = 100;
    for (const auto& [name, config] : optimizer_cases()) {
        Rng rng(seed++);
        std::vector<Parameter> params(sizes.size());
        std::vector<Parameter*> list;
        // The device's copies: master, and the two state buffers (zero, as the arena gives them).
        std::vector<std::vector<float>> w(sizes.size()), a(sizes.size()), b(sizes.size());
        for (size_t p = 0; p < sizes.size(); ++p) {
            params[p].name = std::to_string(p) + ".weight";
            params[p].value = Tensor({sizes[p]});
            params[p].grad = Tensor({sizes[p]});
            params[p].weight_decay = p != 1;  // the middle one is a bias: no decay
            for (int64_t i = 0; i < sizes[p]; ++i) params[p].value[i] = rng.normal();
            w[p].assign(params[p].value.span().begin(), params[p].value.span().end());
            a[p].assign(static_cast<size_t>(sizes[p]), 0.0f);
            b[p].assign(static_cast<size_t>(sizes[p]), 0.0f);
            list.push_back(&params[p]);
        }
        const auto optimizer = make_optimizer(config);
        const OptimizerConstants k = mpwb::cuda::optimizer_constants(config);
        for (int step = 1; step <= kSteps; ++step) {
            // Gradients across magnitudes, some exactly zero; a rate that changes every step.
            for (auto& p : params)
                for (int64_t i = 0; i < p.grad.numel(); ++i)
                    p.grad[i] = rng.below(17) == 0
                                    ? 0.0f
                                    : rng.normal() * std::ldexp(1.0f, static_cast<int>(rng.below(20)) - 10);
            const float lr = 0.01f * static_cast<float>(step) + 1e-3f * rng.uniform();
            optimizer->step(list, lr);
            const cuda::OptimizerStepScalars scalars = cuda::optimizer_step_scalars(k, lr, step, step == 1);
            for (size_t p = 0; p < params.size(); ++p) {
                for (int64_t i = 0; i < sizes[p]; ++i) {
                    const auto e = static_cast<size_t>(i);
                    const float g = params[p].grad[i];
                    // The last parameter takes the per-call overload: both forms must agree.
                    if (p + 1 == params.size())
                        cuda::optimizer_rule(k, lr, step, step == 1, params[p].weight_decay, g, w[p][e],
                                             a[p][e], b[p][e]);
                    else
                        cuda::optimizer_rule(k, scalars, params[p].weight_decay, g, w[p][e], a[p][e],
                                             b[p][e]);
                    if (bits(w[p][e]) != bits(params[p].value[i]))
                        QFAIL(qPrintable(
                            QString("%1, step %2, parameter %3[%4]: %5 by the device rule, %6 by Optimizer")
                                .arg(QString::fromStdString(name))
                                .arg(step)
                                .arg(p)
                                .arg(i)
                                .arg(double(w[p][e]), 0, 'g', 10)
                                .arg(double(params[p].value[i]), 0, 'g', 10)));
                }
            }
        }
        // The updates did something: a rule that left the weights alone would agree with nothing.
        QVERIFY2(optimizer->step_count(0) == kSteps, name.c_str());
    }
}

void TestStepMath::step_lr_and_clip_coefficient() {
    const float table[] = {0.1f, 0.2f, 0.3f};
    // Iteration after the step's increment: the rate of the iteration before, held at the ends.
    EXPECT_EXACT(cuda::step_lr(table, 3, 1, 1.0f), 0.1f);
    EXPECT_EXACT(cuda::step_lr(table, 3, 3, 1.0f), 0.3f);
    EXPECT_EXACT(cuda::step_lr(table, 3, 50, 1.0f), 0.3f);
    EXPECT_EXACT(cuda::step_lr(table, 3, 0, 1.0f), 0.1f);
    EXPECT_EXACT(cuda::step_lr(table, 3, 2, 0.7f), 0.2f * 0.7f);
    // clip_grad_norm's rule: only above max_norm, max_norm / (norm + 1e-6) in FP32.
    EXPECT_EXACT(cuda::clip_coefficient(9.0, 0.0f), 1.0f);
    EXPECT_EXACT(cuda::clip_coefficient(9.0, 3.0f), 1.0f);
    EXPECT_EXACT(cuda::clip_coefficient(16.0, 3.0f), 3.0f / (4.0f + 1e-6f));
    EXPECT_EXACT(cuda::clip_coefficient(std::numeric_limits<double>::infinity(), 3.0f), 1.0f);
    EXPECT_EXACT(cuda::clip_coefficient(std::nan(""), 3.0f), 1.0f);
}

QTEST_APPLESS_MAIN(TestStepMath)
#include "test_step_math.moc"
