// Tests of global-norm gradient clipping: the norm against hand-computed values, the PyTorch
// scaling rule, double accumulation where FP32 accumulation would lose the small terms,
// non-finite norms left alone, thread-count independence, and argument errors.
#include <QtTest/QtTest>

#include <chrono>
#include <cmath>
#include <thread>
#include <cstring>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/optim/grad_clip.h"
#include "tests/common/test_support.h"

using namespace mpwb;

namespace {

Parameter with_grad(std::vector<float> g) {
    Parameter p;
    p.value = Tensor({static_cast<int64_t>(g.size())});
    p.grad = Tensor({static_cast<int64_t>(g.size())});
    for (size_t i = 0; i < g.size(); ++i) p.grad[static_cast<int64_t>(i)] = g[i];
    return p;
}
}  // namespace

class TestGradClip : public QObject {
    Q_OBJECT

private slots:
    void cleanup() { mpwb::set_thread_count(0); }

    void normAndClip() {
        // sqrt(3^2 + 4^2 + 12^2) = sqrt(169) = 13 over two parameters.
        Parameter a = with_grad({3.0f, 4.0f});
        Parameter b = with_grad({12.0f});
        Parameter* ps[] = {&a, &b};
        EXPECT_EXACT(global_grad_norm(ps), 13.0f);

        // Below the limit: returned, untouched.
        EXPECT_EXACT(clip_grad_norm(ps, 20.0f), 13.0f);
        EXPECT_EXACT(a.grad[0], 3.0f);
        EXPECT_EXACT(b.grad[0], 12.0f);
        // Equal to the limit: untouched (only norm > max_norm clips).
        EXPECT_EXACT(clip_grad_norm(ps, 13.0f), 13.0f);
        EXPECT_EXACT(a.grad[1], 4.0f);

        // Above: scaled by 6.5 / (13 + 1e-6), so the new norm is 6.5 up to the 1e-6.
        EXPECT_EXACT(clip_grad_norm(ps, 6.5f), 13.0f);
        const double coef = 6.5 / (13.0 + 1e-6);
        QVERIFY(std::fabs(a.grad[0] - 3.0 * coef) < 1e-6);
        QVERIFY(std::fabs(a.grad[1] - 4.0 * coef) < 1e-6);
        QVERIFY(std::fabs(b.grad[0] - 12.0 * coef) < 1e-6);
        QVERIFY(std::fabs(global_grad_norm(ps) - 6.5) < 1e-5);
    }

    void emptyGradientsCountAsZero() {
        Parameter a = with_grad({});
        Parameter b = with_grad({-5.0f});
        Parameter* ps[] = {&a, &b};
        EXPECT_EXACT(clip_grad_norm(ps, 1.0f), 5.0f);
        QVERIFY(std::fabs(b.grad[0] - (-5.0 / (5.0 + 1e-6))) < 1e-6);
        EXPECT_EXACT(global_grad_norm({}), 0.0f);
    }

    void doubleAccumulation() {
        // One tensor of 2^20 gradients: 2^13 first, then 0.25 each, next to a {3, 4} gradient.
        // Sum of squares 2^26 + (2^20 - 1) / 16 + 25. Accumulated in FP32, each 1/16 vanishes
        // against 2^26 (spacing 8), which shows in the norm.
        const int64_t n = int64_t{1} << 20;
        Parameter pair = with_grad({3.0f, 4.0f});
        Parameter big;
        big.value = Tensor({n});
        big.grad = Tensor({n}, 0.25f);
        big.grad[0] = 8192.0f;
        Parameter* ps[] = {&pair, &big};
        const auto expected = static_cast<float>(std::sqrt(67108864.0 + double(n - 1) / 16.0 + 25.0));
        float fp32_sum = 25.0f;
        for (int64_t i = 0; i < n; ++i) fp32_sum += big.grad[i] * big.grad[i];
        QVERIFY(expected != std::sqrt(fp32_sum));
        mpwb::set_thread_count(1);
        const float one = global_grad_norm(ps);
        mpwb::set_thread_count(2);
        const float two = global_grad_norm(ps);
        mpwb::set_thread_count(3);
        const float three = global_grad_norm(ps);
        EXPECT_EXACT(one, expected);
        QCOMPARE(std::memcmp(&one, &two, 4), 0);
        QCOMPARE(std::memcmp(&one, &three, 4), 0);
        // Clipping a big tensor threads over it: every element scaled alike.
        EXPECT_EXACT(clip_grad_norm(ps, 1.0f), expected);
        const float coef = 1.0f / (expected + 1e-6f);
        EXPECT_EXACT(big.grad[0], 8192.0f * coef);
        EXPECT_EXACT(big.grad[1], 0.25f * coef);
        EXPECT_EXACT(big.grad[n - 1], 0.25f * coef);
        EXPECT_EXACT(pair.grad[0], 3.0f * coef);
        EXPECT_EXACT(pair.grad[1], 4.0f * coef);
    }

    void nonFiniteNormLeavesGradients() {
        Parameter a = with_grad({1.0f, NAN});
        Parameter b = with_grad({2.0f});
        Parameter* ps[] = {&a, &b};
        QVERIFY(std::isnan(clip_grad_norm(ps, 1.0f)));
        EXPECT_EXACT(a.grad[0], 1.0f);
        EXPECT_EXACT(b.grad[0], 2.0f);
        a.grad[1] = INFINITY;
        QVERIFY(std::isinf(clip_grad_norm(ps, 1.0f)));
        EXPECT_EXACT(a.grad[0], 1.0f);
        // Finite gradients whose norm overflows FP32 are also reported as inf, not clipped.
        a.grad[0] = 3e38f;
        a.grad[1] = 3e38f;
        QVERIFY(std::isinf(clip_grad_norm(ps, 1.0f)));
        EXPECT_EXACT(a.grad[0], 3e38f);
    }

    void errors() {
        Parameter a = with_grad({1.0f});
        Parameter* ps[] = {&a};
        for (float bad : {0.0f, -1.0f, NAN, INFINITY}) {
            try {
                clip_grad_norm(ps, bad);
                QFAIL("bad max_norm did not throw");
            } catch (const ConfigError& e) {
                QVERIFY2(QString(e.what()).contains("max_norm"), e.what());
            }
        }
        Parameter* null_list[] = {&a, nullptr};
        QVERIFY_THROWS_EXCEPTION(Error, clip_grad_norm(null_list, 1.0f));
    }
};

QTEST_APPLESS_MAIN(TestGradClip)
#include "test_grad_clip.moc"
