// Checks core/backend/cuda/fp8_math.h on the host, where it is the CUDA FP8 kernels' CPU
// reference, against the CPU quantizer the device must reproduce: the E4M3 / E5M2 encoding
// against core/numeric's byte layout (every code) and element_formats.h's saturating rounding
// (every code's neighbourhood, the midpoints, inf, NaN, signed zero, random bit patterns),
// quantize-dequantize against block_quantize's quantize_per_tensor bit for bit, and the
// per-tensor state (begin, amax, end) against GemmQuantizer over sequences of amaxes with zeros,
// infinities, NaN and scale overflows, for fp8-delayed (max and most recent) and fp8-current.
// Needs no GPU.
#include <QtTest/QtTest>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/backend/cuda/fp8_math.h"
#include "core/common/rng.h"
#include "core/numeric/element_formats.h"
#include "core/numeric/fp8.h"
#include "core/precision/block_quantize.h"
#include "core/precision/gemm_quantizer.h"

using namespace mpwb;
using namespace mpwb::cuda;

namespace {

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
bool same_value(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

template <Fp8Element kElement, class Spec>
QString first_rounding_mismatch(const std::vector<float>& values) {
    for (float s : values) {
        const float device = fp8_decode<kElement>(fp8_encode<kElement>(s));
        const float cpu = round_element_saturating<Spec>(s);
        if (!same_value(device, cpu))
            return QString("s=%1 (0x%2): device %3, CPU %4")
                .arg(double(s), 0, 'g', 9)
                .arg(bits(s), 8, 16, QChar('0'))
                .arg(double(device), 0, 'g', 9)
                .arg(double(cpu), 0, 'g', 9);
    }
    return {};
}

// Every code's value, its neighbours a few ulps away, the midpoints to the next code and just
// beside them, both signs; plus the specials and random bit patterns.
template <Fp8Element kElement>
std::vector<float> rounding_cases() {
    std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e30f, -1e-30f, 1e-45f};
    for (int b = 0; b < 128; ++b) {
        const float x = fp8_decode<kElement>(static_cast<uint8_t>(b));
        const float next = fp8_decode<kElement>(static_cast<uint8_t>(b + 1));
        if (std::isnan(x)) continue;
        std::vector<float> around = {x};
        for (int k = 1; k <= 3; ++k) {
            around.push_back(std::bit_cast<float>(bits(x) + k));
            if (bits(x) >= static_cast<uint32_t>(k)) around.push_back(std::bit_cast<float>(bits(x) - k));
        }
        if (std::isfinite(next) && b < 127) {
            const float mid = x + (next - x) * 0.5f;  // exact: one more bit than the format
            around.insert(around.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)});
        }
        for (float a : around) v.insert(v.end(), {a, -a});
    }
    Rng rng(30);
    for (int i = 0; i < 200000; ++i) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng.next_u64())));
    return v;
}

}  // namespace

class TestFp8Math : public QObject {
    Q_OBJECT

private slots:
    void bytes_are_the_ocp_layout();
    void rounding_matches_element_formats();
    void quantize_dequantize_matches_quantize_per_tensor();
    void scale_rule_matches_per_tensor_scale();
    void delayed_state_matches_gemm_quantizer();
    void current_state_matches_gemm_quantizer();
};

// The bytes the GEMM reads are the formats' own: each code decodes as core/numeric decodes it,
// and encoding a finite code's value gives the code back.
void TestFp8Math::bytes_are_the_ocp_layout() {
    for (int b = 0; b < 256; ++b) {
        const auto byte = static_cast<uint8_t>(b);
        QVERIFY2(same_value(fp8_decode<Fp8Element::E4M3>(byte), e4m3_bits_to_float(byte)),
                 qPrintable(QString::number(b)));
        QVERIFY2(same_value(fp8_decode<Fp8Element::E5M2>(byte), e5m2_bits_to_float(byte)),
                 qPrintable(QString::number(b)));
        const float e4 = e4m3_bits_to_float(byte);
        if (std::isfinite(e4)) QCOMPARE(fp8_encode<Fp8Element::E4M3>(e4), float_to_e4m3_bits(e4));
        const float e5 = e5m2_bits_to_float(byte);
        if (std::isfinite(e5)) QCOMPARE(fp8_encode<Fp8Element::E5M2>(e5), float_to_e5m2_bits(e5));
    }
    // Saturation, not inf, for the recipes (E5M2 included), and NaN stays NaN.
    QCOMPARE(fp8_encode<Fp8Element::E5M2>(INFINITY), uint8_t{0x7b});
    QCOMPARE(fp8_encode<Fp8Element::E5M2>(-1e6f), uint8_t{0xfb});
    QCOMPARE(fp8_encode<Fp8Element::E4M3>(-INFINITY), uint8_t{0xfe});
    QVERIFY(std::isnan(fp8_decode<Fp8Element::E4M3>(fp8_encode<Fp8Element::E4M3>(NAN))));
    QVERIFY(std::isnan(fp8_decode<Fp8Element::E5M2>(fp8_encode<Fp8Element::E5M2>(NAN))));
}

void TestFp8Math::rounding_matches_element_formats() {
    const QString e4 =
        first_rounding_mismatch<Fp8Element::E4M3, E4M3Spec>(rounding_cases<Fp8Element::E4M3>());
    QVERIFY2(e4.isEmpty(), qPrintable("E4M3 " + e4));
    const QString e5 =
        first_rounding_mismatch<Fp8Element::E5M2, E5M2Spec>(rounding_cases<Fp8Element::E5M2>());
    QVERIFY2(e5.isEmpty(), qPrintable("E5M2 " + e5));
}

// What the device GEMM sees (the byte and 1/scale) dequantizes to quantize_per_tensor's output.
void TestFp8Math::quantize_dequantize_matches_quantize_per_tensor() {
    Rng rng(7);
    std::vector<float> x(5000);
    for (float& v : x)
        v = static_cast<float>(rng.normal()) * std::exp2(static_cast<float>(rng.uniform(-20, 20)));
    x[0] = INFINITY;
    x[1] = -0.0f;
    x[2] = 1e-40f;
    for (Format f : {Format::E4M3, Format::E5M2}) {
        const Fp8Element e = f == Format::E4M3 ? Fp8Element::E4M3 : Fp8Element::E5M2;
        for (float scale : {1.0f, 3.7e-3f, 448.0f / 7.25f, 1.2e5f, 3.40282347e38f}) {
            std::vector<float> cpu(x.size());
            QuantizeOptions opt;
            opt.element = f;
            quantize_per_tensor(x.data(), cpu.data(), static_cast<int64_t>(x.size()), scale, 0.0f, opt);
            const float inverse = div_rn(1.0f, scale);
            for (size_t i = 0; i < x.size(); ++i) {
                const float device = mul_rn(fp8_decode(e, fp8_encode(e, mul_rn(x[i], scale))), inverse);
                QVERIFY2(same_value(device, cpu[i]), qPrintable(QString("x=%1 scale=%2: device %3, CPU %4")
                                                                    .arg(double(x[i]))
                                                                    .arg(double(scale))
                                                                    .arg(double(device))
                                                                    .arg(double(cpu[i]))));
            }
        }
    }
}

void TestFp8Math::scale_rule_matches_per_tensor_scale() {
    const float amaxes[] = {0.0f, -0.0f, 1.0f, 3.3e-3f, 1e-38f, 1e-44f, 7e30f, INFINITY, NAN, 448.0f};
    for (float amax : amaxes)
        for (int margin : {0, 1, 5, 64})
            for (float element_max : {448.0f, 57344.0f}) {
                const float cpu = per_tensor_scale(amax, element_max, margin, 0.25f);
                const float device = fp8_per_tensor_scale(amax, element_max, margin, 0.25f);
                QVERIFY2(bits(cpu) == bits(device),
                         qPrintable(QString("amax %1 margin %2").arg(double(amax)).arg(margin)));
            }
}

namespace {

// Drives a GemmQuantizer and three device tensor states with the same steps: each step quantizes
// x, w and dy (one tensor left out now and then, and an evaluation-like step that never ends),
// each tensor holding the step's amax; compares each step's scale and, after each end, the
// histories and the next scales. Returns the first difference.
QString compare_with_quantizer(const ScaledRecipeConfig& config, const std::vector<float>& amaxes) {
    GemmQuantizer cpu(config, 1, 0);
    Fp8Rule rule;
    rule.delayed = config.recipe == ScaledRecipe::Fp8Delayed;
    rule.most_recent = config.amax_algorithm == AmaxAlgorithm::MostRecent;
    rule.margin = config.margin;
    rule.history_len = static_cast<int32_t>(config.amax_history_len);
    rule.fixed_scale = static_cast<float>(config.fixed_scale);
    std::array<Fp8TensorState, 3> dev;
    std::array<std::vector<float>, 3> rings;
    for (size_t t = 0; t < 3; ++t) {
        rings[t].assign(static_cast<size_t>(rule.history_len), 0.0f);
        const bool e5 = t == 2 && config.fp8_format == Fp8Format::Hybrid;
        dev[t].element_max = fp8_element_max(e5 ? Fp8Element::E5M2 : Fp8Element::E4M3);
    }
    const GemmOperand ops[] = {GemmOperand::Input, GemmOperand::Weight, GemmOperand::OutputGrad};
    for (size_t step = 0; step < amaxes.size(); ++step) {
        const bool evaluation = step % 5 == 4;
        cpu.begin_step(static_cast<int64_t>(step + 1), true);
        for (size_t t = 0; t < 3; ++t) fp8_begin_step(dev[t], rings[t].data(), rule);
        std::vector<float> values = {amaxes[step] * 0.5f, -amaxes[step], 0.125f * amaxes[step]};
        size_t stat = 0;
        for (size_t t = 0; t < 3; ++t) {
            if ((step + t) % 7 == 3 || (evaluation && t == 2)) continue;  // a tensor this step leaves out
            values[0] = amaxes[(step + t) % amaxes.size()] * 0.5f;
            values[1] = -amaxes[(step + t) % amaxes.size()];
            cpu.operand(ops[t], GemmPass::Forward, SumAlong::Cols, values.data(), 1, 3);
            fp8_take_amax(dev[t], bits(amax_of(values.data(), 3)), rule);
            const float cpu_scale = cpu.stats().at(stat++).scale;
            if (bits(cpu_scale) != bits(dev[t].step_scale))
                return QString("step %1 tensor %2: scale CPU %3, device %4")
                    .arg(step)
                    .arg(t)
                    .arg(double(cpu_scale))
                    .arg(double(dev[t].step_scale));
            if (bits(dev[t].step_inverse) != bits(1.0f / cpu_scale))
                return QString("step %1: inverse").arg(step);
        }
        if (evaluation) continue;  // evaluation never ends its step
        cpu.end_step();
        for (size_t t = 0; t < 3; ++t) {
            fp8_end_step(dev[t], rings[t].data(), rule);
            const std::vector<float> history = cpu.amax_history(ops[t]);
            if (static_cast<size_t>(dev[t].count) != history.size())
                return QString("step %1 tensor %2: history of %3, CPU %4")
                    .arg(step)
                    .arg(t)
                    .arg(dev[t].count)
                    .arg(history.size());
            for (size_t k = 0; k < history.size(); ++k)
                if (!same_value(history[k],
                                rings[t][(static_cast<size_t>(dev[t].head) + k) % rings[t].size()]))
                    return QString("step %1 tensor %2: history entry %3").arg(step).arg(t).arg(k);
            Fp8TensorState next = dev[t];
            fp8_begin_step(next, rings[t].data(), rule);
            if (rule.delayed && bits(cpu.next_scale(ops[t])) != bits(next.step_scale))
                return QString("step %1 tensor %2: next scale CPU %3, device %4")
                    .arg(step)
                    .arg(t)
                    .arg(double(cpu.next_scale(ops[t])))
                    .arg(double(next.step_scale));
        }
    }
    return {};
}

const std::vector<float> kAmaxes = {3.0f, 0.0f, 12.5f, INFINITY, 1e-3f, NAN,    2e-44f, 0.5f, 7e4f, 1.0f,
                                    0.0f, 0.0f, 0.0f,  0.0f,     5.0f,  1e-30f, 300.0f, NAN,  2.0f, 0.75f};

}  // namespace

void TestFp8Math::delayed_state_matches_gemm_quantizer() {
    ScaledRecipeConfig c;
    c.recipe = ScaledRecipe::Fp8Delayed;
    c.amax_history_len = 3;
    QString problem = compare_with_quantizer(c, kAmaxes);
    QVERIFY2(problem.isEmpty(), qPrintable("max, length 3: " + problem));
    c.amax_algorithm = AmaxAlgorithm::MostRecent;
    c.margin = 2;
    problem = compare_with_quantizer(c, kAmaxes);
    QVERIFY2(problem.isEmpty(), qPrintable("most recent, margin 2: " + problem));
    c.amax_algorithm = AmaxAlgorithm::Max;
    c.amax_history_len = 1024;
    c.fp8_format = Fp8Format::E4M3;
    problem = compare_with_quantizer(c, kAmaxes);
    QVERIFY2(problem.isEmpty(), qPrintable("max, length 1024, E4M3: " + problem));
    c.fixed_scale = 4.0;
    problem = compare_with_quantizer(c, kAmaxes);
    QVERIFY2(problem.isEmpty(), qPrintable("fixed scale: " + problem));
}

void TestFp8Math::current_state_matches_gemm_quantizer() {
    ScaledRecipeConfig c;
    c.recipe = ScaledRecipe::Fp8Current;
    QString problem = compare_with_quantizer(c, kAmaxes);
    QVERIFY2(problem.isEmpty(), qPrintable("current: " + problem));
    c.margin = 3;
    problem = compare_with_quantizer(c, kAmaxes);
    QVERIFY2(problem.isEmpty(), qPrintable("current, margin 3: " + problem));
}

QTEST_APPLESS_MAIN(TestFp8Math)
#include "test_fp8_math.moc"
