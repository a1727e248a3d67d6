// Tests of core/precision/block_quantize: every quantizer against an independent reference
// written below in float64 (frexp / nearbyint on the element grid, block loops over the plain
// definition of each recipe, the FP32 steps of the recipes reproduced by rounding a double result
// to float, which is exact for one +, -, *, /). Random tensors and adversarial ones: zeros, one
// huge outlier in a block, subnormals, NaN or inf inside a block (MX's NaN scale), tail blocks.
// Then the statistics, thread-count independence, row-wise vs column-wise MX copies, stochastic
// rounding, and the Hadamard transform's orthogonality. MXFP4 (E2M1 under E8M0 scales) runs
// through the same reference; NVFP4's 4 over 6 against a float64 brute force of both candidates
// of every block; the fixed-sign Hadamard transform against Sylvester's matrix in float64.
#include <QtTest>

#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "core/common/parallel.h"
#include "core/common/rng.h"
#include "core/numeric/element_formats.h"
#include "core/precision/block_quantize.h"

using namespace mpwb;

namespace {

// ---- the float64 reference --------------------------------------------------------------------

struct RefFormat {
    int mantissa_bits;
    int min_normal_exp;
    double max;
};
RefFormat ref_format(Format f) {
    switch (f) {
        case Format::E5M2:
            return {2, -14, 57344.0};
        case Format::E2M1:
            return {1, 0, 6.0};
        default:
            return {3, -6, 448.0};
    }
}

int ref_floor_log2(double a) {
    int ex = 0;
    std::frexp(a, &ex);  // a = f * 2^ex, f in [0.5, 1)
    return ex - 1;
}

// The grid step of the format around magnitude a.
double ref_quantum(double a, const RefFormat& f) {
    const int e = a > 0 ? std::max(ref_floor_log2(a), f.min_normal_exp) : f.min_normal_exp;
    return std::ldexp(1.0, e - f.mantissa_bits);
}

// Round to nearest even on the grid, saturating at max (inf included); NaN stays NaN.
float ref_round(float v, const RefFormat& f) {
    if (std::isnan(v)) return v;
    const double a = std::fabs(static_cast<double>(v));
    if (a >= f.max) return std::copysign(static_cast<float>(f.max), v);
    const double q = ref_quantum(a, f);
    const double r = std::min(std::nearbyint(a / q) * q, f.max);
    return std::copysign(static_cast<float>(r), v);
}

// Stochastic rounding: up with probability (a - lower) / gap, decided by 32 random bits.
float ref_round_stochastic(float v, const RefFormat& f, uint32_t bits) {
    if (std::isnan(v)) return v;
    const double a = std::fabs(static_cast<double>(v));
    if (a >= f.max) return std::copysign(static_cast<float>(f.max), v);
    const double q = ref_quantum(a, f);
    const double lower = std::floor(a / q) * q;
    const double threshold = std::floor((a - lower) / q * 4294967296.0);
    const double r = std::min(static_cast<double>(bits) < threshold ? lower + q : lower, f.max);
    return std::copysign(static_cast<float>(r), v);
}

float f32(double v) { return static_cast<float>(v); }

// Whether rounding to nearest even with no upper limit would land past max (saturation then
// changes the value by more than rounding); infinities do, NaN does not.
bool ref_rounds_past_max(double v, const RefFormat& f) {
    const double a = std::fabs(v);
    if (std::isnan(a)) return false;
    if (std::isinf(a)) return true;
    const double q = ref_quantum(a, f);
    return std::nearbyint(a / q) * q > f.max;
}

double ref_amax(const std::vector<float>& x, int64_t cols, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    double m = 0;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            const double a = std::fabs(static_cast<double>(x[static_cast<size_t>(r * cols + c)]));
            if (std::isnan(a)) return NAN;
            m = std::max(m, a);
        }
    return m;
}

// The scale of a block as the recipe defines it: multiplier (or divisor for nvfp4) and dequant.
struct RefScale {
    float mult, deq;
};
// NVFP4's block scale with the maximum mapped to 6 (expansion 1) or to 4 (1.5): every FP32 step
// of E4M3(amax / 6 / s_tensor * expansion) rounded from float64.
RefScale ref_nvfp4_scale(double amax, float tensor_scale, double expansion) {
    const float base = f32(static_cast<double>(f32(amax / 6.0)) / tensor_scale);
    const float bs = ref_round(f32(static_cast<double>(base) * expansion), ref_format(Format::E4M3));
    return {bs == 0 ? INFINITY : f32(static_cast<double>(bs) * tensor_scale), bs};
}

RefScale ref_block_scale(BlockScaleRule rule, double amax, Format element, float tensor_scale) {
    const RefFormat f = ref_format(element);
    switch (rule) {
        case BlockScaleRule::Fp32:
        case BlockScaleRule::Fp32PowerOfTwo: {
            float s = 1.0f;
            if (amax > 0 && std::isfinite(amax)) {
                s = f32(448.0 / amax);
                if (std::isinf(s)) s = FLT_MAX;
                if (rule == BlockScaleRule::Fp32PowerOfTwo) s = f32(std::ldexp(1.0, ref_floor_log2(s)));
            }
            return {s, f32(1.0 / s)};
        }
        case BlockScaleRule::E8M0Floor:
        case BlockScaleRule::E8M0RCeil: {
            if (!std::isfinite(amax)) return {NAN, NAN};
            int e = -127;
            if (amax > 0) {
                e = ref_floor_log2(amax) - ref_floor_log2(f.max);
                if (rule == BlockScaleRule::E8M0RCeil)
                    while (amax / std::ldexp(1.0, e) > f.max) ++e;
                e = std::clamp(e, -127, 127);
            }
            return {f32(std::ldexp(1.0, -e)), f32(std::ldexp(1.0, e))};
        }
        case BlockScaleRule::NvFp4:
        case BlockScaleRule::NvFp4FourOverSix:
            return ref_nvfp4_scale(amax, tensor_scale, 1.0);
    }
    return {1, 1};
}

struct RefResult {
    std::vector<float> out;
    ScalingStats stats;
};

// One element of x quantized with block scale s by the definitions: the FP32 value the GEMM reads.
float ref_element(const std::vector<float>& x, size_t i, RefScale s, bool divide, const QuantizeOptions& opt,
                  float* scaled_out = nullptr, float* q_out = nullptr) {
    const RefFormat f = ref_format(opt.element);
    const double v = x[i];
    const float scaled = divide ? f32(v / s.mult) : f32(v * s.mult);
    const float q = opt.stochastic ? ref_round_stochastic(scaled, f, counter_random_bits(opt.random_key, i))
                                   : ref_round(scaled, f);
    const float post = divide ? opt.tensor_scale : 1.0f;
    if (scaled_out) *scaled_out = scaled;
    if (q_out) *q_out = q;
    return f32(static_cast<double>(f32(static_cast<double>(q) * s.deq)) * post);
}

// 4 over 6, brute force: both candidates of the block, their float64 errors (squared or absolute,
// rows then columns), and the map-to-4 one only when its error is strictly lower.
RefScale ref_four_over_six(const std::vector<float>& x, int64_t cols, int64_t r0, int64_t r1, int64_t c0,
                           int64_t c1, double amax, const QuantizeOptions& opt, bool* to_four) {
    const RefScale six = ref_nvfp4_scale(amax, opt.tensor_scale, 1.0);
    const RefScale four = ref_nvfp4_scale(amax, opt.tensor_scale, 1.5);
    double err6 = 0, err4 = 0;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            const size_t i = static_cast<size_t>(r * cols + c);
            const double d6 = static_cast<double>(x[i]) - ref_element(x, i, six, true, opt);
            const double d4 = static_cast<double>(x[i]) - ref_element(x, i, four, true, opt);
            const bool mse = opt.four_over_six_error == FourOverSixError::Mse;
            err6 += mse ? d6 * d6 : std::fabs(d6);
            err4 += mse ? d4 * d4 : std::fabs(d4);
        }
    *to_four = err4 < err6;
    return *to_four ? four : six;
}

void ref_finish_stats(RefResult& res, int64_t values, int64_t nonzero, int64_t underflow, int64_t saturated,
                      double signal, double noise, const std::map<int, int64_t>& hist) {
    res.stats.values = values;
    res.stats.underflow_fraction = nonzero ? static_cast<double>(underflow) / nonzero : 0;
    res.stats.saturate_fraction = static_cast<double>(saturated) / std::max<int64_t>(1, values);
    res.stats.sqnr_db = noise > 0 ? 10 * std::log10(signal / noise) : 999;
    if (hist.empty()) return;
    res.stats.block_exponent_min = hist.begin()->first;
    res.stats.block_exponent_counts.assign(
        static_cast<size_t>(hist.rbegin()->first - hist.begin()->first + 1), 0);
    for (auto [e, n] : hist)
        res.stats.block_exponent_counts[static_cast<size_t>(e - hist.begin()->first)] = n;
}

// Quantizes x (rows x cols) in blocks by the definitions, with the statistics.
RefResult ref_quantize_blocks(const std::vector<float>& x, int64_t rows, int64_t cols, BlockShape b,
                              BlockScaleRule rule, const QuantizeOptions& opt) {
    const RefFormat f = ref_format(opt.element);
    const bool divide = rule == BlockScaleRule::NvFp4 || rule == BlockScaleRule::NvFp4FourOverSix;
    RefResult res;
    res.out.resize(x.size());
    int64_t nonzero = 0, underflow = 0, saturated = 0;
    double signal = 0, noise = 0, amax_all = 0;
    std::map<int, int64_t> hist;
    for (int64_t r0 = 0; r0 < rows; r0 += b.rows)
        for (int64_t c0 = 0; c0 < cols; c0 += b.cols) {
            const int64_t r1 = std::min(rows, r0 + b.rows), c1 = std::min(cols, c0 + b.cols);
            const double amax = ref_amax(x, cols, r0, r1, c0, c1);
            amax_all = std::isnan(amax) || std::isnan(amax_all) ? NAN : std::max(amax_all, amax);
            bool to_four = false;
            const RefScale s = rule == BlockScaleRule::NvFp4FourOverSix
                                   ? ref_four_over_six(x, cols, r0, r1, c0, c1, amax, opt, &to_four)
                                   : ref_block_scale(rule, amax, opt.element, opt.tensor_scale);
            ++res.stats.blocks;
            res.stats.blocks_scaled_to_4 += to_four;
            const double scaled_max = divide ? amax / s.mult : amax * s.mult;
            res.stats.clipped_blocks += ref_rounds_past_max(f32(scaled_max), f);
            if (s.deq > 0 && std::isfinite(s.deq)) ++hist[ref_floor_log2(s.deq)];
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t c = c0; c < c1; ++c) {
                    const size_t i = static_cast<size_t>(r * cols + c);
                    const double v = x[i];
                    float scaled = 0, q = 0;
                    const float o = ref_element(x, i, s, divide, opt, &scaled, &q);
                    res.out[i] = o;
                    saturated += ref_rounds_past_max(f32(scaled), f);
                    if (std::isfinite(v)) {
                        nonzero += v != 0;
                        underflow += v != 0 && q == 0;
                        signal += v * v;
                        noise += (v - o) * (v - o);
                    }
                }
        }
    res.stats.amax = f32(amax_all);
    ref_finish_stats(res, rows * cols, nonzero, underflow, saturated, signal, noise, hist);
    return res;
}

// ---- inputs ------------------------------------------------------------------------------------

std::vector<float> random_tensor(int64_t n, uint64_t seed, float spread_binades = 6) {
    Rng rng(seed);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = rng.normal() * std::exp2(rng.uniform(-spread_binades, spread_binades));
    return x;
}

// Random data with, in separate blocks of a 1x32-or-wider tiling: zeros, one huge outlier,
// subnormals, a NaN, an inf.
std::vector<float> adversarial_tensor(int64_t rows, int64_t cols, uint64_t seed) {
    std::vector<float> x = random_tensor(rows * cols, seed);
    auto at = [&](int64_t r, int64_t c) -> float& { return x[static_cast<size_t>(r * cols + c)]; };
    for (int64_t c = 0; c < cols; ++c) at(0, c) = 0.0f;  // an all-zero row
    at(1, 3) = 3.0e30f;                                  // one outlier
    for (int64_t c = 0; c < std::min<int64_t>(cols, 40); ++c)
        at(2, c) = std::ldexp(1.0f + c, -140);  // subnormals
    at(3, 5) = NAN;
    at(rows - 1, cols - 1) = INFINITY;
    at(rows - 2, 0) = -INFINITY;
    return x;
}

bool same_bits(float a, float b) {
    return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

int count_mismatches(const std::vector<float>& a, const std::vector<float>& b, QString* first) {
    int n = 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (!same_bits(a[i], b[i])) {
            if (n++ == 0 && first)
                *first = QString("index %1: got %2, reference %3")
                             .arg(i)
                             .arg(a[i], 0, 'g', 9)
                             .arg(b[i], 0, 'g', 9);
        }
    return n;
}

void compare_stats(const ScalingStats& got, const ScalingStats& ref) {
    QVERIFY2(same_bits(got.amax, ref.amax), qPrintable(QString("amax %1 vs %2").arg(got.amax).arg(ref.amax)));
    QCOMPARE(got.values, ref.values);
    QCOMPARE(got.underflow_fraction, ref.underflow_fraction);
    QCOMPARE(got.saturate_fraction, ref.saturate_fraction);
    QVERIFY2(std::fabs(got.sqnr_db - ref.sqnr_db) <= 1e-9 * std::max(1.0, std::fabs(ref.sqnr_db)),
             qPrintable(QString("sqnr %1 vs %2").arg(got.sqnr_db).arg(ref.sqnr_db)));
    QCOMPARE(got.blocks, ref.blocks);
    QCOMPARE(got.clipped_blocks, ref.clipped_blocks);
    QCOMPARE(got.block_exponent_min, ref.block_exponent_min);
    QCOMPARE(got.block_exponent_counts, ref.block_exponent_counts);
    QCOMPARE(got.blocks_scaled_to_4, ref.blocks_scaled_to_4);
}

void check_blocks(const std::vector<float>& x, int64_t rows, int64_t cols, BlockShape b, BlockScaleRule rule,
                  QuantizeOptions opt) {
    ScalingStats stats;
    opt.stats = &stats;
    std::vector<float> out(x.size());
    quantize_blocks(x.data(), out.data(), rows, cols, b, rule, opt);
    const RefResult ref = ref_quantize_blocks(x, rows, cols, b, rule, opt);
    QString first;
    const int bad = count_mismatches(out, ref.out, &first);
    QVERIFY2(bad == 0, qPrintable(QString("%1 mismatches, first %2").arg(bad).arg(first)));
    compare_stats(stats, ref.stats);
    // In place gives the same.
    std::vector<float> inplace = x;
    quantize_blocks(inplace.data(), inplace.data(), rows, cols, b, rule, opt);
    QCOMPARE(count_mismatches(inplace, out, nullptr), 0);
}

}  // namespace

class TestBlockQuantize : public QObject {
    Q_OBJECT

private slots:
    void cleanup() { set_thread_count(0); }

    void perTensor_data() {
        QTest::addColumn<int>("element");
        QTest::addColumn<int>("margin");
        QTest::addColumn<bool>("adversarial");
        for (Format f : {Format::E4M3, Format::E5M2})
            for (int margin : {0, 1})
                for (bool adv : {false, true})
                    QTest::addRow("%s margin %d%s", f == Format::E4M3 ? "e4m3" : "e5m2", margin,
                                  adv ? " adversarial" : "")
                        << static_cast<int>(f) << margin << adv;
    }
    void perTensor() {
        QFETCH(int, element);
        QFETCH(int, margin);
        QFETCH(bool, adversarial);
        const Format f = static_cast<Format>(element);
        const int64_t rows = 37, cols = 301;
        std::vector<float> x =
            adversarial ? adversarial_tensor(rows, cols, 5) : random_tensor(rows * cols, 4, 12);
        const float amax = amax_of(x.data(), rows * cols);
        const double ref_amax_v = ref_amax(x, cols, 0, rows, 0, cols);
        QVERIFY(same_bits(amax, f32(ref_amax_v)));
        // A finite amax (the adversarial tensor's is NaN: the previous scale stays).
        const float finite_amax = adversarial ? 3.0e30f : amax;
        const float scale = per_tensor_scale(finite_amax, element_max(f), margin, 0.5f);
        QCOMPARE(scale,
                 f32(static_cast<double>(f32(ref_format(f).max / finite_amax)) / std::ldexp(1.0, margin)));
        QCOMPARE(per_tensor_scale(amax, element_max(f), margin, 0.5f), adversarial ? 0.5f : scale);
        QuantizeOptions opt;
        opt.element = f;
        ScalingStats stats;
        opt.stats = &stats;
        std::vector<float> out(x.size());
        quantize_per_tensor(x.data(), out.data(), rows * cols, scale, amax, opt);
        // The reference: one "block" holding the whole tensor with that scale.
        std::vector<float> ref(x.size());
        const float inv = f32(1.0 / scale);
        int64_t saturated = 0, nonzero = 0, underflow = 0;
        double signal = 0, noise = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const float s = f32(static_cast<double>(x[i]) * scale);
            const float q = ref_round(s, ref_format(f));
            ref[i] = f32(static_cast<double>(q) * inv);
            saturated += ref_rounds_past_max(s, ref_format(f));
            if (std::isfinite(x[i])) {
                nonzero += x[i] != 0;
                underflow += x[i] != 0 && q == 0;
                signal += static_cast<double>(x[i]) * x[i];
                noise += (static_cast<double>(x[i]) - ref[i]) * (static_cast<double>(x[i]) - ref[i]);
            }
        }
        QString first;
        const int bad = count_mismatches(out, ref, &first);
        QVERIFY2(bad == 0, qPrintable(QString("%1 mismatches, first %2").arg(bad).arg(first)));
        QCOMPARE(stats.scale, scale);
        QCOMPARE(stats.saturate_fraction, static_cast<double>(saturated) / x.size());
        QCOMPARE(stats.underflow_fraction, static_cast<double>(underflow) / nonzero);
        QVERIFY(std::fabs(stats.sqnr_db - 10 * std::log10(signal / noise)) < 1e-9 * std::fabs(stats.sqnr_db));
        QCOMPARE(stats.blocks, int64_t{0});
    }

    void perTensorGuards() {
        QCOMPARE(per_tensor_scale(0.0f, 448.0f, 0, 2.0f), 2.0f);
        QCOMPARE(per_tensor_scale(INFINITY, 448.0f, 0, 2.0f), 2.0f);
        QCOMPARE(per_tensor_scale(NAN, 448.0f, 0, 2.0f), 2.0f);
        QCOMPARE(per_tensor_scale(1e-45f, 448.0f, 0, 2.0f), FLT_MAX);  // 448 / 2^-149 overflows
        // All zeros: nothing underflows (no non-zero value), the error is zero: SQNR 999.
        std::vector<float> z(100, 0.0f), out(100);
        ScalingStats st;
        QuantizeOptions opt;
        opt.stats = &st;
        quantize_per_tensor(z.data(), out.data(), 100, 1.0f, 0.0f, opt);
        QCOMPARE(st.sqnr_db, 999.0);
        QCOMPARE(st.underflow_fraction, 0.0);
        // Scale 1: E4M3 gradients of 1e-4 underflow (failure preset (a)).
        std::vector<float> g(100, 1e-4f);
        quantize_per_tensor(g.data(), out.data(), 100, 1.0f, 1e-4f, opt);
        QCOMPARE(st.underflow_fraction, 1.0);
        // Saturation counts what clamping changes beyond rounding: 450 and 464 (a tie, to the
        // even 448) round to 448 anyway; 465, 1e6 and inf are clamped.
        const std::vector<float> top{450.0f, 464.0f, 465.0f, 1e6f, INFINITY, NAN, -470.0f, 448.0f};
        std::vector<float> top_out(top.size());
        quantize_per_tensor(top.data(), top_out.data(), int64_t(top.size()), 1.0f, INFINITY, opt);
        QCOMPARE(st.saturate_fraction, 4.0 / 8.0);
        // E2M1: 6 is odd, so the tie at 7 goes up to 8 and saturates; 6.9 rounds to 6.
        opt.element = Format::E2M1;
        const std::vector<float> fp4{6.9f, 7.0f, 6.5f, 100.0f};
        std::vector<float> fp4_out(fp4.size());
        quantize_per_tensor(fp4.data(), fp4_out.data(), int64_t(fp4.size()), 1.0f, 100.0f, opt);
        QCOMPARE(st.saturate_fraction, 2.0 / 4.0);
    }

    void blocks_data() {
        QTest::addColumn<int>("rule");
        QTest::addColumn<int>("element");
        QTest::addColumn<qlonglong>("block_rows");
        QTest::addColumn<qlonglong>("block_cols");
        QTest::addColumn<bool>("adversarial");
        struct Case {
            const char* name;
            BlockScaleRule rule;
            Format element;
            int64_t br, bc;
        };
        const Case cases[] = {
            {"fp8-block 1x128", BlockScaleRule::Fp32, Format::E4M3, 1, 128},
            {"fp8-block 128x1", BlockScaleRule::Fp32, Format::E4M3, 128, 1},
            {"fp8-block 128x128", BlockScaleRule::Fp32, Format::E4M3, 128, 128},
            {"fp8-block pow2 1x128", BlockScaleRule::Fp32PowerOfTwo, Format::E4M3, 1, 128},
            {"fp8-block pow2 128x128", BlockScaleRule::Fp32PowerOfTwo, Format::E4M3, 128, 128},
            {"mx floor e4m3 1x32", BlockScaleRule::E8M0Floor, Format::E4M3, 1, 32},
            {"mx floor e4m3 32x1", BlockScaleRule::E8M0Floor, Format::E4M3, 32, 1},
            {"mx rceil e4m3 1x32", BlockScaleRule::E8M0RCeil, Format::E4M3, 1, 32},
            {"mx rceil e4m3 32x1", BlockScaleRule::E8M0RCeil, Format::E4M3, 32, 1},
            {"mx floor e5m2 1x32", BlockScaleRule::E8M0Floor, Format::E5M2, 1, 32},
            {"mx rceil e5m2 32x1", BlockScaleRule::E8M0RCeil, Format::E5M2, 32, 1},
            {"nvfp4 1x16", BlockScaleRule::NvFp4, Format::E2M1, 1, 16},
            {"nvfp4 16x1", BlockScaleRule::NvFp4, Format::E2M1, 16, 1},
            {"nvfp4 16x16", BlockScaleRule::NvFp4, Format::E2M1, 16, 16},
            {"mxfp4 floor 1x32", BlockScaleRule::E8M0Floor, Format::E2M1, 1, 32},
            {"mxfp4 floor 32x1", BlockScaleRule::E8M0Floor, Format::E2M1, 32, 1},
            {"mxfp4 rceil 1x32", BlockScaleRule::E8M0RCeil, Format::E2M1, 1, 32},
            {"mxfp4 rceil 32x1", BlockScaleRule::E8M0RCeil, Format::E2M1, 32, 1},
            {"nvfp4 4over6 1x16", BlockScaleRule::NvFp4FourOverSix, Format::E2M1, 1, 16},
            {"nvfp4 4over6 16x1", BlockScaleRule::NvFp4FourOverSix, Format::E2M1, 16, 1},
            {"nvfp4 4over6 16x16", BlockScaleRule::NvFp4FourOverSix, Format::E2M1, 16, 16},
        };
        for (const Case& c : cases)
            for (bool adv : {false, true})
                QTest::addRow("%s%s", c.name, adv ? " adversarial" : "")
                    << static_cast<int>(c.rule) << static_cast<int>(c.element) << qlonglong(c.br)
                    << qlonglong(c.bc) << adv;
    }
    void blocks() {
        QFETCH(int, rule);
        QFETCH(int, element);
        QFETCH(qlonglong, block_rows);
        QFETCH(qlonglong, block_cols);
        QFETCH(bool, adversarial);
        // Neither dimension a multiple of any block: every row and column ends in a tail block.
        const int64_t rows = 150, cols = 301;
        const std::vector<float> x =
            adversarial ? adversarial_tensor(rows, cols, 9) : random_tensor(rows * cols, 8);
        QuantizeOptions opt;
        opt.element = static_cast<Format>(element);
        const BlockScaleRule r = static_cast<BlockScaleRule>(rule);
        if (r == BlockScaleRule::NvFp4 || r == BlockScaleRule::NvFp4FourOverSix)
            opt.tensor_scale = nvfp4_tensor_scale(adversarial ? 3.0e30f : amax_of(x.data(), rows * cols),
                                                  r == BlockScaleRule::NvFp4FourOverSix);
        check_blocks(x, rows, cols, {block_rows, block_cols}, r, opt);
        if (r != BlockScaleRule::NvFp4FourOverSix) return;
        // The other error measure, and stochastic rounding (both candidates draw the same bits).
        opt.four_over_six_error = FourOverSixError::Mae;
        check_blocks(x, rows, cols, {block_rows, block_cols}, r, opt);
        opt.stochastic = true;
        opt.random_key = 77;
        check_blocks(x, rows, cols, {block_rows, block_cols}, r, opt);
    }

    void nvfp4Stochastic() {
        const int64_t rows = 64, cols = 80;
        const std::vector<float> x = random_tensor(rows * cols, 21, 3);
        QuantizeOptions opt;
        opt.element = Format::E2M1;
        opt.stochastic = true;
        opt.random_key = 0x1234;
        opt.tensor_scale = nvfp4_tensor_scale(amax_of(x.data(), rows * cols));
        check_blocks(x, rows, cols, {1, 16}, BlockScaleRule::NvFp4, opt);
        // Unbiased: the mean over many keys of a value between two grid points tends to it.
        std::vector<float> v(16, 0.0f);
        v[0] = 6.0f;  // block amax 6 with st = 2^-8: block scale 256, so the grid is E2M1's exactly
        v[1] = 2.4f;  // between 2 and 3
        double sum = 0;
        const int draws = 4000;
        QuantizeOptions o2 = opt;
        o2.tensor_scale = 1.0f / 256.0f;
        std::vector<float> out(16);
        for (int k = 0; k < draws; ++k) {
            o2.random_key = static_cast<uint64_t>(k);
            quantize_blocks(v.data(), out.data(), 1, 16, {1, 16}, BlockScaleRule::NvFp4, o2);
            QVERIFY(out[1] == 2.0f || out[1] == 3.0f);
            sum += out[1];
        }
        QVERIFY2(std::fabs(sum / draws - 2.4) < 0.03, qPrintable(QString::number(sum / draws)));
    }

    void fourOverSixChoosesTheLowerError() {
        // s_tensor = amax / (256 * 6) under 4 over 6 (448 * 6 otherwise).
        QCOMPARE(nvfp4_tensor_scale(3.0f, true), f32(3.0 / 1536.0));
        QCOMPARE(nvfp4_tensor_scale(3.0f, false), f32(3.0 / 2688.0));
        QCOMPARE(nvfp4_tensor_scale(0.0f, true), 1.0f);
        // s_tensor 2^-8 and block amax 6: the map-to-6 scale is 256 (the E2M1 grid itself), the
        // map-to-4 one 384 (the grid times 1.5: 0.75, 1.5, 2.25, 3, 4.5, 6, 9).
        QuantizeOptions opt;
        opt.element = Format::E2M1;
        opt.tensor_scale = 1.0f / 256.0f;
        ScalingStats st;
        opt.stats = &st;
        const BlockScale four = nvfp4_block_scale(6.0f, opt.tensor_scale, kFourOverSixExpansion);
        QCOMPARE(four.dequant, 384.0f);
        QCOMPARE(four.multiplier, 1.5f);
        auto quantize = [&](std::vector<float> block) {
            std::vector<float> out(block.size());
            quantize_blocks(block.data(), out.data(), 1, int64_t(block.size()), {1, 16},
                            BlockScaleRule::NvFp4FourOverSix, opt);
            return out;
        };
        // 5 lies halfway between 4 and 6 (error 1 on the 6 grid; 4.5 on the 4 grid, error 0.5).
        std::vector<float> fives(16, 5.0f);
        fives[0] = 6.0f;
        std::vector<float> got = quantize(fives);
        QCOMPARE(st.blocks_scaled_to_4, int64_t{1});
        QCOMPARE(got[0], 6.0f);
        QCOMPARE(got[1], 4.5f);
        // Values on the E2M1 grid have no error at 6; at 4, 2 becomes 2.25: 6 stays.
        got = quantize({6.0f, 3.0f, 2.0f, 1.0f, 0.5f, -4.0f, 0.0f, 1.5f});
        QCOMPARE(st.blocks_scaled_to_4, int64_t{0});
        QCOMPARE(got, (std::vector<float>{6.0f, 3.0f, 2.0f, 1.0f, 0.5f, -4.0f, 0.0f, 1.5f}));
        // A tie keeps 6: an all-zero block, and {6, 3} (exact on both grids).
        quantize(std::vector<float>(16, 0.0f));
        QCOMPARE(st.blocks_scaled_to_4, int64_t{0});
        got = quantize({6.0f, 3.0f});
        QCOMPARE(st.blocks_scaled_to_4, int64_t{0});
        QCOMPARE(st.block_exponent_counts, (std::vector<int64_t>{1}));
        QCOMPARE(st.block_exponent_min, 8);  // the scale 256, not 384
        // NaN in a block: its scale and values are NaN, its errors too, and it counts as keeping 6;
        // the NaN-free block beside it chooses 4.
        std::vector<float> two(32, 5.0f);
        two[0] = two[16] = 6.0f;
        two[20] = NAN;
        std::vector<float> out(two.size());
        quantize_blocks(two.data(), out.data(), 1, 32, {1, 16}, BlockScaleRule::NvFp4FourOverSix, opt);
        QCOMPARE(st.blocks_scaled_to_4, int64_t{1});
        QCOMPARE(out[1], 4.5f);
        QVERIFY(std::isnan(out[17]));
        // On random data both choices occur, and 4 over 6 never has a larger error than 6 alone.
        const std::vector<float> x = random_tensor(64 * 96, 13, 3);
        ScalingStats six_stats, best_stats;
        std::vector<float> q6(x.size()), q46(x.size());
        opt.tensor_scale = nvfp4_tensor_scale(amax_of(x.data(), int64_t(x.size())), true);
        opt.stats = &six_stats;
        quantize_blocks(x.data(), q6.data(), 64, 96, {1, 16}, BlockScaleRule::NvFp4, opt);
        opt.stats = &best_stats;
        quantize_blocks(x.data(), q46.data(), 64, 96, {1, 16}, BlockScaleRule::NvFp4FourOverSix, opt);
        QVERIFY2(best_stats.blocks_scaled_to_4 > 0 && best_stats.blocks_scaled_to_4 < best_stats.blocks,
                 qPrintable(QString::number(best_stats.blocks_scaled_to_4)));
        QVERIFY2(best_stats.sqnr_db > six_stats.sqnr_db,
                 qPrintable(QString("%1 vs %2").arg(best_stats.sqnr_db).arg(six_stats.sqnr_db)));
    }

    void mxfp4ScalesAndElements() {
        // E2M1's emax is 2: a block maximum of 6 gets X = 2^(2-2) = 1 under both roundings; 7 keeps
        // X = 1 under FLOOR (7 clips to 6) and gets 2 under RCEIL (7/2 = 3.5, a tie, goes to 4: 8).
        QCOMPARE(element_emax(Format::E2M1), 2);
        QCOMPARE(int(mx_scale_code(6.0f, Format::E2M1, false)), 127);
        QCOMPARE(int(mx_scale_code(6.0f, Format::E2M1, true)), 127);
        QCOMPARE(int(mx_scale_code(7.0f, Format::E2M1, false)), 127);
        QCOMPARE(int(mx_scale_code(7.0f, Format::E2M1, true)), 128);
        QCOMPARE(int(mx_scale_code(4.0f, Format::E2M1, false)), 127);
        QCOMPARE(int(mx_scale_code(3.9f, Format::E2M1, false)), 126);  // 2^(1-2): 3.9 / 0.5 = 7.8 clips
        QCOMPARE(int(mx_scale_code(3.9f, Format::E2M1, true)), 127);   // 3.9 fits under 1
        QCOMPARE(int(mx_scale_code(1e-40f, Format::E2M1, true)), 0);   // clamped at 2^-127
        QCOMPARE(int(mx_scale_code(INFINITY, Format::E2M1, false)), 0xFF);
        QuantizeOptions opt;
        opt.element = Format::E2M1;
        ScalingStats st;
        opt.stats = &st;
        // Block 0: 7 and E2M1's grid; block 1: zeros; block 2: a NaN; block 3: 0.2 underflows under X = 1.
        std::vector<float> x(128, 0.0f), out(128);
        for (int i = 0; i < 32; ++i)
            x[i] = std::array<float, 8>{7.0f, 0.5f, 1.0f, 1.5f, 2.0f, -3.0f, 4.0f, 0.2f}[i % 8];
        x[70] = NAN;
        x[96] = 6.0f;
        x[97] = 0.2f;
        quantize_blocks(x.data(), out.data(), 1, 128, {1, 32}, BlockScaleRule::E8M0Floor, opt);
        QCOMPARE(out[0], 6.0f);  // saturated
        QCOMPARE(out[1], 0.5f);
        QCOMPARE(out[5], -3.0f);
        QCOMPARE(out[7], 0.0f);  // 0.2 is below half of the smallest subnormal 0.5
        for (int i = 32; i < 64; ++i) QCOMPARE(out[i], 0.0f);
        for (int i = 64; i < 96; ++i) QVERIFY(std::isnan(out[i]));
        QCOMPARE(out[96], 6.0f);
        QCOMPARE(out[97], 0.0f);
        QCOMPARE(st.clipped_blocks, int64_t{1});
        QCOMPARE(st.saturate_fraction, 4.0 / 128.0);  // the four 7s
        quantize_blocks(x.data(), out.data(), 1, 128, {1, 32}, BlockScaleRule::E8M0RCeil, opt);
        QCOMPARE(out[0], 8.0f);  // 7 / 2 = 3.5 rounds to the even 4
        QCOMPARE(out[1], 0.0f);  // 0.5 / 2 = 0.25, a tie between 0 and 0.5: to the even 0
        QCOMPARE(out[2], 1.0f);
        QCOMPARE(st.clipped_blocks, int64_t{0});
        QCOMPARE(st.saturate_fraction, 0.0);
    }

    void mxfp4Stochastic() {
        const int64_t rows = 32, cols = 96;
        QuantizeOptions opt;
        opt.element = Format::E2M1;
        opt.stochastic = true;
        opt.random_key = 0x55;
        check_blocks(random_tensor(rows * cols, 23, 3), rows, cols, {1, 32}, BlockScaleRule::E8M0RCeil, opt);
        check_blocks(random_tensor(rows * cols, 24, 3), rows, cols, {32, 1}, BlockScaleRule::E8M0Floor, opt);
        // Unbiased: a block maximum of 6 gives X = 1, so 2.4 lies between the grid points 2 and 3.
        std::vector<float> v(32, 0.0f), out(32);
        v[0] = 6.0f;
        v[1] = 2.4f;
        v[2] = -0.3f;  // between 0 and -0.5
        double sum = 0, sum_small = 0;
        const int draws = 4000;
        for (int k = 0; k < draws; ++k) {
            opt.random_key = static_cast<uint64_t>(k);
            quantize_blocks(v.data(), out.data(), 1, 32, {1, 32}, BlockScaleRule::E8M0RCeil, opt);
            QVERIFY(out[1] == 2.0f || out[1] == 3.0f);
            QVERIFY(out[2] == 0.0f || out[2] == -0.5f);
            sum += out[1];
            sum_small += out[2];
        }
        QVERIFY2(std::fabs(sum / draws - 2.4) < 0.03, qPrintable(QString::number(sum / draws)));
        QVERIFY2(std::fabs(sum_small / draws + 0.3) < 0.02, qPrintable(QString::number(sum_small / draws)));
    }

    void fixedHadamardIsThePlainMatrix() {
        const std::array<float, 16> fixed = fixed_hadamard_signs();
        for (float s : fixed) QCOMPARE(s, 1.0f);
        // Small integers: every sum of the transform is exact in FP32, so it equals Sylvester's
        // H16 (H[i][j] = (-1)^popcount(i & j)) divided by 4, computed in float64, bit for bit.
        const int64_t rows = 48, cols = 5;
        Rng rng(8);
        std::vector<float> x(static_cast<size_t>(rows * cols)), hx(x.size()), back(x.size());
        for (float& v : x) v = std::round(rng.uniform(-50.0f, 50.0f));
        hadamard16_along_rows(x.data(), hx.data(), rows, cols, fixed);
        for (int64_t g = 0; g < rows / 16; ++g)
            for (int64_t i = 0; i < 16; ++i)
                for (int64_t c = 0; c < cols; ++c) {
                    double ref = 0;
                    for (int64_t j = 0; j < 16; ++j)
                        ref += (std::popcount(static_cast<unsigned>(i & j)) % 2 ? -1.0 : 1.0) *
                               x[static_cast<size_t>((g * 16 + j) * cols + c)];
                    QCOMPARE(hx[static_cast<size_t>((g * 16 + i) * cols + c)], f32(ref / 4.0));
                }
        // Orthogonal and symmetric: applied twice it gives back x exactly.
        hadamard16_along_rows(hx.data(), back.data(), rows, cols, fixed);
        QCOMPARE(back, x);
        // The same for every seed: the random signs differ from it.
        QVERIFY(hadamard_signs(42) != fixed);
    }

    void mxScaleCodes() {
        // NaN or inf in a block: the NaN scale 0xFF, and the whole block dequantizes to NaN.
        QCOMPARE(int(mx_scale_code(NAN, Format::E4M3, false)), 0xFF);
        QCOMPARE(int(mx_scale_code(INFINITY, Format::E4M3, true)), 0xFF);
        QCOMPARE(int(mx_scale_code(0.0f, Format::E4M3, true)), 0);
        // amax 448: FLOOR gives 2^(8-8) = 1 and RCEIL too (448 / 1 fits). 449: FLOOR still 1
        // (449 clips to 448), RCEIL 2.
        QCOMPARE(int(mx_scale_code(448.0f, Format::E4M3, false)), 127);
        QCOMPARE(int(mx_scale_code(448.0f, Format::E4M3, true)), 127);
        QCOMPARE(int(mx_scale_code(449.0f, Format::E4M3, false)), 127);
        QCOMPARE(int(mx_scale_code(449.0f, Format::E4M3, true)), 128);
        QCOMPARE(int(mx_scale_code(FLT_MAX, Format::E4M3, true)), 127 + 120);
        QCOMPARE(int(mx_scale_code(1e-45f, Format::E4M3, false)), 0);  // clamped at 2^-127
        std::vector<float> x(64, 1.0f), out(64);
        x[40] = NAN;
        quantize_blocks(x.data(), out.data(), 1, 64, {1, 32}, BlockScaleRule::E8M0RCeil, {});
        for (int i = 0; i < 32; ++i) QCOMPARE(out[i], 1.0f);
        for (int i = 32; i < 64; ++i) QVERIFY(std::isnan(out[i]));
        // FLOOR clips block maxima that RCEIL keeps (failure preset (c)).
        std::vector<float> y = random_tensor(32 * 64, 3);
        ScalingStats floor_stats, rceil_stats;
        QuantizeOptions opt;
        opt.stats = &floor_stats;
        std::vector<float> yq(y.size());
        quantize_blocks(y.data(), yq.data(), 32, 64, {1, 32}, BlockScaleRule::E8M0Floor, opt);
        opt.stats = &rceil_stats;
        quantize_blocks(y.data(), yq.data(), 32, 64, {1, 32}, BlockScaleRule::E8M0RCeil, opt);
        QVERIFY(floor_stats.clipped_blocks > 0);
        QCOMPARE(rceil_stats.clipped_blocks, int64_t{0});
        QCOMPARE(rceil_stats.saturate_fraction, 0.0);
    }

    void mxRowwiseAndColumnwiseCopiesDiffer() {
        const int64_t rows = 64, cols = 96;
        std::vector<float> x = random_tensor(rows * cols, 77);
        std::vector<float> xt(x.size());
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c)
                xt[static_cast<size_t>(c * rows + r)] = x[static_cast<size_t>(r * cols + c)];
        std::vector<float> by_cols(x.size()), by_rows(x.size()), of_transpose(x.size());
        quantize_blocks(x.data(), by_cols.data(), rows, cols, tile_along(SumAlong::Cols, 32),
                        BlockScaleRule::E8M0Floor, {});
        quantize_blocks(x.data(), by_rows.data(), rows, cols, tile_along(SumAlong::Rows, 32),
                        BlockScaleRule::E8M0Floor, {});
        QVERIFY(count_mismatches(by_cols, by_rows, nullptr) > 0);
        // The column-wise copy is the row-wise copy of the transpose, transposed back.
        quantize_blocks(xt.data(), of_transpose.data(), cols, rows, tile_along(SumAlong::Cols, 32),
                        BlockScaleRule::E8M0Floor, {});
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c)
                QCOMPARE(by_rows[static_cast<size_t>(r * cols + c)],
                         of_transpose[static_cast<size_t>(c * rows + r)]);
    }

    void threadCountDoesNotMatter() {
        const int64_t rows = 512, cols = 784;
        const std::vector<float> x = random_tensor(rows * cols, 31);
        auto run = [&](int threads, BlockShape b, BlockScaleRule rule, bool stochastic, ScalingStats& st) {
            set_thread_count(threads);
            QuantizeOptions opt;
            opt.element = Format::E2M1;  // nvfp4, with or without 4 over 6
            opt.stochastic = stochastic;
            opt.random_key = 99;
            opt.tensor_scale = 0.01f;
            opt.stats = &st;
            std::vector<float> out(x.size());
            quantize_blocks(x.data(), out.data(), rows, cols, b, rule, opt);
            return out;
        };
        for (BlockShape b : {BlockShape{1, 32}, BlockShape{32, 1}, BlockShape{16, 16}}) {
            ScalingStats s1, s2;
            const auto one = run(1, b, BlockScaleRule::NvFp4, true, s1);
            const auto two = run(2, b, BlockScaleRule::NvFp4, true, s2);
            QCOMPARE(count_mismatches(one, two, nullptr), 0);
            QCOMPARE(s1.sqnr_db, s2.sqnr_db);  // bit for bit: summed per panel in panel order
            QCOMPARE(s1.block_exponent_counts, s2.block_exponent_counts);
            ScalingStats f1, f2;
            const auto four1 = run(1, b, BlockScaleRule::NvFp4FourOverSix, true, f1);
            const auto four2 = run(2, b, BlockScaleRule::NvFp4FourOverSix, true, f2);
            QCOMPARE(count_mismatches(four1, four2, nullptr), 0);
            QCOMPARE(f1.blocks_scaled_to_4, f2.blocks_scaled_to_4);
            QCOMPARE(f1.sqnr_db, f2.sqnr_db);
        }
        set_thread_count(1);
        std::vector<float> a(x.size()), b2(x.size());
        ScalingStats t1, t2;
        QuantizeOptions opt;
        opt.stats = &t1;
        quantize_per_tensor(x.data(), a.data(), rows * cols, 3.0f, amax_of(x.data(), rows * cols), opt);
        set_thread_count(2);
        opt.stats = &t2;
        quantize_per_tensor(x.data(), b2.data(), rows * cols, 3.0f, amax_of(x.data(), rows * cols), opt);
        QCOMPARE(count_mismatches(a, b2, nullptr), 0);
        QCOMPARE(t1.sqnr_db, t2.sqnr_db);
    }

    void hadamardIsOrthogonal() {
        const int64_t rows = 256 + 7, n1 = 24, n2 = 40;  // a tail of 7 rows stays as it is
        const std::vector<float> dy = random_tensor(rows * n1, 1, 2), x = random_tensor(rows * n2, 2, 2);
        const auto signs = hadamard_signs(42);
        int minus = 0;
        for (float s : signs) {
            QVERIFY(s == 1.0f || s == -1.0f);
            minus += s < 0;
        }
        QVERIFY(minus > 0 && minus < 16);
        QVERIFY(hadamard_signs(43) != signs);
        std::vector<float> hdy(dy.size()), hx(x.size());
        hadamard16_along_rows(dy.data(), hdy.data(), rows, n1, signs);
        hadamard16_along_rows(x.data(), hx.data(), rows, n2, signs);
        for (int64_t r = 256; r < rows; ++r)
            QCOMPARE(hx[static_cast<size_t>(r * n2)], x[static_cast<size_t>(r * n2)]);
        // (T dy)ᵀ (T x) = dyᵀ x, within FP32 rounding of the transform (relative to Σ|dy||x|).
        for (int64_t i = 0; i < n1; ++i)
            for (int64_t j = 0; j < n2; ++j) {
                double exact = 0, transformed = 0, magnitude = 0;
                for (int64_t r = 0; r < rows; ++r) {
                    const double a = dy[static_cast<size_t>(r * n1 + i)],
                                 b = x[static_cast<size_t>(r * n2 + j)];
                    exact += a * b;
                    magnitude += std::fabs(a * b);
                    transformed += static_cast<double>(hdy[static_cast<size_t>(r * n1 + i)]) *
                                   hx[static_cast<size_t>(r * n2 + j)];
                }
                QVERIFY2(std::fabs(exact - transformed) <= 1e-6 * magnitude,
                         qPrintable(QString("%1 vs %2").arg(exact).arg(transformed)));
            }
        // H16/4 with all signs +1 is its own inverse; with signs, T⁻¹ = diag(signs) · H16/4.
        std::array<float, 16> ones;
        ones.fill(1.0f);
        std::vector<float> back(x.size());
        hadamard16_along_rows(hx.data(), back.data(), rows, n2, ones);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < n2; ++c) {
                const size_t i = static_cast<size_t>(r * n2 + c);
                const float restored = r < 256 ? back[i] * signs[static_cast<size_t>(r % 16)] : back[i];
                // FP32 rounding of two transforms, relative to the largest value of the 16-row group.
                float group_max = 0;
                for (int64_t g = r / 16 * 16; g < std::min(rows, r / 16 * 16 + 16); ++g)
                    group_max = std::max(group_max, std::fabs(x[static_cast<size_t>(g * n2 + c)]));
                QVERIFY2(std::fabs(restored - x[i]) <= 2e-6f * group_max,
                         qPrintable(QString("row %1: %2 vs %3").arg(r).arg(restored).arg(x[i])));
            }
        // A single non-zero value spreads over its 16 rows as +-value/4.
        std::vector<float> e(16, 0.0f), he(16);
        e[0] = 1.0f;
        hadamard16_along_rows(e.data(), he.data(), 16, 1, ones);
        for (float v : he) QCOMPARE(v, 0.25f);
    }
};

QTEST_GUILESS_MAIN(TestBlockQuantize)
#include "test_block_quantize.moc"
