// Tests of GemmQuantizer (the recipes' bookkeeping) and limited_accumulator_gemm. The delayed
// scaling trajectory on scripted amax sequences is checked against a transliteration of the
// formula written below (history length 1, 3, 1024; max and most-recent; margin 1; the first
// scale 1; an amax of 0 or NaN keeps the previous scale), then current and fixed scaling, the
// per-step copies (one per tensor, re-quantized for a new pointer), evaluation steps that leave
// the state alone, live changes, the block recipes' two copies and their names, nvfp4's seeded
// stochastic rounding and Hadamard transform, mxfp4's copies (row- and column-wise weights,
// stochastic dy, Hadamard with random or fixed signs), nvfp4's 4 over 6 with its tensor scale,
// and the accumulator emulation against float64.
#include <QtTest>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <deque>
#include <vector>

#include "core/common/rng.h"
#include "core/precision/block_quantize.h"
#include "core/precision/gemm_quantizer.h"

using namespace mpwb;

namespace {

ScaledRecipeConfig recipe(ScaledRecipe r) {
    ScaledRecipeConfig c;
    c.recipe = r;
    return c;
}

// A tensor whose amax is exactly a (a may be 0 or NaN).
std::vector<float> tensor_with_amax(float a, int64_t n = 64) {
    std::vector<float> x(static_cast<size_t>(n), 0.0f);
    for (int64_t i = 0; i < n; ++i)
        x[static_cast<size_t>(i)] = a * static_cast<float>(i % 7) / 7.0f * (i % 2 ? -1.0f : 1.0f);
    x[static_cast<size_t>(n / 2)] = -a;
    return x;
}

// The delayed-scaling formula, transliterated: the scale of step t from the history of 1..t-1.
struct DelayedReference {
    size_t length;
    bool most_recent;
    int margin;
    double fp8_max;
    std::deque<double> history;
    float scale = 1.0f;

    float step(double amax) {
        if (!history.empty()) {
            double a = history.back();
            if (!most_recent) {
                a = 0;
                for (double h : history)
                    if (!std::isnan(h)) a = std::max(a, h);
            }
            if (a > 0 && std::isfinite(a)) {
                const float s = static_cast<float>(static_cast<double>(static_cast<float>(fp8_max / a)) /
                                                   std::ldexp(1.0, margin));
                scale = std::isinf(s) ? FLT_MAX : s;
            }
        }
        history.push_back(amax);
        while (history.size() > length) history.pop_front();
        return scale;
    }
};

// One training step of one operand: returns the scale used (from the statistics).
float run_step(GemmQuantizer& q, int64_t step, GemmOperand which, const std::vector<float>& x) {
    q.begin_step(step, true);
    q.operand(which, GemmPass::Forward, SumAlong::Cols, x.data(), 1, static_cast<int64_t>(x.size()));
    const float used = q.stats().at(0).scale;
    q.end_step();
    return used;
}

double relative_error(const std::vector<float>& got, const std::vector<double>& ref) {
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::fabs(got[i] - ref[i]) / std::fabs(ref[i]));
    return worst;
}

}  // namespace

class TestGemmQuantizer : public QObject {
    Q_OBJECT

private slots:
    void delayedTrajectory_data() {
        QTest::addColumn<qlonglong>("length");
        QTest::addColumn<bool>("most_recent");
        QTest::addColumn<int>("margin");
        QTest::addColumn<int>("operand");
        for (qlonglong len : {1, 3, 1024})
            for (bool mr : {false, true})
                for (int margin : {0, 1})
                    QTest::addRow("len %lld %s margin %d", len, mr ? "most-recent" : "max", margin)
                        << len << mr << margin << static_cast<int>(GemmOperand::Input);
        QTest::addRow("dy e5m2 len 3")
            << qlonglong(3) << false << 0 << static_cast<int>(GemmOperand::OutputGrad);
    }
    void delayedTrajectory() {
        QFETCH(qlonglong, length);
        QFETCH(bool, most_recent);
        QFETCH(int, margin);
        QFETCH(int, operand);
        ScaledRecipeConfig c = recipe(ScaledRecipe::Fp8Delayed);
        c.amax_history_len = length;
        c.amax_algorithm = most_recent ? AmaxAlgorithm::MostRecent : AmaxAlgorithm::Max;
        c.margin = margin;
        const GemmOperand which = static_cast<GemmOperand>(operand);
        GemmQuantizer q(c, 7, 0);
        DelayedReference ref{static_cast<size_t>(length),
                             most_recent,
                             margin,
                             which == GemmOperand::OutputGrad ? 57344.0 : 448.0,
                             {}};
        const float amaxes[] = {2.0f, 0.5f, 0.0f, 8.0f, 0.25f, 0.0f,  0.0f,   3.0f, 1e-3f, 100.0f,
                                NAN,  0.1f, 0.1f, 0.1f, 0.1f,  64.0f, 1e-40f, 5.0f, 0.0f,  7.0f};
        int64_t step = 0;
        for (int round = 0; round < 3; ++round)
            for (float a : amaxes) {
                ++step;
                const float expected = ref.step(a);
                QCOMPARE(run_step(q, step, which, tensor_with_amax(a)), expected);
                if (step == 1) QCOMPARE(expected, 1.0f);  // the first scale is 1
                // next_scale agrees with what the next step will use.
                DelayedReference peek = ref;
                QCOMPARE(q.next_scale(which), peek.step(0.0));
            }
        const std::vector<float> h = q.amax_history(which);
        QCOMPARE(h.size(), std::min<size_t>(static_cast<size_t>(length), static_cast<size_t>(step)));
        QCOMPARE(h.back(), 7.0f);
    }

    void currentAndFixedScaling() {
        ScaledRecipeConfig c = recipe(ScaledRecipe::Fp8Current);
        GemmQuantizer q(c, 1, 0);
        QCOMPARE(run_step(q, 1, GemmOperand::Input, tensor_with_amax(4.0f)), 112.0f);
        QCOMPARE(run_step(q, 2, GemmOperand::Input, tensor_with_amax(0.0f)), 112.0f);  // kept
        QCOMPARE(run_step(q, 3, GemmOperand::Input, tensor_with_amax(NAN)), 112.0f);   // kept
        QCOMPARE(run_step(q, 4, GemmOperand::Input, tensor_with_amax(0.5f)), 896.0f);
        QCOMPARE(run_step(q, 5, GemmOperand::OutputGrad, tensor_with_amax(2.0f)), 28672.0f);  // HYBRID: E5M2
        c.fp8_format = Fp8Format::E4M3;
        c.fixed_scale = 1.0;
        q.set_config(c);
        QCOMPARE(run_step(q, 6, GemmOperand::OutputGrad, tensor_with_amax(2.0f)), 1.0f);
        ScaledRecipeConfig d = recipe(ScaledRecipe::Fp8Delayed);
        d.fixed_scale = 16.0;
        GemmQuantizer fixed(d, 1, 0);
        for (int64_t s = 1; s <= 3; ++s)
            QCOMPARE(run_step(fixed, s, GemmOperand::Weight, tensor_with_amax(3.0f)), 16.0f);
    }

    void perTensorCopiesAreSharedPerPointer() {
        GemmQuantizer q(recipe(ScaledRecipe::Fp8Current), 1, 0);
        const std::vector<float> x = tensor_with_amax(3.0f, 96), w1 = tensor_with_amax(1.0f, 96),
                                 w2 = tensor_with_amax(5.0f, 96);
        q.begin_step(1, true);
        const float* fwd = q.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, x.data(), 8, 12);
        const float* wg =
            q.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, x.data(), 8, 12);
        QCOMPARE(fwd, wg);
        QCOMPARE(q.stats().size(), size_t{1});
        const float* a = q.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Cols, w1.data(), 8, 12);
        const float* b = q.operand(GemmOperand::Weight, GemmPass::DataGrad, SumAlong::Rows, w2.data(), 8, 12);
        QVERIFY(a != b);
        QCOMPARE(a[48], -1.0f);  // each copy holds its own tensor's values, both still valid
        QCOMPARE(b[48], -5.0f);
        QCOMPARE(fwd[48], -3.0f);
        q.end_step();
        QCOMPARE(q.amax_history(GemmOperand::Weight), std::vector<float>{5.0f});  // the step's max
    }

    void evaluationStepsChangeNothing() {
        ScaledRecipeConfig c = recipe(ScaledRecipe::Fp8Delayed);
        c.amax_history_len = 4;
        GemmQuantizer with_eval(c, 1, 0), without(c, 1, 0);
        for (int64_t s = 1; s <= 6; ++s) {
            const auto x = tensor_with_amax(static_cast<float>(s));
            QCOMPARE(run_step(with_eval, s, GemmOperand::Input, x),
                     run_step(without, s, GemmOperand::Input, x));
            // Evaluation: a step that never ends, with a wild amax.
            const auto e = tensor_with_amax(1e4f);
            with_eval.begin_step(s, false);
            with_eval.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, e.data(), 1, 64);
            QCOMPARE(with_eval.amax_history(GemmOperand::Input), without.amax_history(GemmOperand::Input));
            QCOMPARE(with_eval.next_scale(GemmOperand::Input), without.next_scale(GemmOperand::Input));
        }
        GemmQuantizer current(recipe(ScaledRecipe::Fp8Current), 1, 0);
        run_step(current, 1, GemmOperand::Input, tensor_with_amax(4.0f));
        const auto e = tensor_with_amax(1e4f);
        current.begin_step(2, false);
        current.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, e.data(), 1, 64);
        QCOMPARE(run_step(current, 2, GemmOperand::Input, tensor_with_amax(0.0f)), 112.0f);  // not 448/1e4
    }

    void liveChangeAppliesAtTheNextStep() {
        ScaledRecipeConfig c = recipe(ScaledRecipe::Fp8Delayed);
        GemmQuantizer q(c, 1, 0);
        for (int64_t s = 1; s <= 5; ++s)
            run_step(q, s, GemmOperand::Input, tensor_with_amax(static_cast<float>(s)));
        QCOMPARE(q.amax_history(GemmOperand::Input).size(), size_t{5});
        c.amax_history_len = 2;
        c.margin = 1;
        q.begin_step(6, true);
        q.set_config(c);  // during step 6: step 6 still runs the old settings
        const auto x = tensor_with_amax(1.0f);
        q.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, x.data(), 1, 64);
        QCOMPARE(q.stats().at(0).scale, 448.0f / 5.0f);
        q.end_step();
        QCOMPARE(q.config().margin, 1);
        // Step 7: the newest two entries (5, 1) survive; max 5, margin 1.
        QCOMPARE(run_step(q, 7, GemmOperand::Input, x), 448.0f / 5.0f / 2.0f);
        QCOMPARE(q.amax_history(GemmOperand::Input), (std::vector<float>{1.0f, 1.0f}));
    }

    void blockRecipesQuantizeTwiceAndNameTheCopies() {
        Rng rng(3);
        std::vector<float> x(64 * 96), w(96 * 64), dy(64 * 32);
        // A wide range, so that elements far below their block's maximum fall into E4M3's
        // subnormals, which depend on the block (power-of-two scales alone would not change
        // the rounding of normal values).
        for (auto* v : {&x, &w, &dy})
            for (float& f : *v) f = rng.normal() * std::exp2(rng.uniform(-8.0f, 8.0f));
        GemmQuantizer mx(recipe(ScaledRecipe::MxFp8), 1, 0);
        mx.begin_step(1, true);
        const float* xf = mx.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, x.data(), 64, 96);
        const float* xw =
            mx.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, x.data(), 64, 96);
        QVERIFY(xf != xw);
        QVERIFY(!std::equal(xf, xf + x.size(), xw));
        QCOMPARE(mx.stats().size(), size_t{2});
        QCOMPARE(mx.stats()[0].operand, std::string("x"));
        QCOMPARE(mx.stats()[1].operand, std::string("x (wgrad)"));
        QCOMPARE(mx.stats()[0].blocks, int64_t{64 * 3});
        QCOMPARE(mx.stats()[1].blocks, int64_t{2 * 96});
        // fp8-block: 128x128 weight blocks are the same whichever dimension is summed.
        GemmQuantizer blk(recipe(ScaledRecipe::Fp8Block), 1, 0);
        blk.begin_step(1, true);
        const float* wf =
            blk.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Cols, w.data(), 96, 64);
        const float* wd =
            blk.operand(GemmOperand::Weight, GemmPass::DataGrad, SumAlong::Rows, w.data(), 96, 64);
        QCOMPARE(wf, wd);
        QCOMPARE(blk.stats().size(), size_t{2});
        QCOMPARE(blk.stats()[1].operand, std::string("w (dgrad)"));
        QCOMPARE(blk.stats()[1].blocks, int64_t{1});
        const float* dyd =
            blk.operand(GemmOperand::OutputGrad, GemmPass::DataGrad, SumAlong::Cols, dy.data(), 64, 32);
        QVERIFY(dyd != nullptr);
        QCOMPARE(blk.stats().back().operand, std::string("dy"));
        QCOMPARE(blk.stats().back().scale, 0.0f);
    }

    void nvfp4StochasticAndHadamard() {
        Rng rng(5);
        const int64_t batch = 256, in = 48, out = 24;
        std::vector<float> x(static_cast<size_t>(batch * in)), dy(static_cast<size_t>(batch * out));
        for (float& f : x) f = rng.normal();
        for (float& f : dy) f = rng.normal() * 1e-3f;
        const ScaledRecipeConfig c = recipe(ScaledRecipe::NvFp4);
        auto dy_copy = [&](const ScaledRecipeConfig& cfg, uint64_t seed, size_t layer, GemmPass pass,
                           SumAlong along) {
            GemmQuantizer q(cfg, seed, layer);
            q.begin_step(3, false);
            const float* p = q.operand(GemmOperand::OutputGrad, pass, along, dy.data(), batch, out);
            return std::vector<float>(p, p + dy.size());
        };
        const auto a = dy_copy(c, 11, 2, GemmPass::DataGrad, SumAlong::Cols);
        QCOMPARE(a, dy_copy(c, 11, 2, GemmPass::DataGrad, SumAlong::Cols));   // repeats exactly
        QVERIFY(a != dy_copy(c, 11, 3, GemmPass::DataGrad, SumAlong::Cols));  // another layer's draws
        ScaledRecipeConfig nearest = c;
        nearest.stochastic_rounding = false;
        QVERIFY(a != dy_copy(nearest, 11, 2, GemmPass::DataGrad, SumAlong::Cols));
        // wgrad with the transform: (Q(T dy))ᵀ Q(T x) approximates dyᵀ x; without, the copy is
        // the plain column-wise quantization.
        GemmQuantizer q(c, 11, 2);
        q.begin_step(1, false);
        const float* hdy =
            q.operand(GemmOperand::OutputGrad, GemmPass::WeightGrad, SumAlong::Rows, dy.data(), batch, out);
        const float* hx =
            q.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, x.data(), batch, in);
        double err2 = 0, ref2 = 0;
        for (int64_t i = 0; i < out; ++i)
            for (int64_t j = 0; j < in; ++j) {
                double exact = 0, approx = 0;
                for (int64_t r = 0; r < batch; ++r) {
                    exact += static_cast<double>(dy[static_cast<size_t>(r * out + i)]) *
                             x[static_cast<size_t>(r * in + j)];
                    approx += static_cast<double>(hdy[r * out + i]) * hx[r * in + j];
                }
                err2 += (exact - approx) * (exact - approx);
                ref2 += exact * exact;
            }
        QVERIFY2(std::sqrt(err2 / ref2) < 0.5, qPrintable(QString::number(std::sqrt(err2 / ref2))));
        ScaledRecipeConfig plain = nearest;
        plain.hadamard = false;
        GemmQuantizer p(plain, 11, 2);
        p.begin_step(1, false);
        const float* px =
            p.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, x.data(), batch, in);
        std::vector<float> expected(x.size());
        QuantizeOptions opt;
        opt.element = Format::E2M1;
        opt.tensor_scale = nvfp4_tensor_scale(amax_of(x.data(), batch * in));
        quantize_blocks(x.data(), expected.data(), batch, in, {16, 1}, BlockScaleRule::NvFp4, opt);
        QVERIFY(std::equal(expected.begin(), expected.end(), px));
    }

    void mxfp4Copies() {
        Rng rng(9);
        const int64_t batch = 64, in = 96, out = 32;
        std::vector<float> x(static_cast<size_t>(batch * in)), w(static_cast<size_t>(out * in)),
            dy(static_cast<size_t>(batch * out));
        for (auto* v : {&x, &w, &dy})
            for (float& f : *v) f = rng.normal() * std::exp2(rng.uniform(-4.0f, 4.0f));
        ScaledRecipeConfig c = recipe(ScaledRecipe::MxFp4);
        c.mx_scale_rounding = MxScaleRounding::Floor;
        c.hadamard = false;
        GemmQuantizer q(c, 3, 1);
        q.begin_step(1, true);
        // The weight is quantized along each GEMM's summed dimension: two different 1x32 copies.
        const float* wf =
            q.operand(GemmOperand::Weight, GemmPass::Forward, SumAlong::Cols, w.data(), out, in);
        const float* wd =
            q.operand(GemmOperand::Weight, GemmPass::DataGrad, SumAlong::Rows, w.data(), out, in);
        QVERIFY(wf != wd);
        QCOMPARE(q.stats().size(), size_t{2});
        QCOMPARE(q.stats()[0].element, Format::E2M1);
        QCOMPARE(q.stats()[0].blocks, int64_t{32 * 3});
        QCOMPARE(q.stats()[1].operand, std::string("w (dgrad)"));
        QCOMPARE(q.stats()[1].blocks, int64_t{1 * 96});
        QCOMPARE(q.stats()[0].scale, 0.0f);  // no per-tensor scale
        std::vector<float> expected(w.size());
        QuantizeOptions opt;
        opt.element = Format::E2M1;
        quantize_blocks(w.data(), expected.data(), out, in, {1, 32}, BlockScaleRule::E8M0Floor, opt);
        QVERIFY(std::equal(expected.begin(), expected.end(), wf));
        // dy rounds stochastically (seeded), x to nearest.
        auto dy_copy = [&](const ScaledRecipeConfig& cfg) {
            GemmQuantizer g(cfg, 3, 1);
            g.begin_step(2, false);
            const float* p =
                g.operand(GemmOperand::OutputGrad, GemmPass::DataGrad, SumAlong::Cols, dy.data(), batch, out);
            return std::vector<float>(p, p + dy.size());
        };
        ScaledRecipeConfig nearest = c;
        nearest.stochastic_rounding = false;
        QVERIFY(dy_copy(c) == dy_copy(c));
        QVERIFY(dy_copy(c) != dy_copy(nearest));
        std::vector<float> dy_nearest(dy.size());
        quantize_blocks(dy.data(), dy_nearest.data(), batch, out, {1, 32}, BlockScaleRule::E8M0Floor, opt);
        QCOMPARE(dy_copy(nearest), dy_nearest);
        // wgrad with the Hadamard transform: fixed signs give the plain H16 / 4 of x, then the
        // column-wise MX copy; random signs another copy.
        ScaledRecipeConfig fixed = nearest;
        fixed.hadamard = true;
        fixed.hadamard_signs = HadamardSigns::Fixed;
        ScaledRecipeConfig random = fixed;
        random.hadamard_signs = HadamardSigns::Random;
        auto x_wgrad = [&](const ScaledRecipeConfig& cfg) {
            GemmQuantizer g(cfg, 3, 1);
            g.begin_step(1, false);
            const float* p =
                g.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, x.data(), batch, in);
            return std::vector<float>(p, p + x.size());
        };
        std::vector<float> hx(x.size()), hq(x.size());
        hadamard16_along_rows(x.data(), hx.data(), batch, in, fixed_hadamard_signs());
        quantize_blocks(hx.data(), hq.data(), batch, in, {32, 1}, BlockScaleRule::E8M0Floor, opt);
        QCOMPARE(x_wgrad(fixed), hq);
        QVERIFY(x_wgrad(random) != hq);
        // Fixed signs do not depend on the seed or the layer.
        GemmQuantizer other(fixed, 99, 7);
        other.begin_step(1, false);
        const float* p =
            other.operand(GemmOperand::Input, GemmPass::WeightGrad, SumAlong::Rows, x.data(), batch, in);
        QVERIFY(std::equal(hq.begin(), hq.end(), p));
    }

    void nvfp4FourOverSix() {
        Rng rng(4);
        const int64_t batch = 48, in = 64;
        std::vector<float> x(static_cast<size_t>(batch * in));
        for (float& f : x) f = rng.normal() * std::exp2(rng.uniform(-3.0f, 3.0f));
        ScaledRecipeConfig c = recipe(ScaledRecipe::NvFp4);
        c.nvfp4_4over6 = true;
        c.nvfp4_4over6_error = FourOverSixError::Mae;
        GemmQuantizer q(c, 1, 0);
        q.begin_step(1, true);
        const float* xf =
            q.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, x.data(), batch, in);
        const ScalingStats& st = q.stats().at(0);
        // s_tensor from the 256 bound, and the copy is quantize_blocks' 4 over 6 with it.
        const float tensor_scale = nvfp4_tensor_scale(amax_of(x.data(), batch * in), true);
        QCOMPARE(st.scale, tensor_scale);
        QVERIFY(st.blocks_scaled_to_4 > 0);
        std::vector<float> expected(x.size());
        QuantizeOptions opt;
        opt.element = Format::E2M1;
        opt.tensor_scale = tensor_scale;
        opt.four_over_six_error = FourOverSixError::Mae;
        quantize_blocks(x.data(), expected.data(), batch, in, {1, 16}, BlockScaleRule::NvFp4FourOverSix, opt);
        QVERIFY(std::equal(expected.begin(), expected.end(), xf));
        // Off (the default), no block is scaled to 4 and s_tensor uses 448.
        GemmQuantizer plain(recipe(ScaledRecipe::NvFp4), 1, 0);
        plain.begin_step(1, true);
        plain.operand(GemmOperand::Input, GemmPass::Forward, SumAlong::Cols, x.data(), batch, in);
        QCOMPARE(plain.stats().at(0).blocks_scaled_to_4, int64_t{0});
        QCOMPARE(plain.stats().at(0).scale, nvfp4_tensor_scale(amax_of(x.data(), batch * in)));
    }

    void limitedAccumulator() {
        Rng rng(9);
        const int64_t m = 7, n = 9, k = 300;
        std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
        for (float& v : a) v = rng.uniform(0.5f, 1.0f);
        for (float& v : b) v = rng.uniform(0.5f, 1.0f);
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                // Stored as op() asks: A is k x m when transposed, B n x k.
                std::vector<float> as(a.size()), bs(b.size());
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t p = 0; p < k; ++p)
                        as[static_cast<size_t>(ta ? p * m + i : i * k + p)] =
                            a[static_cast<size_t>(i * k + p)];
                for (int64_t p = 0; p < k; ++p)
                    for (int64_t j = 0; j < n; ++j)
                        bs[static_cast<size_t>(tb ? j * k + p : p * n + j)] =
                            b[static_cast<size_t>(p * n + j)];
                std::vector<double> ref(static_cast<size_t>(m * n), 0.0);
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t j = 0; j < n; ++j)
                        for (int64_t p = 0; p < k; ++p)
                            ref[static_cast<size_t>(i * n + j)] +=
                                static_cast<double>(a[static_cast<size_t>(i * k + p)]) *
                                b[static_cast<size_t>(p * n + j)];
                std::vector<float> c(static_cast<size_t>(m * n));
                const int64_t lda = ta ? m : k, ldb = tb ? k : n;
                for (int64_t interval : {k, int64_t{32}}) {
                    limited_accumulator_gemm(ta, tb, m, n, k, as.data(), lda, bs.data(), ldb, c.data(), n, 23,
                                             interval);
                    QVERIFY2(relative_error(c, ref) <= 1e-6,
                             qPrintable(QString::number(relative_error(c, ref))));
                }
                // 10 bits every 32 products: each truncation loses under 2^-10 of its partial sum
                // (all terms are positive, so of the total at most 2^-10), far more than FP32.
                limited_accumulator_gemm(ta, tb, m, n, k, as.data(), lda, bs.data(), ldb, c.data(), n, 10,
                                         32);
                const double err = relative_error(c, ref);
                QVERIFY2(err > 1e-5 && err <= std::ldexp(1.0, -10) + 1e-6, qPrintable(QString::number(err)));
                for (size_t i = 0; i < c.size(); ++i) QVERIFY(c[i] <= ref[i] * (1 + 1e-6));  // toward zero
            }
    }
};

QTEST_GUILESS_MAIN(TestGemmQuantizer)
#include "test_gemm_quantizer.moc"
