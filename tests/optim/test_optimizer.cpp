// Tests of the optimizers: SGD/Adam/AdamW steps against hand arithmetic and double-precision
// references written out here (never the implementation's own output), the weight_decay flag,
// the master/copy formats of the fused step (fp16-pure loses small updates, FP32 master keeps
// them), thread-count independence, state reset/checkpoint, and configuration errors.
#include <QtTest/QtTest>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/rng.h"
#include "core/numeric/format.h"
#include "core/optim/optimizer.h"
#include "core/optim/optimizer_registry.h"
#include "tests/common/test_support.h"

using mpwb::test::error_text;

using namespace mpwb;

namespace {

Parameter make_param(std::vector<float> w, std::vector<float> g, bool decay = true) {
    Parameter p;
    p.name = "0.weight";
    p.value = Tensor({static_cast<int64_t>(w.size())});
    p.grad = Tensor({static_cast<int64_t>(g.size())});
    for (size_t i = 0; i < w.size(); ++i) p.value[static_cast<int64_t>(i)] = w[i];
    for (size_t i = 0; i < g.size(); ++i) p.grad[static_cast<int64_t>(i)] = g[i];
    p.weight_decay = decay;
    return p;
}

void set_grad(Parameter& p, const std::vector<float>& g) {
    for (size_t i = 0; i < g.size(); ++i) p.grad[static_cast<int64_t>(i)] = g[i];
}

uint32_t bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}

// |actual - expected| within rel * |expected| (plus a tiny absolute floor for zeros).
bool close(double actual, double expected, double rel = 2e-6) {
    return std::fabs(actual - expected) <= rel * std::fabs(expected) + 1e-12;
}

// Adam/AdamW reference in double, written from the paper's formulas and PyTorch's docs.
struct AdamRef {
    double lr, b1, b2, eps, wd;
    bool decoupled, decay;
    std::vector<double> w, m, v;
    int step = 0;
    void update(const std::vector<double>& g_in) {
        ++step;
        for (size_t i = 0; i < w.size(); ++i) {
            double g = g_in[i];
            if (decay && decoupled) w[i] *= 1.0 - lr * wd;
            if (decay && !decoupled) g += wd * w[i];
            m[i] = b1 * m[i] + (1 - b1) * g;
            v[i] = b2 * v[i] + (1 - b2) * g * g;
            const double mhat = m[i] / (1 - std::pow(b1, step));
            const double vhat = v[i] / (1 - std::pow(b2, step));
            w[i] -= lr * mhat / (std::sqrt(vhat) + eps);
        }
    }
};

}  // namespace

class TestOptimizer : public QObject {
    Q_OBJECT

private slots:
    void cleanup() { mpwb::set_thread_count(0); }

    void sgdPlain() {
        OptimizerConfig c;
        c.kind = "sgd";
        c.momentum = 0.0f;
        c.weight_decay = 0.1f;
        auto opt = make_optimizer(c);
        Parameter p = make_param({1.0f, -2.0f, 0.5f}, {0.5f, 0.25f, -1.0f});
        Parameter* ps[] = {&p};
        opt->step(ps, 0.5f);
        // w - lr * (g + wd * w)
        QVERIFY(close(p.value[0], 1.0 - 0.5 * (0.5 + 0.1 * 1.0)));     // 0.7
        QVERIFY(close(p.value[1], -2.0 - 0.5 * (0.25 + 0.1 * -2.0)));  // -2.025
        QVERIFY(close(p.value[2], 0.5 - 0.5 * (-1.0 + 0.1 * 0.5)));    // 0.975
        QVERIFY(p.compute.empty());
        QCOMPARE(opt->step_count(0), int64_t{1});
    }

    void sgdMomentumNesterovWeightDecay() {
        OptimizerConfig c;
        c.kind = "sgd";
        c.momentum = 0.9f;
        c.nesterov = true;
        c.weight_decay = 0.01f;
        auto opt = make_optimizer(c);
        Parameter p = make_param({1.0f, -2.0f, 0.5f}, {0.5f, 0.5f, 0.5f});
        Parameter* ps[] = {&p};
        // Element 0 by hand, constant gradient 0.5, lr 0.1:
        // step 1: d = 0.5 + 0.01*1 = 0.51; buf = 0.51; d' = 0.51 + 0.9*0.51 = 0.969
        //         w = 1 - 0.1*0.969 = 0.9031
        // step 2: d = 0.5 + 0.01*0.9031 = 0.509031; buf = 0.9*0.51 + 0.509031 = 0.968031
        //         d' = 0.509031 + 0.9*0.968031 = 1.3802589; w = 0.9031 - 0.13802589 = 0.76507411
        // step 3: d = 0.5 + 0.01*0.76507411 = 0.5076507411
        //         buf = 0.9*0.968031 + 0.5076507411 = 1.3788786411
        //         d' = 0.5076507411 + 0.9*1.3788786411 = 1.74864151809
        //         w = 0.76507411 - 0.174864151809 = 0.590209958191
        const double expected0[] = {0.9031, 0.76507411, 0.590209958191};
        // All elements: the same recurrence in double.
        std::vector<double> w{1.0, -2.0, 0.5}, buf(3);
        for (int t = 0; t < 3; ++t) {
            opt->step(ps, 0.1f);
            for (int i = 0; i < 3; ++i) {
                double d = 0.5 + 0.01 * w[static_cast<size_t>(i)];
                buf[static_cast<size_t>(i)] = t == 0 ? d : 0.9 * buf[static_cast<size_t>(i)] + d;
                d = d + 0.9 * buf[static_cast<size_t>(i)];
                w[static_cast<size_t>(i)] -= 0.1 * d;
                QVERIFY2(close(p.value[i], w[static_cast<size_t>(i)]),
                         qPrintable(QString("step %1 element %2: %3 vs %4")
                                        .arg(t + 1)
                                        .arg(i)
                                        .arg(p.value[i])
                                        .arg(w[static_cast<size_t>(i)])));
            }
            QVERIFY(close(p.value[0], expected0[t]));
        }
    }

    void sgdMomentumNoNesterov() {
        OptimizerConfig c;
        c.momentum = 0.5f;
        auto opt = make_optimizer(c);
        Parameter p = make_param({1.0f, 2.0f, 3.0f}, {1.0f, -1.0f, 2.0f});
        Parameter* ps[] = {&p};
        opt->step(ps, 0.1f);
        // buf = g; w -= 0.1 * g
        QVERIFY(close(p.value[0], 0.9));
        QVERIFY(close(p.value[1], 2.1));
        QVERIFY(close(p.value[2], 2.8));
        set_grad(p, {2.0f, 0.0f, -2.0f});
        opt->step(ps, 0.1f);
        // buf = 0.5*buf + g: {2.5, -0.5, -1}; w -= 0.1 * buf
        QVERIFY(close(p.value[0], 0.9 - 0.25));
        QVERIFY(close(p.value[1], 2.1 + 0.05));
        QVERIFY(close(p.value[2], 2.8 + 0.1));
    }

    void weightDecayFlagRespected() {
        for (const char* kind : {"sgd", "adam", "adamw"}) {
            OptimizerConfig with, without;
            with.kind = without.kind = kind;
            with.weight_decay = 0.5f;
            auto a = make_optimizer(with);
            auto b = make_optimizer(without);
            Parameter pa = make_param({1.0f, -3.0f, 2.0f}, {0.1f, 0.2f, -0.3f}, false);
            Parameter pb = make_param({1.0f, -3.0f, 2.0f}, {0.1f, 0.2f, -0.3f}, true);
            Parameter* psa[] = {&pa};
            Parameter* psb[] = {&pb};
            for (int t = 0; t < 3; ++t) {
                a->step(psa, 0.01f);
                b->step(psb, 0.01f);
            }
            // weight_decay = false: exactly the update with no decay at all.
            for (int i = 0; i < 3; ++i) QCOMPARE(bits(pa.value[i]), bits(pb.value[i]));
            // And the decay does change a decayed parameter.
            Parameter pc = make_param({1.0f, -3.0f, 2.0f}, {0.1f, 0.2f, -0.3f}, true);
            Parameter* psc[] = {&pc};
            auto c = make_optimizer(with);
            for (int t = 0; t < 3; ++t) c->step(psc, 0.01f);
            QVERIFY2(pc.value[1] != pb.value[1], kind);
        }
    }

    void adamThreeSteps() {
        OptimizerConfig c;
        c.kind = "adam";
        c.beta1 = 0.9f;
        c.beta2 = 0.99f;
        c.eps = 1e-3f;
        c.weight_decay = 0.1f;
        auto opt = make_optimizer(c);
        Parameter p = make_param({1.0f, -2.0f, 0.5f}, {0.5f, -0.25f, 1e-3f});
        Parameter* ps[] = {&p};
        AdamRef ref{0.01, 0.9, 0.99, 1e-3, 0.1, false, true, {1.0, -2.0, 0.5}, {0, 0, 0}, {0, 0, 0}};
        const std::vector<std::vector<float>> grads{
            {0.5f, -0.25f, 1e-3f}, {-0.5f, 0.125f, 2e-3f}, {1.0f, 0.0f, -4.0f}};
        for (const auto& g : grads) {
            set_grad(p, g);
            opt->step(ps, 0.01f);
            ref.update({g[0], g[1], g[2]});
            for (int i = 0; i < 3; ++i)
                QVERIFY2(close(p.value[i], ref.w[static_cast<size_t>(i)], 1e-6),
                         qPrintable(QString("adam step %1 element %2: %3 vs %4")
                                        .arg(ref.step)
                                        .arg(i)
                                        .arg(p.value[i], 0, 'g', 9)
                                        .arg(ref.w[static_cast<size_t>(i)], 0, 'g', 9)));
        }
        QCOMPARE(opt->step_count(0), int64_t{3});
    }

    void adamFirstStepIsSignStep() {
        // Step 1: m_hat = g, v_hat = g^2, so w -= lr * g / (|g| + eps) ~ lr * sign(g).
        OptimizerConfig c;
        c.kind = "adam";
        auto opt = make_optimizer(c);
        Parameter p = make_param({1.0f, 1.0f, 1.0f}, {1000.0f, -0.001f, 0.0f});
        Parameter* ps[] = {&p};
        opt->step(ps, 0.125f);
        QVERIFY(close(p.value[0], 1.0 - 0.125 * 1000.0 / (1000.0 + 1e-8), 1e-6));
        QVERIFY(close(p.value[1], 1.0 + 0.125 * 0.001 / (0.001 + 1e-8), 1e-6));
        EXPECT_EXACT(p.value[2], 1.0f);  // zero gradient: m = 0, no move
    }

    void adamwThreeSteps() {
        OptimizerConfig c;
        c.kind = "adamw";
        c.weight_decay = 0.1f;
        c.beta1 = 0.8f;
        c.beta2 = 0.999f;
        c.eps = 1e-6f;
        auto opt = make_optimizer(c);
        Parameter p = make_param({1.0f, -2.0f, 0.5f}, {0, 0, 0});
        Parameter* ps[] = {&p};
        AdamRef ref{0.05, 0.8, 0.999, 1e-6, 0.1, true, true, {1.0, -2.0, 0.5}, {0, 0, 0}, {0, 0, 0}};
        const std::vector<std::vector<float>> grads{
            {0.3f, -0.7f, 0.0f}, {0.1f, 0.2f, 0.0f}, {-0.4f, 0.05f, 0.0f}};
        for (const auto& g : grads) {
            set_grad(p, g);
            opt->step(ps, 0.05f);
            ref.update({g[0], g[1], g[2]});
            for (int i = 0; i < 3; ++i)
                QVERIFY2(close(p.value[i], ref.w[static_cast<size_t>(i)], 1e-6),
                         qPrintable(QString("adamw step %1 element %2: %3 vs %4")
                                        .arg(ref.step)
                                        .arg(i)
                                        .arg(p.value[i], 0, 'g', 9)
                                        .arg(ref.w[static_cast<size_t>(i)], 0, 'g', 9)));
        }
        // Element 2 has a zero gradient: only the decoupled decay moves it, 0.5 * (1 - 0.005)^3.
        QVERIFY(close(p.value[2], 0.5 * std::pow(1.0 - 0.05 * 0.1, 3)));
    }

    // One AdamW step against its closed form. After one step the bias-corrected moments are g and
    // g^2, so torch.optim.AdamW moves w to w (1 - lr wd) - lr g / (|g| + eps); a parameter without
    // weight decay is not shrunk, and a zero gradient leaves only the shrink.
    void adamwOneStepClosedForm() {
        const OptimizerConfig c{
            .kind = "adamw", .weight_decay = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-6f};
        auto opt = make_optimizer(c);
        Parameter w = make_param({2.0f, -1.0f, 0.5f}, {0.25f, -4.0f, 0.0f});
        Parameter b = make_param({2.0f}, {0.25f}, false);
        Parameter* ps[] = {&w, &b};
        const double lr = 0.01, shrink = 1.0 - lr * 0.1;
        opt->step(ps, float(lr));
        const double expected[] = {2.0 * shrink - lr * 0.25 / (0.25 + 1e-6),
                                   -1.0 * shrink + lr * 4.0 / (4.0 + 1e-6), 0.5 * shrink};
        for (int i = 0; i < 3; ++i)
            QVERIFY2(close(w.value[i], expected[i], 1e-6),
                     qPrintable(
                         QString("element %1: %2 vs %3").arg(i).arg(w.value[i], 0, 'g', 9).arg(expected[i])));
        QVERIFY(close(b.value[0], 2.0 - lr * 0.25 / (0.25 + 1e-6), 1e-6));
    }

    // Each optimizer is one registry entry: the CPU engine's optimizer, the CUDA rule, the
    // settings it reads and the torch.optim constructor of the same rule.
    void registryDefinesEachOptimizerOnce() {
        QCOMPARE(optimizer_names(), (std::vector<std::string>{"sgd", "adam", "adamw"}));
        for (const OptimizerDefinition& o : optimizer_registry()) {
            QCOMPARE(find_optimizer(o.name), &o);
            QVERIFY2(!o.help.empty() && o.device, o.name.c_str());
            OptimizerConfig c;
            c.kind = o.name;
            QCOMPARE(make_optimizer(c)->config().kind, o.name);
        }
        QVERIFY(find_optimizer("adagrad") == nullptr);
        VERIFY_MSG(error_text<ConfigError>([] { (void)optimizer_named("adagrad"); }), "adagrad",
                   "sgd, adam, adamw");
        QCOMPARE(optimizers_reading("momentum"), std::string("sgd"));
        QCOMPARE(optimizers_reading("beta2"), std::string("adam, adamw"));
        QCOMPARE(optimizers_reading("weight_decay"), std::string("sgd, adam, adamw"));
        // Nesterov without momentum is an error only for a kind that reads it.
        QVERIFY(!error_text<ConfigError>([] {
                     OptimizerConfig{.kind = "adam", .momentum = 0, .nesterov = true}.validate();
                 }).contains("nesterov"));

        const OptimizerConfig sgd{.kind = "sgd", .momentum = 0.9f, .nesterov = true, .weight_decay = 0.5f};
        QCOMPARE(optimizer_named("sgd").pytorch(sgd, 0.1f, "groups"),
                 std::string("torch.optim.SGD(groups, lr=0.1, momentum=0.9, nesterov=True)"));
        const OptimizerConfig adam{.kind = "adam"};
        QCOMPARE(optimizer_named("adam").pytorch(adam, 1e-3f, "groups"),
                 std::string("torch.optim.Adam(groups, lr=0.001, betas=(0.9, 0.999), eps=1e-08)"));
        const OptimizerConfig adamw{.kind = "adamw", .weight_decay = 0.1f, .beta2 = 0.95f};
        QCOMPARE(optimizer_named("adamw").pytorch(adamw, 6e-4f, "groups"),
                 std::string("torch.optim.AdamW(groups, lr=6e-04, betas=(0.9, 0.95), eps=1e-08)"));
    }

    void fp16MasterLosesSmallUpdate() {
        OptimizerConfig c;
        c.momentum = 0.0f;
        auto opt = make_optimizer(c);
        // FP16 spacing is 2 in [2048, 4096) and 1 in [1024, 2048).
        Parameter p16 = make_param({2048.0f, 2048.0f, 2048.0f}, {0.5f, 1.5f, 0.25f});
        Parameter p32 = make_param({2048.0f, 2048.0f, 2048.0f}, {0.5f, 1.5f, 0.25f});
        Parameter* ps16[] = {&p16};
        Parameter* ps32[] = {&p32};
        opt->step(ps16, 1.0f, StepFormats{Format::FP16, Format::FP16});
        auto opt32 = make_optimizer(c);
        opt32->step(ps32, 1.0f, StepFormats{Format::FP32, Format::FP16});
        // 2047.5 ties to the even 2048: the update vanishes. 2046.5 ties to the even 2046.
        EXPECT_EXACT(p16.value[0], 2048.0f);
        EXPECT_EXACT(p16.value[1], 2046.0f);
        EXPECT_EXACT(p16.value[2], 2048.0f);
        EXPECT_EXACT(p16.compute[0], 2048.0f);
        EXPECT_EXACT(p16.compute[1], 2046.0f);
        // The FP32 master keeps every update, even though its FP16 copy cannot show it.
        EXPECT_EXACT(p32.value[0], 2047.5f);
        EXPECT_EXACT(p32.value[1], 2046.5f);
        EXPECT_EXACT(p32.value[2], 2047.75f);
        EXPECT_EXACT(p32.compute[0], 2048.0f);
        EXPECT_EXACT(p32.compute[1], 2046.0f);
        EXPECT_EXACT(p32.compute[2], 2048.0f);
        // Four steps of 0.5 accumulate in the FP32 master; the FP16 master never moves.
        for (int t = 0; t < 3; ++t) {
            set_grad(p16, {0.5f, 0.0f, 0.0f});
            set_grad(p32, {0.5f, 0.0f, 0.0f});
            opt->step(ps16, 1.0f, StepFormats{Format::FP16, Format::FP16});
            opt32->step(ps32, 1.0f, StepFormats{Format::FP32, Format::FP16});
        }
        EXPECT_EXACT(p16.value[0], 2048.0f);
        EXPECT_EXACT(p32.value[0], 2046.0f);
        EXPECT_EXACT(p32.compute[0], 2046.0f);
    }

    void copyIsRepresentableAndNearest() {
        Rng rng(7);
        for (Format f : {Format::FP16, Format::BF16}) {
            const int mantissa = f == Format::FP16 ? 10 : 7;
            OptimizerConfig c;
            c.kind = "adamw";
            c.weight_decay = 0.01f;
            auto opt = make_optimizer(c);
            Parameter p;
            p.name = "1.weight";
            p.value = Tensor({4, 100});
            p.grad = Tensor({4, 100});
            for (int64_t i = 0; i < 400; ++i) {
                // Within FP16's normal range so the representability test below is simple.
                p.value[i] = rng.uniform(0.01f, 100.0f) * (i % 2 ? 1.0f : -1.0f);
                p.grad[i] = rng.normal();
            }
            Parameter* ps[] = {&p};
            opt->step(ps, 1e-3f, StepFormats{Format::FP32, f});
            QCOMPARE(p.compute.shape(), p.value.shape());
            for (int64_t i = 0; i < 400; ++i) {
                const float v = p.value[i], cpy = p.compute[i];
                // Exactly representable: no bits below the format's mantissa.
                QCOMPARE(bits(cpy) & ((1u << (23 - mantissa)) - 1), 0u);
                // Nearest: within half a unit in the last place of the format.
                int e;
                std::frexp(v, &e);
                const double half_ulp = std::ldexp(1.0, e - 1 - mantissa - 1);
                QVERIFY(std::fabs(double(cpy) - double(v)) <= half_ulp);
                QCOMPARE(bits(cpy), bits(round_to_format(v, f)));
            }
            // Back to an FP32 policy: the stale copy is dropped so forward reads the value.
            opt->step(ps, 1e-3f, StepFormats{});
            QVERIFY(p.compute.empty());
            QCOMPARE(&p.forward_value(), &p.value);
        }
    }

    void threadCountDoesNotChangeBits() {
        const int64_t n = (int64_t{1} << 17) + 12345;  // several chunks, ragged end
        auto run = [&](int threads, const char* kind) {
            mpwb::set_thread_count(threads);
            OptimizerConfig c;
            c.kind = kind;
            c.weight_decay = 0.01f;
            c.nesterov = true;
            auto opt = make_optimizer(c);
            Parameter p;
            p.value = Tensor({n});
            p.grad = Tensor({n});
            Rng rng(42);
            for (int64_t i = 0; i < n; ++i) p.value[i] = rng.normal();
            Parameter* ps[] = {&p};
            for (int t = 0; t < 3; ++t) {
                for (int64_t i = 0; i < n; ++i) p.grad[i] = rng.normal();
                opt->step(ps, 0.01f, StepFormats{Format::FP32, Format::BF16});
            }
            return p;
        };
        for (const char* kind : {"sgd", "adam"}) {
            const Parameter one = run(1, kind);
            const Parameter two = run(2, kind);
            const Parameter three = run(3, kind);
            QVERIFY(std::memcmp(one.value.data(), two.value.data(), size_t(n) * 4) == 0);
            QVERIFY(std::memcmp(one.value.data(), three.value.data(), size_t(n) * 4) == 0);
            QVERIFY(std::memcmp(one.compute.data(), three.compute.data(), size_t(n) * 4) == 0);
        }
        // Spot-check the big tensor against the double reference: the chunked path is right.
        mpwb::set_thread_count(2);
        OptimizerConfig c;
        c.kind = "adam";
        auto opt = make_optimizer(c);
        Parameter p;
        p.value = Tensor({n}, 1.0f);
        p.grad = Tensor({n});
        for (int64_t i = 0; i < n; ++i) p.grad[i] = float(i % 7) - 3.0f;
        Parameter* ps[] = {&p};
        opt->step(ps, 0.01f);
        for (int64_t i : {int64_t{0}, int64_t{16383}, int64_t{16384}, n / 2, n - 1}) {
            const double g = double(i % 7) - 3.0;
            const double expected = g == 0 ? 1.0 : 1.0 - 0.01 * g / (std::fabs(g) + 1e-8);
            QVERIFY(close(p.value[i], expected, 1e-6));
        }
    }

    void skipsEmptyGradient() {
        auto opt = make_optimizer(OptimizerConfig{});
        Parameter a = make_param({1.0f, 2.0f}, {1.0f, 1.0f});
        Parameter b = make_param({5.0f}, {});
        b.grad = Tensor();
        Parameter* ps[] = {&a, &b};
        opt->step(ps, 0.5f);
        EXPECT_EXACT(a.value[0], 0.5f);
        EXPECT_EXACT(b.value[0], 5.0f);
        QCOMPARE(opt->step_count(0), int64_t{1});
        QCOMPARE(opt->step_count(1), int64_t{0});
    }

    void resetAndCheckpoint() {
        for (const char* kind : {"sgd", "adam", "adamw"}) {
            OptimizerConfig c;
            c.kind = kind;
            c.weight_decay = 0.01f;
            auto a = make_optimizer(c);
            Parameter pa = make_param({1.0f, -1.0f, 0.25f}, {0.5f, 0.1f, -0.3f});
            Parameter* psa[] = {&pa};
            a->step(psa, 0.1f);
            a->step(psa, 0.1f);
            const auto blob = a->save_state();
            Parameter pb = pa;
            auto b = make_optimizer(c);
            b->load_state(blob, psa);
            Parameter* psb[] = {&pb};
            a->step(psa, 0.1f);
            b->step(psb, 0.1f);
            for (int i = 0; i < 3; ++i) QCOMPARE(bits(pa.value[i]), bits(pb.value[i]));
            QCOMPARE(b->step_count(0), int64_t{3});

            // reset(): the next step is a first step again, same as a fresh optimizer.
            a->reset();
            QCOMPARE(a->step_count(0), int64_t{0});
            Parameter pc = pa;
            auto fresh = make_optimizer(c);
            Parameter* psc[] = {&pc};
            a->step(psa, 0.1f);
            fresh->step(psc, 0.1f);
            for (int i = 0; i < 3; ++i) QCOMPARE(bits(pa.value[i]), bits(pc.value[i]));

            // Corrupt blobs are refused with DataError.
            auto truncated = blob;
            truncated.resize(truncated.size() - 3);
            QVERIFY_THROWS_EXCEPTION(DataError, b->load_state(truncated, psa));
            auto bad_magic = blob;
            bad_magic[0] = 'X';
            QVERIFY_THROWS_EXCEPTION(DataError, b->load_state(bad_magic, psa));
        }
        OptimizerConfig sgd, adam;
        adam.kind = "adam";
        auto s = make_optimizer(sgd);
        auto a = make_optimizer(adam);
        try {
            a->load_state(s->save_state(), {});
            QFAIL("loading an sgd state into adam did not throw");
        } catch (const DataError& e) {
            QVERIFY(QString(e.what()).contains("sgd"));
        }
    }

    // A saved state is checked against the parameters it is loaded for, buffer by buffer: Adam's
    // first moments without second moments (which the update would read through a null
    // pointer), buffers of another size, a buffer the kind does not keep, state for another
    // number of parameters, values no update leaves. The refusal names the parameter and the
    // numbers and keeps the state the optimizer had.
    void loadStateChecksTheStateAgainstTheParameters() {
        const auto saved = [](const char* kind, Parameter p) {
            OptimizerConfig c;
            c.kind = kind;
            auto o = make_optimizer(c);
            Parameter* ps[] = {&p};
            o->step(ps, 0.1f);
            o->step(ps, 0.1f);
            return o->save_state();
        };
        // The state's layout (Optimizer::save_state): magic, kind, count, then per parameter its
        // step, and each buffer as a count and its floats. The last buffer (of `had` values) of
        // the last parameter becomes one of `keep` values.
        const auto with_second_buffer = [](const std::vector<uint8_t>& blob, size_t had, size_t keep) {
            const auto second =
                static_cast<std::ptrdiff_t>(blob.size() - had * sizeof(float) - sizeof(uint64_t));
            std::vector<uint8_t> out(blob.begin(), blob.begin() + second);
            const uint64_t n = keep;
            const auto* count = reinterpret_cast<const uint8_t*>(&n);
            out.insert(out.end(), count, count + sizeof n);
            out.insert(out.end(), keep * sizeof(float), uint8_t{0});
            return out;
        };
        const auto cut_second_buffer = [&](const std::vector<uint8_t>& blob, size_t keep) {
            return with_second_buffer(blob, 3, keep);
        };
        Parameter p = make_param({1.0f, -1.0f, 0.25f}, {0.5f, 0.1f, -0.3f});
        Parameter* ps[] = {&p};
        const auto refused = [&](const char* kind, const std::vector<uint8_t>& blob,
                                 const std::string& words) {
            OptimizerConfig c;
            c.kind = kind;
            auto o = make_optimizer(c);
            o->step(ps, 0.1f);  // a state of its own, which a refused load must keep
            const std::string error = error_text<DataError>([&] { o->load_state(blob, ps); }).toStdString();
            QVERIFY2(error.find(words) != std::string::npos, error.c_str());
            QCOMPARE(o->step_count(0), int64_t{1});
        };
        const auto adam = saved("adam", p);
        refused("adam", cut_second_buffer(adam, 0),
                "optimizer state of parameter 0 ('0.weight') holds a first moment of 3 values and no second "
                "moment after 2 updates; a parameter of 3 values has 3 in each");
        refused("adam", cut_second_buffer(adam, 2), "a second moment of 2 values");
        refused("sgd", with_second_buffer(saved("sgd", p), 0, 2),
                "holds a second buffer of 2 values, which SGD does not keep");
        Parameter wider = make_param({1, 2, 3, 4}, {1, 1, 1, 1});
        refused("sgd", saved("sgd", wider), "holds a momentum buffer of 4 values; the parameter has 3");
        Parameter* two[] = {&p, &wider};
        OptimizerConfig c;
        auto o = make_optimizer(c);
        const std::string error =
            error_text<DataError>([&] { o->load_state(saved("sgd", p), two); }).toStdString();
        QVERIFY2(error.find("the state of 1 parameters; the network has 2") != std::string::npos,
                 error.c_str());
        // Values no update can leave.
        auto nan_moment = adam;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(nan_moment.data() + nan_moment.size() - sizeof(float), &nan, sizeof nan);
        refused("adam", nan_moment, "second moment that is negative or NaN: nan at element 2 of 3");
        // A state that fits loads, and the names come from the caller when it gives them.
        auto fits = make_optimizer({.kind = "adam"});
        fits->load_state(adam, ps);
        QCOMPARE(fits->step_count(0), int64_t{2});
        const std::string named =
            error_text<DataError>([&] {
                fits->load_state(cut_second_buffer(adam, 0), ps, [](size_t) { return std::string("w1"); });
            }).toStdString();
        QVERIFY2(named.find("optimizer state of w1 holds") != std::string::npos, named.c_str());
    }

    // step() refuses a state that no longer fits its parameter, naming the buffer and its size.
    void stepNamesTheBufferThatDoesNotFit() {
        for (const char* kind : {"sgd", "adam"}) {
            OptimizerConfig c;
            c.kind = kind;
            auto o = make_optimizer(c);
            Parameter p = make_param({1.0f, 2.0f, 3.0f}, {0.5f, 0.5f, 0.5f});
            Parameter* ps[] = {&p};
            o->step(ps, 0.1f);
            Parameter wider = make_param({1, 2, 3, 4}, {1, 1, 1, 1});
            Parameter* changed[] = {&wider};
            const std::string error = error_text<Error>([&] { o->step(changed, 0.1f); }).toStdString();
            const std::string words =
                std::string(kind) == "sgd"
                    ? "holds a momentum buffer of 3 values; the parameter has 4"
                    : "holds a first moment of 3 values and a second moment of 3 values "
                      "after 1 updates; a parameter of 4 values has 4 in each";
            QVERIFY2(error.find(words) != std::string::npos, error.c_str());
            QVERIFY(error.find("call reset()") != std::string::npos);
        }
    }

    void liveConfigChange() {
        OptimizerConfig c;
        c.momentum = 0.0f;
        auto opt = make_optimizer(c);
        Parameter p = make_param({1.0f}, {1.0f});
        Parameter* ps[] = {&p};
        opt->step(ps, 0.25f);
        EXPECT_EXACT(p.value[0], 0.75f);
        c.momentum = 0.5f;  // momentum switched on: the buffer starts at d
        opt->set_config(c);
        opt->step(ps, 0.25f);
        EXPECT_EXACT(p.value[0], 0.5f);
        opt->step(ps, 0.25f);  // buf = 0.5*1 + 1 = 1.5
        EXPECT_EXACT(p.value[0], 0.125f);
        OptimizerConfig other = c;
        other.kind = "adam";
        QVERIFY(error_text<ConfigError>([&] { opt->set_config(other); }).contains("kind"));
    }

    void stepErrors() {
        auto opt = make_optimizer(OptimizerConfig{});
        Parameter p = make_param({1.0f, 2.0f}, {1.0f, 1.0f});
        p.name = "3.weight";
        Parameter* ps[] = {&p};
        QVERIFY(error_text<ConfigError>([&] { opt->step(ps, -0.1f); }).contains("learning rate"));
        QVERIFY(error_text<ConfigError>([&] { opt->step(ps, NAN); }).contains("learning rate"));
        EXPECT_EXACT(p.value[0], 1.0f);

        Parameter bad = make_param({1.0f, 2.0f}, {1.0f});
        bad.name = "5.bias";
        Parameter* pbad[] = {&bad};
        try {
            opt->step(pbad, 0.1f);
            QFAIL("mismatched gradient did not throw");
        } catch (const Error& e) {
            QVERIFY(QString(e.what()).contains("5.bias"));
        }

        opt->step(ps, 0.1f);
        p.value = Tensor({3});
        p.grad = Tensor({3}, 1.0f);
        try {
            opt->step(ps, 0.1f);
            QFAIL("state of the wrong size did not throw");
        } catch (const Error& e) {
            QVERIFY(QString(e.what()).contains("3.weight"));
            QVERIFY(QString(e.what()).contains("reset()"));
        }
        opt->reset();
        opt->step(ps, 0.1f);  // fine after reset
        EXPECT_EXACT(p.value[0], -0.1f);
    }

    void validationNamesTheSetting() {
        auto msg = [](auto mutate) {
            OptimizerConfig c;
            mutate(c);
            const QString a = error_text<ConfigError>([&] { c.validate(); });
            const QString b = error_text<ConfigError>([&] { make_optimizer(c); });
            return a == b ? a : a + " | " + b;
        };
        QString m = msg([](OptimizerConfig& c) { c.kind = "adagrad"; });
        QVERIFY2(m.contains("adagrad") && m.contains("sgd, adam, adamw"), qPrintable(m));
        m = msg([](OptimizerConfig& c) { c.momentum = 1.0f; });
        QVERIFY2(m.contains("momentum") && m.contains("[0, 1)"), qPrintable(m));
        m = msg([](OptimizerConfig& c) { c.momentum = -0.1f; });
        QVERIFY2(m.contains("momentum = -0.1"), qPrintable(m));
        m = msg([](OptimizerConfig& c) { c.momentum = NAN; });
        QVERIFY2(m.contains("momentum") && m.contains("nan"), qPrintable(m));
        m = msg([](OptimizerConfig& c) {
            c.momentum = 0.0f;
            c.nesterov = true;
        });
        QVERIFY2(m.contains("nesterov"), qPrintable(m));
        m = msg([](OptimizerConfig& c) { c.weight_decay = -0.5f; });
        QVERIFY2(m.contains("weight_decay = -0.5"), qPrintable(m));
        m = msg([](OptimizerConfig& c) { c.weight_decay = INFINITY; });
        QVERIFY2(m.contains("weight_decay") && m.contains("inf"), qPrintable(m));
        m = msg([](OptimizerConfig& c) {
            c.kind = "adam";
            c.beta1 = 1.0f;
        });
        QVERIFY2(m.contains("beta1 = 1"), qPrintable(m));
        m = msg([](OptimizerConfig& c) {
            c.kind = "adam";
            c.beta2 = -0.5f;
        });
        QVERIFY2(m.contains("beta2 = -0.5"), qPrintable(m));
        m = msg([](OptimizerConfig& c) {
            c.kind = "adamw";
            c.eps = 0.0f;
        });
        QVERIFY2(m.contains("eps = 0"), qPrintable(m));
        m = msg([](OptimizerConfig& c) { c.eps = NAN; });
        QVERIFY2(m.contains("eps"), qPrintable(m));
        // Momentum 0 is plain SGD, not an error.
        OptimizerConfig ok;
        ok.momentum = 0.0f;
        ok.validate();
    }

    void jsonRoundTripAndErrors() {
        OptimizerConfig c;
        c.kind = "adamw";
        c.momentum = 0.0f;
        c.weight_decay = 0.05f;
        c.beta1 = 0.85f;
        c.beta2 = 0.995f;
        c.eps = 1e-7f;
        const nlohmann::json j = c;
        QCOMPARE(j.at("beta1").dump(), std::string("0.85"));  // shortest form, not 0.8500000238
        QCOMPARE(j.get<OptimizerConfig>(), c);
        QCOMPARE(nlohmann::json::parse(j.dump()).get<OptimizerConfig>(), c);

        // Missing keys keep defaults.
        const auto partial = nlohmann::json::parse(R"({"kind": "adam", "eps": 1e-6})").get<OptimizerConfig>();
        QCOMPARE(partial.kind, std::string("adam"));
        EXPECT_EXACT(partial.eps, 1e-6f);
        EXPECT_EXACT(partial.beta2, 0.999f);

        auto msg = [](const char* text) {
            return error_text<ConfigError>([&] { (void)nlohmann::json::parse(text).get<OptimizerConfig>(); });
        };
        QString m = msg(R"({"kind": "sgd", "lr": 0.1})");
        QVERIFY2(m.contains("'lr'"), qPrintable(m));
        m = msg(R"({"momentum": "high"})");
        QVERIFY2(m.contains("momentum") && m.contains("high"), qPrintable(m));
        m = msg(R"({"nesterov": 1})");
        QVERIFY2(m.contains("nesterov"), qPrintable(m));
        m = msg(R"({"kind": "rmsprop"})");
        QVERIFY2(m.contains("rmsprop"), qPrintable(m));
        m = msg(R"({"beta1": 1.5})");
        QVERIFY2(m.contains("beta1"), qPrintable(m));
        m = msg(R"([1, 2])");
        QVERIFY2(m.contains("object"), qPrintable(m));
        // Numbers beyond the field's type are refused, not converted (undefined for floats,
        // wrapped for integers).
        m = msg(R"({"eps": 1e39})");
        QVERIFY2(m.contains("eps") && m.contains("largest float"), qPrintable(m));
        m = msg(R"({"momentum": -1e300})");
        QVERIFY2(m.contains("momentum") && m.contains("largest float"), qPrintable(m));
    }
};

QTEST_APPLESS_MAIN(TestOptimizer)
#include "test_optimizer.moc"
