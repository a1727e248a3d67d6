// Tests of mpwb::LossScaler. The core check: scripted overflow sequences run through the engine,
// configured like PyTorch, DeepSpeed (with and without consecutive_hysteresis), Megatron-LM and
// NNabla, must give exactly the trajectory (scale used by every attempt, applied / skipped /
// retried) of small transliterations of those systems' own update rules written below,
// independently of the engine. Then short sequences worked out by hand, the clamps, retries,
// the LR-schedule clock, live changes applied at a step boundary, save/restore, and every bad
// setting. The queue that brings live changes from another thread is tested in
// tests/train/test_live_changes.
#include <QtTest>

#include <cfloat>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/precision/loss_scaler.h"

using namespace mpwb;

namespace {

enum class Act { Apply, Skip, Retry };

struct Attempt {
    float scale;
    Act act;
    bool operator==(const Attempt&) const = default;
};
using Trajectory = std::vector<Attempt>;

Act act_of(StepAction a) {
    switch (a) {
        case StepAction::Apply:
            return Act::Apply;
        case StepAction::Skip:
            return Act::Skip;
        case StepAction::Retry:
            return Act::Retry;
    }
    return Act::Apply;
}

const char* name_of(Act a) { return a == Act::Apply ? "apply" : a == Act::Skip ? "skip" : "retry"; }

// Feeds overflow flags to the engine, one flag per attempt (a retried step consumes several).
Trajectory run_engine(LossScaler& s, const std::vector<bool>& flags, int64_t first_step = 0) {
    Trajectory t;
    size_t i = 0;
    for (int64_t step = first_step; i < flags.size(); ++step) {
        while (i < flags.size()) {
            // Read before the call: argument order is unspecified, and flags[i - 1] evaluated
            // before i++ read flags[-1] (ASan: heap-buffer-overflow).
            const bool overflow = flags[i++];
            const StepOutcome o = s.on_step_result(step, overflow, overflow ? "fc2.weight" : "");
            t.push_back({o.scale_used, act_of(o.action)});
            if (o.action != StepAction::Retry) break;
        }
    }
    return t;
}

// Reports the first difference, with its index, instead of one bare "not equal".
bool same(const Trajectory& a, const Trajectory& b, QString* why) {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        if (!(a[i] == b[i])) {
            *why = QString("attempt %1: engine scale %2 %3, reference scale %4 %5")
                       .arg(i)
                       .arg(double(a[i].scale), 0, 'g', 9)
                       .arg(name_of(a[i].act))
                       .arg(double(b[i].scale), 0, 'g', 9)
                       .arg(name_of(b[i].act));
            return false;
        }
    }
    if (a.size() != b.size()) {
        *why = QString("lengths differ: engine %1, reference %2").arg(a.size()).arg(b.size());
        return false;
    }
    return true;
}

#define COMPARE_TRAJ(a, b)                                   \
    do {                                                     \
        QString why_;                                        \
        if (!same((a), (b), &why_)) QFAIL(qPrintable(why_)); \
    } while (0)

// Overflow flags: clean runs broken by bursts of overflows, so that growth, backoff, hysteresis
// and the clamps all happen within a few hundred steps.
std::vector<bool> random_flags(uint64_t seed, int n, float burst_probability, int max_burst) {
    Rng rng(seed);
    std::vector<bool> f;
    while (static_cast<int>(f.size()) < n) {
        if (rng.uniform() < burst_probability) {
            const int len = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(max_burst)));
            for (int k = 0; k < len && static_cast<int>(f.size()) < n; ++k) f.push_back(true);
        } else {
            f.push_back(false);
        }
    }
    return f;
}

std::vector<bool> pattern(const char* p) {  // 'O' overflow, 'C' clean; other characters ignored
    std::vector<bool> f;
    for (; *p; ++p) {
        if (*p == 'O') f.push_back(true);
        if (*p == 'C') f.push_back(false);
    }
    return f;
}

// ---------------------------------------------------------------------------------------------
// Transliterations of the reference update rules (kept deliberately literal).

// PyTorch aten/src/ATen/native/cuda/AmpKernels.cu, amp_update_scale_cuda_kernel (scale is a
// float32 tensor, the factors are doubles). The optimizer step is skipped when found_inf.
struct TorchRef {
    float current_scale;
    int growth_tracker = 0;
    double growth_factor, backoff_factor;
    int growth_interval;
    int growths = 0, backoffs = 0, blocked = 0;

    void update(bool found_inf) {
        if (found_inf) {
            current_scale = static_cast<float>(current_scale * backoff_factor);
            growth_tracker = 0;
            ++backoffs;
        } else {
            auto successful = growth_tracker + 1;
            if (successful == growth_interval) {
                auto new_scale = static_cast<float>(current_scale * growth_factor);
                if (std::isfinite(new_scale)) {
                    current_scale = new_scale;
                    ++growths;
                } else {
                    ++blocked;
                }
                growth_tracker = 0;
            } else {
                growth_tracker = successful;
            }
        }
    }
    Trajectory run(const std::vector<bool>& flags) {
        Trajectory t;
        for (bool f : flags) {
            t.push_back({current_scale, f ? Act::Skip : Act::Apply});
            update(f);
        }
        return t;
    }
};

// DeepSpeed deepspeed/runtime/fp16/loss_scaler.py, DynamicLossScaler.update_scale, with
// raise_error_at_min_scale=False. Python floats (double). Every overflow skips the step.
struct DeepSpeedRef {
    double cur_scale;
    double scale_factor;
    long scale_window;
    double min_scale;
    int delayed_shift;
    bool consecutive_hysteresis;
    long cur_iter = 0;
    long last_overflow_iter = -1;
    int cur_hysteresis = 0;
    int absorbed = 0, growths = 0, at_min_hits = 0;

    void update_scale(bool overflow) {
        if (overflow) {
            if (delayed_shift == 1 || cur_hysteresis == 1) {
                if (cur_scale == min_scale) ++at_min_hits;
                cur_scale = std::max(cur_scale / scale_factor, min_scale);
            } else {
                cur_hysteresis -= 1;
                ++absorbed;
            }
            last_overflow_iter = cur_iter;
        } else {
            if (consecutive_hysteresis) cur_hysteresis = delayed_shift;
            if ((cur_iter - last_overflow_iter) % scale_window == 0) {
                if (!consecutive_hysteresis) cur_hysteresis = delayed_shift;
                cur_scale *= scale_factor;
                ++growths;
            }
        }
        cur_iter += 1;
    }
    Trajectory run(const std::vector<bool>& flags) {
        cur_hysteresis = delayed_shift;
        Trajectory t;
        for (bool f : flags) {
            t.push_back({static_cast<float>(cur_scale), f ? Act::Skip : Act::Apply});
            update_scale(f);
        }
        return t;
    }
};

// Megatron-LM megatron/core/optimizer/grad_scaler.py, DynamicGradScaler.update (float32
// tensors). The optimizer skips the step when found_inf.
struct MegatronRef {
    float scale, min_scale, growth_factor, backoff_factor;
    int growth_interval, hysteresis;
    int growth_tracker = 0, hysteresis_tracker = 0;
    int absorbed = 0, growths = 0;

    void update(bool found_inf) {
        if (found_inf) {
            growth_tracker = 0;
            hysteresis_tracker -= 1;
            if (hysteresis_tracker <= 0)
                scale = std::max(scale * backoff_factor, min_scale);
            else
                ++absorbed;
        } else {
            growth_tracker += 1;
            if (growth_tracker == growth_interval) {
                growth_tracker = 0;
                hysteresis_tracker = hysteresis;
                scale = scale * growth_factor;
                ++growths;
            }
        }
    }
    Trajectory run(const std::vector<bool>& flags) {
        hysteresis_tracker = hysteresis;
        Trajectory t;
        for (bool f : flags) {
            t.push_back({scale, f ? Act::Skip : Act::Apply});
            update(f);
        }
        return t;
    }
};

// NNabla nnabla/experimental/mixed_precision_training.py, DynamicLossScalingUpdater.update:
// recursive retry on inf/NaN, skipped after _max_recursive_count retries. Python floats.
struct NnablaRef {
    double scale, scaling_factor;
    long N;
    int max_recursive_count;
    long counter = 0;
    int recursive_count = 0;
    int retries = 0, skips = 0, growths = 0;

    // One call of update(); consumes one flag per forward/backward.
    void update(const std::vector<bool>& flags, size_t& i, Trajectory& t) {
        if (i >= flags.size()) return;
        const bool inf = flags[i++];
        t.push_back({static_cast<float>(scale), Act::Apply});
        if (inf) {
            scale /= scaling_factor;
            counter = 0;
            recursive_count += 1;
            if (recursive_count > max_recursive_count) {
                recursive_count = 0;
                t.back().act = Act::Skip;
                ++skips;
                return;  // skip
            }
            t.back().act = Act::Retry;
            ++retries;
            return update(flags, i, t);
        }
        recursive_count = 0;
        // solver.update()
        if (counter > N) {
            scale *= scaling_factor;
            counter = 0;
            ++growths;
        }
        counter += 1;
    }
    Trajectory run(const std::vector<bool>& flags) {
        Trajectory t;
        size_t i = 0;
        while (i < flags.size()) update(flags, i, t);
        return t;
    }
};

// ---------------------------------------------------------------------------------------------
// Engine configurations equivalent to each reference.

LossScalerConfig torch_like(double init, int interval) {
    LossScalerConfig c;
    c.initial_scale = init;
    c.growth_interval = interval;
    c.min_scale = std::numeric_limits<float>::denorm_min();
    c.max_scale = FLT_MAX;
    return c;
}

LossScalerConfig deepspeed_like(double init, double factor, int window, double min_scale, int delayed_shift,
                                bool consecutive) {
    LossScalerConfig c;
    c.initial_scale = init;
    c.growth_factor = factor;
    c.backoff_factor = 1.0 / factor;
    c.growth_interval = window;
    c.hysteresis = delayed_shift;
    c.refill = consecutive ? HysteresisRefill::EveryCleanStep : HysteresisRefill::OnGrowth;
    c.min_scale = min_scale;
    c.max_scale = FLT_MAX;
    c.grow_only_if_finite = false;
    return c;
}

LossScalerConfig megatron_like(double init, int interval, double min_scale, int hysteresis) {
    LossScalerConfig c;
    c.initial_scale = init;
    c.growth_interval = interval;
    c.hysteresis = hysteresis;
    c.refill = HysteresisRefill::OnGrowth;
    c.min_scale = min_scale;
    c.max_scale = FLT_MAX;
    c.grow_only_if_finite = false;
    return c;
}

LossScalerConfig nnabla_like(double init, int N, int max_recursive) {
    LossScalerConfig c;
    c.initial_scale = init;
    c.growth_interval = N;
    c.growth_timing = GrowthTiming::AfterInterval;
    c.on_overflow = OverflowAction::Retry;
    c.max_retries = max_recursive;
    c.min_scale = std::numeric_limits<float>::denorm_min();
    c.max_scale = FLT_MAX;
    c.grow_only_if_finite = false;
    return c;
}

std::vector<float> scales_of(const Trajectory& t) {
    std::vector<float> s;
    for (auto& a : t) s.push_back(a.scale);
    return s;
}
std::vector<Act> acts_of(const Trajectory& t) {
    std::vector<Act> s;
    for (auto& a : t) s.push_back(a.act);
    return s;
}

int count_kind(const std::vector<ScalerEvent>& ev, const std::string& kind) {
    int n = 0;
    for (auto& e : ev) n += e.kind == kind;
    return n;
}

// Runs f, expects a ConfigError whose message contains every one of the needles.
bool throws_config_error(const std::function<void()>& f, std::initializer_list<const char*> needles,
                         QString* why) {
    try {
        f();
    } catch (const ConfigError& e) {
        const std::string msg = e.what();
        for (const char* n : needles) {
            if (msg.find(n) == std::string::npos) {
                *why = QString("message '%1' does not mention '%2'").arg(msg.c_str(), n);
                return false;
            }
        }
        return true;
    } catch (const std::exception& e) {
        *why = QString("threw a different exception: %1").arg(e.what());
        return false;
    }
    *why = "did not throw";
    return false;
}

#define EXPECT_CONFIG_ERROR(expr, ...)                                 \
    do {                                                               \
        QString why_;                                                  \
        if (!throws_config_error([&] { expr; }, {__VA_ARGS__}, &why_)) \
            QFAIL(qPrintable(QString("%1: %2").arg(#expr, why_)));     \
    } while (0)

}  // namespace

class TestLossScaler : public QObject {
    Q_OBJECT
private slots:
    // ---- hand-checked sequences ----

    void handPytorch() {
        // Interval 3, hysteresis 1, start 1024. Tracker counts clean steps; the 3rd grows.
        //  s0 C 1024 t1 | s1 C 1024 t2 | s2 C 1024 t3 -> 2048 | s3 O 2048 -> 1024 skip
        //  s4 C 1024 t1 | s5 C 1024 t2 | s6 O 1024 -> 512 skip | s7 O 512 -> 256 skip
        //  s8 C 256 t1 | s9 C 256 t2 | s10 C 256 -> 512 | s11 C 512 | s12 C 512 | s13 C 512 -> 1024
        LossScalerConfig c;
        c.initial_scale = 1024;
        c.growth_interval = 3;
        LossScaler s(c);
        const Trajectory t = run_engine(s, pattern("CCC O CC OO CCC CCC"));
        const std::vector<float> expect{1024, 1024, 1024, 2048, 1024, 1024, 1024,
                                        512,  256,  256,  256,  512,  512,  512};
        QCOMPARE(scales_of(t), expect);
        for (size_t i = 0; i < t.size(); ++i)
            QCOMPARE(t[i].act, (i == 3 || i == 6 || i == 7) ? Act::Skip : Act::Apply);
        QCOMPARE(s.scale(), 1024.0f);
        QCOMPARE(s.skipped_steps(), 3);
        QCOMPARE(s.applied_steps(), 11);
        const auto ev = s.take_events();
        QCOMPARE(count_kind(ev, "growth"), 3);
        QCOMPARE(count_kind(ev, "backoff"), 3);
        QCOMPARE(count_kind(ev, "overflow_skip"), 3);
        QCOMPARE(count_kind(ev, "hysteresis_consumed"), 0);
    }

    void handDeepspeed() {
        // delayed_shift 2, window 3, start 1024, min 1.
        // Refill on growth (consecutive_hysteresis off):
        //  s0 O hyst 2->1, keep 1024 | s1 C | s2 O hyst==1: 1024 -> 512 | s3 C | s4 C
        //  s5 C: 5-2 = 3 = window -> 1024, hyst refilled to 2 | s6 O hyst 2->1 | s7 O -> 512
        //  s8 O hyst still 1 -> 256 | s9 C at 256
        {
            LossScaler s(deepspeed_like(1024, 2, 3, 1, 2, false));
            const Trajectory t = run_engine(s, pattern("OCOCCCOOOC"));
            const std::vector<float> expect{1024, 1024, 1024, 512, 512, 512, 1024, 1024, 512, 256};
            QCOMPARE(scales_of(t), expect);
            const std::vector<Act> acts{Act::Skip,  Act::Apply, Act::Skip, Act::Apply, Act::Apply,
                                        Act::Apply, Act::Skip,  Act::Skip, Act::Skip,  Act::Apply};
            QCOMPARE(acts_of(t), acts);
            QCOMPARE(count_kind(s.take_events(), "hysteresis_consumed"), 2);
        }
        // Refill on every clean step (consecutive_hysteresis on): s0 and s2 are both tolerated
        // (s1 refills), s5: 5-2 = 3 -> 2048; s6 tolerated, s7 -> 1024, s8 -> 512.
        {
            LossScaler s(deepspeed_like(1024, 2, 3, 1, 2, true));
            const Trajectory t = run_engine(s, pattern("OCOCCCOOOC"));
            const std::vector<float> expect{1024, 1024, 1024, 1024, 1024, 1024, 2048, 2048, 1024, 512};
            QCOMPARE(scales_of(t), expect);
        }
    }

    void handMegatron() {
        // hysteresis 2, interval 3, start 1024, min 256.
        //  s0 O h 2->1 keep | s1 C g1 | s2 O h 0 -> 512 | s3 O h -1 -> 256 | s4 O max(128, 256) = 256
        //  s5 C g1 | s6 C g2 | s7 C g3 -> 512, h = 2 | s8 O h 1, keep 512
        LossScaler s(megatron_like(1024, 3, 256, 2));
        const Trajectory t = run_engine(s, pattern("OCOOOCCCO"));
        const std::vector<float> expect{1024, 1024, 1024, 512, 256, 256, 256, 256, 512};
        QCOMPARE(scales_of(t), expect);
        QCOMPARE(s.scale(), 512.0f);
        const auto ev = s.take_events();
        QCOMPARE(count_kind(ev, "scale_at_min"), 1);  // on arrival at 256, not again at s4
    }

    void handNnabla() {
        // N 2, start 8, at most 2 retries. The counter is tested (> 2) before it is incremented.
        //  s0 C 8 c0->1 | s1 C c2 | s2 C c3 | s3 C: 3 > 2 -> 16, c=1
        //  s4: O at 16 -> 8 retry, C at 8 c0->1 | s5 C c2 | s6 C c3 | s7 C: 3 > 2 -> 16, c=1
        //  s8: O at 16 -> 8 retry 1, O at 8 -> 4 retry 2, O at 4 -> 2: 3 > 2 retries -> skip
        //  s9: C at 2
        LossScaler s(nnabla_like(8, 2, 2));
        const Trajectory t = run_engine(s, pattern("CCCC OC CCC OOO C"));
        const std::vector<float> expect{8, 8, 8, 8, 16, 8, 8, 8, 8, 16, 8, 4, 2};
        QCOMPARE(scales_of(t), expect);
        const std::vector<Act> acts{Act::Apply, Act::Apply, Act::Apply, Act::Apply, Act::Retry,
                                    Act::Apply, Act::Apply, Act::Apply, Act::Apply, Act::Retry,
                                    Act::Retry, Act::Skip,  Act::Apply};
        QCOMPARE(acts_of(t), acts);
        QCOMPARE(s.scale(), 2.0f);
        QCOMPARE(s.applied_steps(), 9);
        QCOMPARE(s.skipped_steps(), 1);
        QCOMPARE(s.overflow_count(), 4);
    }

    // ---- whole trajectories against the transliterated references ----

    void referencePytorch() {
        int growths = 0, backoffs = 0;
        for (uint64_t seed = 1; seed <= 12; ++seed) {
            for (int interval : {3, 4, 5}) {
                const auto flags = random_flags(seed * 100 + interval, 200, 0.12f, 4);
                TorchRef ref{65536.0f, 0, 2.0, 0.5, interval};
                const Trajectory want = ref.run(flags);
                LossScaler s(torch_like(65536.0, interval));
                COMPARE_TRAJ(run_engine(s, flags), want);
                QCOMPARE(s.scale(), ref.current_scale);
                growths += ref.growths;
                backoffs += ref.backoffs;
            }
        }
        QVERIFY(growths > 50);  // the sequences really exercised both directions
        QVERIFY(backoffs > 50);
        // Non-power-of-two factors: products in double, one rounding to float, like the kernel.
        for (uint64_t seed = 20; seed < 26; ++seed) {
            const auto flags = random_flags(seed, 200, 0.1f, 3);
            TorchRef ref{1000.0f, 0, 1.7, 0.3, 4};
            LossScalerConfig c = torch_like(1000.0, 4);
            c.growth_factor = 1.7;
            c.backoff_factor = 0.3;
            LossScaler s(c);
            COMPARE_TRAJ(run_engine(s, flags), ref.run(flags));
        }
    }

    void referencePytorchFp32Limit() {
        // Start near FLT_MAX: PyTorch refuses the growth that would give inf and keeps the scale.
        const auto flags = random_flags(7, 150, 0.03f, 2);
        TorchRef ref{0x1p120f, 0, 2.0, 0.5, 3};
        const Trajectory want = ref.run(flags);
        QVERIFY(ref.blocked > 0);
        LossScaler s(torch_like(0x1p120, 3));
        COMPARE_TRAJ(run_engine(s, flags), want);
        QCOMPARE(count_kind(s.take_events(), "scale_at_max") >= 1, true);
    }

    void referenceDeepspeed() {
        for (bool consecutive : {false, true}) {
            int absorbed = 0, growths = 0, min_hits = 0;
            for (uint64_t seed = 1; seed <= 12; ++seed) {
                for (int window : {3, 5}) {
                    const auto flags = random_flags(seed * 31 + window, 200, 0.15f, 5);
                    // min 2^12 is four halvings below the start, so bursts reach it.
                    DeepSpeedRef ref{65536.0, 2.0, window, 4096.0, 2, consecutive};
                    const Trajectory want = ref.run(flags);
                    LossScaler s(deepspeed_like(65536.0, 2.0, window, 4096.0, 2, consecutive));
                    COMPARE_TRAJ(run_engine(s, flags), want);
                    QCOMPARE(double(s.scale()), ref.cur_scale);
                    absorbed += ref.absorbed;
                    growths += ref.growths;
                    min_hits += ref.at_min_hits;
                }
            }
            QVERIFY(absorbed > 20);
            QVERIFY(growths > 20);
            QVERIFY(min_hits > 0);
        }
        // delayed_shift 3 and a scale factor of 4 as well.
        for (bool consecutive : {false, true}) {
            for (uint64_t seed = 40; seed < 46; ++seed) {
                const auto flags = random_flags(seed, 200, 0.2f, 4);
                DeepSpeedRef ref{1024.0, 4.0, 4, 1.0, 3, consecutive};
                LossScaler s(deepspeed_like(1024.0, 4.0, 4, 1.0, 3, consecutive));
                COMPARE_TRAJ(run_engine(s, flags), ref.run(flags));
            }
        }
    }

    void referenceMegatron() {
        int absorbed = 0, growths = 0;
        for (uint64_t seed = 1; seed <= 12; ++seed) {
            for (int interval : {3, 4}) {
                const auto flags = random_flags(seed * 17 + interval, 200, 0.15f, 4);
                MegatronRef ref{65536.0f, 8192.0f, 2.0f, 0.5f, interval, 2};
                const Trajectory want = ref.run(flags);
                LossScaler s(megatron_like(65536.0, interval, 8192.0, 2));
                COMPARE_TRAJ(run_engine(s, flags), want);
                QCOMPARE(s.scale(), ref.scale);
                absorbed += ref.absorbed;
                growths += ref.growths;
            }
        }
        QVERIFY(absorbed > 20);
        QVERIFY(growths > 20);
    }

    void referenceNnabla() {
        int retries = 0, skips = 0, growths = 0;
        for (uint64_t seed = 1; seed <= 12; ++seed) {
            for (int N : {2, 3, 5}) {
                // Long bursts so that some steps exhaust their retries.
                const auto flags = random_flags(seed * 7 + N, 200, 0.1f, 6);
                NnablaRef ref{65536.0, 2.0, N, 3};
                const Trajectory want = ref.run(flags);
                LossScaler s(nnabla_like(65536.0, N, 3));
                COMPARE_TRAJ(run_engine(s, flags), want);
                QCOMPARE(double(s.scale()), ref.scale);
                retries += ref.retries;
                skips += ref.skips;
                growths += ref.growths;
            }
        }
        QVERIFY(retries > 20);
        QVERIFY(skips > 0);
        QVERIFY(growths > 20);
    }

    // ---- clamps ----

    void minClampNeverAborts() {
        LossScalerConfig c;  // defaults: 2^16 down to 2^-24 is 40 halvings
        c.growth_interval = 5;
        LossScaler s(c);
        std::vector<ScalerEvent> ev;
        for (int step = 0; step < 1000; ++step) {
            StepOutcome o;
            try {
                o = s.on_step_result(step, true, "conv1.weight");
            } catch (...) {
                QFAIL("on_step_result threw at the minimum");
            }
            QCOMPARE(o.action, StepAction::Skip);
            const float expect = step < 40 ? std::ldexp(1.0f, 16 - step - 1) : 0x1p-24f;
            QCOMPARE(o.next_scale, expect);
            QCOMPARE(o.at_min, step >= 39);
            QCOMPARE(o.first_nonfinite_layer, std::string("conv1.weight"));
            QVERIFY(o.reason.find("conv1.weight") != std::string::npos);
            if (step >= 40) QVERIFY(o.reason.find("min_scale") != std::string::npos);
            auto e = s.take_events();
            ev.insert(ev.end(), e.begin(), e.end());
        }
        QCOMPARE(s.scale(), 0x1p-24f);
        QCOMPARE(count_kind(ev, "scale_at_min"), 1);  // said once, on arrival
        QCOMPARE(count_kind(ev, "overflow_skip"), 1000);
        QCOMPARE(count_kind(ev, "backoff"), 40);
        for (auto& e : ev)
            if (e.kind == "scale_at_min") {
                QCOMPARE(e.step, 39);
                QCOMPARE(e.source, std::string("scaler"));
            }
        // Leaving the minimum re-arms the report.
        for (int step = 1000; step < 1005; ++step) s.on_step_result(step, false);
        QCOMPARE(s.scale(), 0x1p-23f);
        s.on_step_result(1005, true);
        QCOMPARE(count_kind(s.take_events(), "scale_at_min"), 1);
    }

    void growthStopsAtMax() {
        LossScalerConfig c;
        c.initial_scale = 0x1p20;
        c.growth_interval = 2;
        LossScaler s(c);  // max 2^24
        std::vector<float> seen;
        for (int step = 0; step < 20; ++step) seen.push_back(s.on_step_result(step, false).scale_used);
        // 2 clean steps per doubling: 2^20 x2, 2^21 x2, 2^22 x2, 2^23 x2, then 2^24 for good.
        for (int step = 0; step < 20; ++step)
            QCOMPARE(seen[step], std::ldexp(1.0f, std::min(20 + step / 2, 24)));
        QVERIFY(s.at_max());
        const auto ev = s.take_events();
        QCOMPARE(count_kind(ev, "growth"), 4);
        QCOMPARE(count_kind(ev, "scale_at_max"), 1);

        // A max that is not a power of two: the growth past it lands on it exactly.
        c.initial_scale = 0x1p21;
        c.max_scale = 3e6;
        LossScaler m(c);
        for (int step = 0; step < 10; ++step) m.on_step_result(step, false);
        QCOMPARE(m.scale(), 3e6f);
        m.on_step_result(10, true);
        QCOMPARE(m.scale(), 1.5e6f);
    }

    void growOnlyIfFinite() {
        LossScalerConfig c;
        c.initial_scale = 0x1p127;
        c.max_scale = FLT_MAX;
        c.growth_interval = 1;
        {
            LossScaler s(c);  // 2^128 is inf in FP32: refused, scale stays
            s.on_step_result(0, false);
            QCOMPARE(s.scale(), 0x1p127f);
            QCOMPARE(count_kind(s.take_events(), "scale_at_max"), 1);
        }
        c.grow_only_if_finite = false;
        {
            LossScaler s(c);  // clamped to max instead
            s.on_step_result(0, false);
            QCOMPARE(s.scale(), FLT_MAX);
        }
    }

    // ---- retry, modes, the LR clock ----

    void retryBounded() {
        LossScalerConfig c;
        c.initial_scale = 1024;
        c.on_overflow = OverflowAction::Retry;  // max_retries 4
        LossScaler s(c);
        std::vector<StepOutcome> outs;
        for (int k = 0; k < 5; ++k) outs.push_back(s.on_step_result(0, true));
        for (int k = 0; k < 4; ++k) {
            QCOMPARE(outs[k].action, StepAction::Retry);
            QCOMPARE(outs[k].retry, k + 1);
            QCOMPARE(outs[k].scale_used, std::ldexp(1024.0f, -k));
        }
        QCOMPARE(outs[4].action, StepAction::Skip);  // after 4 retries at lower scales
        QCOMPARE(outs[4].scale_used, 64.0f);
        QCOMPARE(s.scale(), 32.0f);
        QVERIFY(outs[4].reason.find("after 4 retries") != std::string::npos);
        QCOMPARE(s.skipped_steps(), 1);
        QCOMPARE(s.optimizer_iteration(), 1);  // retries never advance it
        const auto ev = s.take_events();
        QCOMPARE(count_kind(ev, "retry"), 4);
        QCOMPARE(count_kind(ev, "overflow_skip"), 1);
        // The next step starts with a fresh retry budget.
        QCOMPARE(s.on_step_result(1, true).action, StepAction::Retry);

        // max_retries 0: plain skip.
        c.max_retries = 0;
        LossScaler z(c);
        QCOMPARE(z.on_step_result(0, true).action, StepAction::Skip);

        // An overflow tolerated by hysteresis keeps the scale: retrying would overflow again.
        c.max_retries = 4;
        c.hysteresis = 2;
        LossScaler h(c);
        const auto o = h.on_step_result(0, true);
        QCOMPARE(o.action, StepAction::Skip);
        QVERIFY(o.hysteresis_absorbed);
        QCOMPARE(h.scale(), 1024.0f);
        QCOMPARE(h.on_step_result(1, true).action, StepAction::Retry);

        // At the minimum there is no lower scale to retry at.
        c.hysteresis = 1;
        c.min_scale = 1024;
        LossScaler m(c);
        QCOMPARE(m.on_step_result(0, true).action, StepAction::Skip);
    }

    void countSkippedSteps() {
        const auto flags = pattern("CCOCOOCCCO CCCC OO C");
        int applied = 0, skipped = 0;
        for (bool f : flags) (f ? skipped : applied)++;
        for (bool count : {true, false}) {
            LossScalerConfig c;
            c.count_skipped_steps = count;
            c.growth_interval = 3;
            LossScaler s(c);
            int64_t step = 0;
            int a = 0, k = 0;
            for (bool f : flags) {
                const auto o = s.on_step_result(step++, f);
                (f ? k : a)++;
                QCOMPARE(o.optimizer_iteration, count ? a + k : a);
            }
            QCOMPARE(s.optimizer_iteration(), int64_t(count ? applied + skipped : applied));
            QCOMPARE(s.applied_steps(), int64_t(applied));
            QCOMPARE(s.skipped_steps(), int64_t(skipped));
        }
        // Retries never count, whichever setting.
        LossScalerConfig r;
        r.on_overflow = OverflowAction::Retry;
        LossScaler s(r);
        s.on_step_result(0, true);  // retry
        s.on_step_result(0, true);  // retry
        QCOMPARE(s.optimizer_iteration(), 0);
        s.on_step_result(0, false);  // applied
        QCOMPARE(s.optimizer_iteration(), 1);
    }

    void modeNoneAndStatic() {
        LossScalerConfig c;
        c.mode = parse_scaler_mode("none");
        c.growth_interval = 1;
        LossScaler n(c);
        QCOMPARE(n.scale(), 1.0f);
        for (int i = 0; i < 5; ++i) QCOMPARE(n.on_step_result(i, false).action, StepAction::Apply);
        QCOMPARE(n.scale(), 1.0f);  // never grows
        const auto o = n.on_step_result(5, true, "head");
        QCOMPARE(o.action, StepAction::Skip);  // non-finite still skipped: it would destroy the weights
        QVERIFY(o.reason.find("loss scaling off") != std::string::npos);
        QCOMPARE(n.scale(), 1.0f);
        QCOMPARE(count_kind(n.take_events(), "overflow_skip"), 1);
        n.apply_user_scale(6, 64);
        QCOMPARE(n.scale(), 1.0f);  // mode none: scale stays 1, and the event says so
        const auto ev = n.take_events();
        QCOMPARE(ev.size(), size_t(1));
        QCOMPARE(ev[0].kind, std::string("user_set_scale"));
        QVERIFY(ev[0].detail.at("note").get<std::string>().find("mode none") != std::string::npos);

        c.mode = parse_scaler_mode("Static");
        c.initial_scale = 128;
        c.on_overflow = OverflowAction::Retry;  // meaningless at a fixed scale: skip
        LossScaler st(c);
        for (int i = 0; i < 10; ++i) {
            const bool f = i % 3 == 0;
            const auto r = st.on_step_result(i, f);
            QCOMPARE(r.scale_used, 128.0f);
            QCOMPARE(r.action, f ? StepAction::Skip : StepAction::Apply);
        }
        QCOMPARE(st.scale(), 128.0f);
        const auto sev = st.take_events();
        QCOMPARE(count_kind(sev, "growth"), 0);
        QCOMPARE(count_kind(sev, "backoff"), 0);
        QCOMPARE(count_kind(sev, "overflow_skip"), 4);
        QCOMPARE(parse_scaler_mode("dynamic"), ScalerMode::Dynamic);
        EXPECT_CONFIG_ERROR(parse_scaler_mode("adaptive"), "mode", "adaptive");
    }

    // ---- live changes ----

    void liveConfigChange() {
        LossScalerConfig c;
        c.initial_scale = 1024;
        c.growth_interval = 100;
        LossScaler s(c);
        for (int step = 0; step < 6; ++step) s.on_step_result(step, false);
        s.take_events();

        LossScalerConfig next = c;
        next.growth_interval = 2;
        next.hysteresis = 3;
        s.apply_config(6, next);
        QCOMPARE(s.config(), next);
        const auto ev = s.take_events();
        QCOMPARE(ev.size(), size_t(1));
        QCOMPARE(ev[0].kind, std::string("config_changed"));
        QCOMPARE(ev[0].source, std::string("user"));
        QCOMPARE(ev[0].step, 6);
        QCOMPARE(ev[0].detail.at("changes").at("growth_interval").at("from").get<int>(), 100);
        QCOMPARE(ev[0].detail.at("changes").at("growth_interval").at("to").get<int>(), 2);
        QVERIFY(ev[0].detail.at("changes").contains("hysteresis"));
        QVERIFY(!ev[0].detail.at("changes").contains("min_scale"));
        // The same configuration again changes nothing and says nothing.
        s.apply_config(6, next);
        QVERIFY(s.take_events().empty());
        // The live scale was kept (neither mode nor initial scale changed) and the tracker, at 6
        // clean steps, is past the new interval: the next clean step grows.
        QCOMPARE(s.scale(), 1024.0f);
        QCOMPARE(s.hysteresis_tracker(), 3);
        s.on_step_result(6, false);
        QCOMPARE(s.scale(), 2048.0f);
        // hysteresis 3: two overflows tolerated, the third backs off.
        s.on_step_result(7, true);
        s.on_step_result(8, true);
        QCOMPARE(s.scale(), 2048.0f);
        s.on_step_result(9, true);
        QCOMPARE(s.scale(), 1024.0f);
        const auto ev1 = s.take_events();
        std::vector<std::pair<int64_t, std::string>> got;
        for (auto& e : ev1) got.emplace_back(e.step, e.kind);
        const std::vector<std::pair<int64_t, std::string>> expect{
            {6, "growth"},        {7, "hysteresis_consumed"},
            {7, "overflow_skip"}, {8, "hysteresis_consumed"},
            {8, "overflow_skip"}, {9, "backoff"},
            {9, "overflow_skip"}};
        QCOMPARE(got, expect);
        for (auto& e : ev1) QCOMPARE(e.source, std::string("scaler"));

        // A user scale, clamped into range, stamped with its step.
        s.apply_user_scale(10, 1e30);
        QCOMPARE(s.scale(), 0x1p24f);
        auto ev2 = s.take_events();
        QCOMPARE(count_kind(ev2, "user_set_scale"), 1);
        QCOMPARE(ev2[0].step, 10);
        QCOMPARE(ev2[0].source, std::string("user"));

        // Switching to static mode restarts at its scale.
        LossScalerConfig st = s.config();
        st.mode = ScalerMode::Static;
        st.initial_scale = 512;
        s.apply_config(11, st);
        QCOMPARE(s.scale(), 512.0f);
        QCOMPARE(s.on_step_result(11, true).next_scale, 512.0f);
    }

    // ---- state ----

    void saveRestoreContinuesIdentically() {
        for (bool retry : {false, true}) {
            LossScalerConfig c = retry ? nnabla_like(4096, 3, 2) : megatron_like(4096, 4, 64, 2);
            c.count_skipped_steps = false;
            const auto flags = random_flags(retry ? 11 : 12, 400, 0.15f, 4);
            // Split after a clean attempt, so the first half does not end in the middle of a retry.
            size_t split = 150;
            while (flags[split - 1]) ++split;
            const std::vector<bool> first(flags.begin(), flags.begin() + split),
                second(flags.begin() + split, flags.end());

            LossScaler a(c);
            run_engine(a, first, 0);
            // Through text, as it would go through the run database.
            const std::string saved = a.save_state().dump();
            LossScaler b;  // default configuration; restore replaces it
            b.restore_state(nlohmann::json::parse(saved));
            QCOMPARE(b.config(), a.config());
            QCOMPARE(b.scale(), a.scale());

            const int64_t next_step = 1000;
            const Trajectory ta = run_engine(a, second, next_step);
            const Trajectory tb = run_engine(b, second, next_step);
            COMPARE_TRAJ(tb, ta);
            QCOMPARE(b.save_state(), a.save_state());
            QCOMPARE(b.optimizer_iteration(), a.optimizer_iteration());

            // And the uninterrupted run agrees with the reference too.
            LossScaler whole(c);
            const Trajectory tw = run_engine(whole, flags, 0);
            LossScaler fresh(c);
            Trajectory joined = run_engine(fresh, first, 0);
            joined.insert(joined.end(), tb.begin(), tb.end());
            COMPARE_TRAJ(joined, tw);
        }
        // A restore in the middle of a retry keeps the retry budget.
        LossScaler r(nnabla_like(1024, 3, 2));
        r.on_step_result(5, true);  // retry 1
        LossScaler r2;
        r2.restore_state(r.save_state());
        QCOMPARE(r2.on_step_result(5, true).action, StepAction::Retry);  // retry 2
        QCOMPARE(r2.on_step_result(5, true).action, StepAction::Skip);   // budget spent
    }

    void restoreRejectsBadState() {
        LossScaler a;
        const nlohmann::json good = a.save_state();
        LossScaler b;
        auto broken = good;
        broken.erase("growth_tracker");
        EXPECT_CONFIG_ERROR(b.restore_state(broken), "growth_tracker", "missing");
        broken = good;
        broken["scale"] = "big";
        EXPECT_CONFIG_ERROR(b.restore_state(broken), "scale");
        broken = good;
        broken["version"] = 99;
        EXPECT_CONFIG_ERROR(b.restore_state(broken), "version 99");
        broken = good;
        broken["config"]["growth_factor"] = 0.5;
        EXPECT_CONFIG_ERROR(b.restore_state(broken), "config", "growth_factor", "0.5");
        broken = good;
        broken["hysteresis_tracker"] = 7;  // more than the configured hysteresis 1
        EXPECT_CONFIG_ERROR(b.restore_state(broken), "hysteresis_tracker", "7");
        EXPECT_CONFIG_ERROR(b.restore_state(nlohmann::json::array()), "object");
        // b unchanged by the failed restores
        QCOMPARE(b.save_state(), good);
    }

    // ---- configuration ----

    void configJson() {
        for (const char* p : {"default", "pytorch", "deepspeed", "megatron", "nnabla", "static", "none"}) {
            const LossScalerConfig c = loss_scaler_preset(p);
            c.validate();
            const nlohmann::json j = c;
            QCOMPARE(nlohmann::json::parse(j.dump()).get<LossScalerConfig>(), c);
        }
        const auto nn = loss_scaler_preset("nnabla");
        QCOMPARE(nn.on_overflow, OverflowAction::Retry);
        QCOMPARE(nn.max_retries, 100);
        QCOMPARE(nn.initial_scale, 8.0);
        QCOMPARE(loss_scaler_preset("megatron").initial_scale, 0x1p32);
        EXPECT_CONFIG_ERROR(loss_scaler_preset("apex2"), "preset", "apex2");

        // Partial objects keep the defaults; the names on disk are the documented ones.
        const auto c = loss_scaler_config_from_json(nlohmann::json::parse(
            R"({"mode":"dynamic","hysteresis":2,"refill":"every_clean_step","on_overflow":"retry",
                "growth_timing":"after_interval","count_skipped_steps":false})"));
        QCOMPARE(c.hysteresis, 2);
        QCOMPARE(c.refill, HysteresisRefill::EveryCleanStep);
        QCOMPARE(c.on_overflow, OverflowAction::Retry);
        QCOMPARE(c.growth_timing, GrowthTiming::AfterInterval);
        QCOMPARE(c.count_skipped_steps, false);
        QCOMPARE(c.growth_interval, int64_t(2000));
        QCOMPARE(c.initial_scale, 65536.0);
        QCOMPARE(c.min_scale, 0x1p-24);
        QCOMPARE(c.max_scale, 0x1p24);
        QCOMPARE(c.max_retries, 4);
        QCOMPARE(c.grow_only_if_finite, true);

        using nlohmann::json;
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"growth_intervall", 5}}), "unknown setting",
                            "growth_intervall");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"growth_interval", "5"}}), "growth_interval",
                            "integer");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"growth_interval", 2.5}}), "growth_interval");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"initial_scale", true}}), "initial_scale",
                            "number");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"count_skipped_steps", 1}}),
                            "count_skipped_steps");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"mode", "sometimes"}}), "mode", "sometimes");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"refill", "never"}}), "refill", "never");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"on_overflow", "abort"}}), "on_overflow",
                            "abort");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"growth_timing", "x"}}), "growth_timing");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json{{"hysteresis", 0}}), "hysteresis", "0");
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(json::array()), "JSON object");
    }

    // The field table is the configuration: every member is in it once, JSON is written and read
    // through it, and an enumeration's names come from one table each.
    void fieldTableCoversTheConfiguration() {
        const nlohmann::json defaults = loss_scaler_config_to_json(LossScalerConfig{});
        QCOMPARE(defaults.size(), loss_scaler_fields().size());
        LossScalerConfig changed = loss_scaler_preset("nnabla");
        changed.refill = HysteresisRefill::EveryCleanStep;
        changed.count_skipped_steps = false;
        changed.mode = ScalerMode::Static;
        for (const auto& f : loss_scaler_fields()) {
            QVERIFY2(defaults.contains(f.name), f.name);
            QCOMPARE(find_setting_field(loss_scaler_fields(), f.name), &f);  // each name once
            // set(get()) copies a field from one configuration to another.
            LossScalerConfig c;
            f.set(c, f.get(changed), f.name);
            QCOMPARE(f.get(c), f.get(changed));
            if (f.kind == SettingKind::Choice) QVERIFY2(!f.choices.empty(), f.name);
        }
        QCOMPARE(find_setting_field(loss_scaler_fields(), "growth_intervall"), nullptr);
        for (const auto& c : setting_choices<GrowthTiming>())
            QCOMPARE(setting_enum_name(parse_setting_enum<GrowthTiming>(c.name)), c.name);
        QCOMPARE(parse_setting_enum<HysteresisRefill>("Every-Clean-Step"), HysteresisRefill::EveryCleanStep);
        QCOMPARE(parse_scaler_mode("off"), ScalerMode::None);
        QCOMPARE(setting_enum_name(ScalerMode::None), "none");  // an alias is read, never written
        EXPECT_CONFIG_ERROR(parse_setting_enum<OverflowAction>("abort"), "on_overflow", "skip or retry");
        try {
            (void)parse_scaler_mode("sometimes");
            QFAIL("an unknown name was accepted");
        } catch (const ScalerConfigError& e) {
            QCOMPARE(e.issue().field, std::string("mode"));
            QVERIFY2(e.issue().message.find("none, static or dynamic") != std::string::npos, e.what());
        }
        // A field read from JSON is named by its path.
        EXPECT_CONFIG_ERROR(loss_scaler_config_from_json(nlohmann::json{{"hysteresis", int64_t{10000000000}}},
                                                         "training.scaler"),
                            "'training.scaler.hysteresis'", "32-bit");
    }

    void invalidSettings() {
        struct Case {
            const char* setting;
            const char* value;
            std::function<void(LossScalerConfig&)> set;
        };
        const double inf = std::numeric_limits<double>::infinity();
        const std::vector<Case> cases{
            {"growth_factor", "1", [](auto& c) { c.growth_factor = 1.0; }},
            {"growth_factor", "0.5", [](auto& c) { c.growth_factor = 0.5; }},
            {"growth_factor", "inf", [inf](auto& c) { c.growth_factor = inf; }},
            {"growth_factor", "nan", [](auto& c) { c.growth_factor = std::nan(""); }},
            {"backoff_factor", "0", [](auto& c) { c.backoff_factor = 0.0; }},
            {"backoff_factor", "-0.5", [](auto& c) { c.backoff_factor = -0.5; }},
            {"backoff_factor", "1", [](auto& c) { c.backoff_factor = 1.0; }},
            {"backoff_factor", "2", [](auto& c) { c.backoff_factor = 2.0; }},
            {"growth_interval", "0", [](auto& c) { c.growth_interval = 0; }},
            {"growth_interval", "-3", [](auto& c) { c.growth_interval = -3; }},
            {"hysteresis", "0", [](auto& c) { c.hysteresis = 0; }},
            {"hysteresis", "-1", [](auto& c) { c.hysteresis = -1; }},
            {"min_scale", "1024",
             [](auto& c) {
                 c.min_scale = 1024;
                 c.max_scale = 512;
                 c.initial_scale = 600;
             }},
            {"initial_scale", "1e+30", [](auto& c) { c.initial_scale = 1e30; }},
            {"initial_scale", "0.001",
             [](auto& c) {
                 c.initial_scale = 0.001;
                 c.min_scale = 1;
             }},
            {"initial_scale", "inf", [inf](auto& c) { c.initial_scale = inf; }},
            {"initial_scale", "nan", [](auto& c) { c.initial_scale = std::nan(""); }},
            {"initial_scale", "0", [](auto& c) { c.initial_scale = 0; }},
            {"min_scale", "-1", [](auto& c) { c.min_scale = -1; }},
            {"min_scale", "0", [](auto& c) { c.min_scale = 0; }},
            {"min_scale", "1e-50", [](auto& c) { c.min_scale = 1e-50; }},
            {"max_scale", "inf", [inf](auto& c) { c.max_scale = inf; }},
            {"max_scale", "1e+300", [](auto& c) { c.max_scale = 1e300; }},
            {"max_scale", "-5", [](auto& c) { c.max_scale = -5; }},
            {"max_retries", "-1", [](auto& c) { c.max_retries = -1; }},
        };
        for (const auto& k : cases) {
            LossScalerConfig c;
            k.set(c);
            // The field comes as data, and the first issue is the one validate() throws (which a
            // live change carries too: test_live_changes).
            const auto issues = c.issues();
            QVERIFY2(!issues.empty(), k.setting);
            QCOMPARE(issues.front().field, std::string(k.setting));
            QVERIFY2(QString::fromStdString(issues.front().message).contains(k.value),
                     issues.front().message.c_str());
            try {
                c.validate();
                QFAIL("validate accepted an invalid configuration");
            } catch (const ScalerConfigError& e) {
                QCOMPARE(e.issue(), issues.front());
                QCOMPARE(std::string(e.what()), "loss scaler: " + issues.front().message);
            }
            EXPECT_CONFIG_ERROR(c.validate(), k.setting, k.value);
            EXPECT_CONFIG_ERROR(LossScaler{c}, k.setting);
        }
        // Every problem is listed, each under its own field, in the order of the field table.
        LossScalerConfig several;
        several.growth_factor = 0.5;
        several.hysteresis = 0;
        several.max_retries = -2;
        std::vector<std::string> fields;
        for (const auto& i : several.issues()) fields.push_back(i.field);
        QCOMPARE(fields, (std::vector<std::string>{"growth_factor", "hysteresis", "max_retries"}));
        QVERIFY(LossScalerConfig{}.issues().empty());

        // And the boundaries that are fine.
        LossScalerConfig ok;
        ok.growth_interval = 1;
        ok.max_retries = 0;
        ok.min_scale = ok.max_scale = ok.initial_scale = 1.0;
        ok.validate();
        LossScaler pinned(ok);  // min == max: never moves, never throws
        for (int i = 0; i < 10; ++i) pinned.on_step_result(i, i % 2 == 0);
        QCOMPARE(pinned.scale(), 1.0f);
    }
};

QTEST_APPLESS_MAIN(TestLossScaler)
#include "test_loss_scaler.moc"
