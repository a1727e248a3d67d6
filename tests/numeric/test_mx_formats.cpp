// MX element formats (E3M2, E2M3, E2M1), the inline element roundings of element_formats.h (E4M3
// and E5M2 too), E8M0 scale codes, floor_log2 and stochastic rounding, against the independent
// float64 reference (reference_formats.h): every code both ways, random and adversarial inputs,
// the Format table and array paths, and the statistics of stochastic rounding (fixed seeds, so
// the bounds are checked on the same draws every run and cannot flake).
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/numeric/element_formats.h"
#include "core/numeric/format.h"
#include "core/numeric/mx_formats.h"
#include "tests/numeric/reference_formats.h"

using namespace mpwb;

// QVERIFY2 formats its message on every call, which dominates loops over 10^5 inputs; this one
// formats it only on failure.
#define VERIFY_LAZY(condition, message)   \
    do {                                  \
        if (!(condition)) QFAIL(message); \
    } while (false)

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

QString describe(float x) {
    return QString("%1 (0x%2)").arg(double(x), 0, 'g', 17).arg(ref::to_bits(x), 8, 16, QChar('0'));
}

// Same float bits, or both NaN with the same sign.
bool same_float(float a, float b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
    return ref::to_bits(a) == ref::to_bits(b);
}

// One element format seen through every entry point under test.
struct ElementFormat {
    const char* name;
    const ref::Spec& spec;
    float (*round)(float);
    float (*round_stochastic)(float, uint32_t);
    Format format;
    bool round_to_format_saturates;  // false for E5M2, whose round_to_format gives inf
};

const ElementFormat kElementFormats[] = {
    {"e4m3", ref::kE4M3, round_element_saturating<E4M3Spec>, round_element_stochastic<E4M3Spec>, Format::E4M3,
     true},
    {"e5m2", ref::kE5M2, round_element_saturating<E5M2Spec>, round_element_stochastic<E5M2Spec>, Format::E5M2,
     false},
    {"e3m2", ref::kE3M2, round_element_saturating<E3M2Spec>, round_element_stochastic<E3M2Spec>, Format::E3M2,
     true},
    {"e2m3", ref::kE2M3, round_element_saturating<E2M3Spec>, round_element_stochastic<E2M3Spec>, Format::E2M3,
     true},
    {"e2m1", ref::kE2M1, round_element_saturating<E2M1Spec>, round_element_stochastic<E2M1Spec>, Format::E2M1,
     true},
};

int code_width(const ref::Spec& s) { return 1 + s.exponent_bits + s.mantissa_bits; }

// Every finite value of the format in increasing order of magnitude (non-negative codes).
std::vector<double> finite_magnitudes(const ref::Spec& s) {
    std::vector<double> v;
    for (uint32_t c = 0; c < (1u << (code_width(s) - 1)); ++c) {
        const double d = ref::decode(c, s);
        if (std::isfinite(d)) v.push_back(d);
    }
    return v;
}

// Inputs that sit on the rounding decisions: every value, every midpoint between neighbours
// (ties) and the floats either side of each, the overflow point (max + half an ulp) and around
// it, subnormal boundaries far below, and the specials.
std::vector<float> adversarial_inputs(const ref::Spec& s) {
    std::vector<float> in = {0.0f,
                             -0.0f,
                             kInf,
                             -kInf,
                             kNaN,
                             -kNaN,
                             std::numeric_limits<float>::denorm_min(),
                             std::numeric_limits<float>::min(),
                             std::numeric_limits<float>::max()};
    const std::vector<double> mags = finite_magnitudes(s);
    auto add_around = [&](double d) {
        const float f = static_cast<float>(d);
        for (float g : {f, std::nextafter(f, 0.0f), std::nextafter(f, kInf)}) {
            in.push_back(g);
            in.push_back(-g);
        }
    };
    for (size_t i = 0; i < mags.size(); ++i) {
        add_around(mags[i]);
        if (i + 1 < mags.size()) add_around((mags[i] + mags[i + 1]) / 2);
    }
    const double top_gap = mags.back() - mags[mags.size() - 2];
    add_around(mags.back() + top_gap / 2);  // max + half an ulp: the overflow point
    add_around(mags.back() + top_gap);
    add_around(mags[1] / 2);  // half the smallest subnormal: ties to zero
    add_around(mags[1] / 4);
    return in;
}

// Random bit patterns (all of float space) and random values within the format's binades.
std::vector<float> random_inputs(const ref::Spec& s, uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::vector<float> in;
    for (int i = 0; i < 100000; ++i) in.push_back(ref::from_bits(static_cast<uint32_t>(gen())));
    const double top = std::log2(s.max_finite) + 2;
    const double bottom = std::log2(finite_magnitudes(s)[1]) - 3;
    for (int i = 0; i < 100000; ++i) {
        const double u = static_cast<double>(gen() >> 11) * 0x1p-53;
        const double sign = (gen() & 1) ? -1.0 : 1.0;
        in.push_back(static_cast<float>(sign * std::exp2(bottom + u * (top - bottom))));
    }
    return in;
}

struct McCase {
    float x;
    double lo, hi;
};

}  // namespace

class TestMxFormats : public QObject {
    Q_OBJECT

private slots:
    void mx_codes_round_trip_and_match_reference_decode();
    void element_roundings_keep_every_value();
    void element_roundings_match_reference();
    void round_to_format_matches_reference_on_arrays();
    void code_encoders_saturate_and_map_nan_to_max();
    void format_table_rows_and_names();
    void e8m0_decode_every_code();
    void e8m0_floor_and_ceil_match_frexp_reference();
    void floor_log2_matches_frexp();
    void counter_random_bits_are_pinned();
    void stochastic_is_deterministic_and_thread_split_independent();
    void stochastic_gives_a_neighbour_and_is_unbiased();
    void stochastic_array_covers_every_format();
    void stochastic_array_is_unbiased_for_wide_formats();
};

void TestMxFormats::mx_codes_round_trip_and_match_reference_decode() {
    struct Codec {
        const ref::Spec& spec;
        uint8_t (*encode)(float);
        float (*decode)(uint8_t);
    };
    const Codec codecs[] = {{ref::kE3M2, float_to_e3m2_bits, e3m2_bits_to_float},
                            {ref::kE2M3, float_to_e2m3_bits, e2m3_bits_to_float},
                            {ref::kE2M1, float_to_e2m1_bits, e2m1_bits_to_float}};
    for (const Codec& c : codecs) {
        const uint32_t codes = 1u << code_width(c.spec);
        for (uint32_t code = 0; code < codes; ++code) {
            const float v = c.decode(static_cast<uint8_t>(code));
            VERIFY_LAZY(ref::same_value(ref::decode(code, c.spec), v),
                        qPrintable(QString("code %1 decodes to %2").arg(code).arg(describe(v))));
            QCOMPARE(unsigned(c.encode(v)), unsigned(code));
            // Bits above the code are ignored by the decoder.
            QVERIFY(same_float(c.decode(static_cast<uint8_t>(code | (0xffu << code_width(c.spec)))), v));
        }
    }
}

void TestMxFormats::element_roundings_keep_every_value() {
    for (const ElementFormat& f : kElementFormats) {
        for (uint32_t code = 0; code < (1u << code_width(f.spec)); ++code) {
            const double d = ref::decode(code, f.spec);
            if (!std::isfinite(d)) continue;
            const float v = static_cast<float>(d);
            VERIFY_LAZY(same_float(f.round(v), v), qPrintable(QString("%1: %2").arg(f.name, describe(v))));
            VERIFY_LAZY(same_float(f.round_stochastic(v, 0xffffffffu), v),
                        qPrintable(QString("%1 stochastic: %2").arg(f.name, describe(v))));
        }
    }
}

void TestMxFormats::element_roundings_match_reference() {
    uint64_t seed = 11;
    for (const ElementFormat& f : kElementFormats) {
        std::vector<float> in = adversarial_inputs(f.spec);
        const std::vector<float> random = random_inputs(f.spec, seed++);
        in.insert(in.end(), random.begin(), random.end());
        for (float x : in) {
            const double want = ref::round_value_saturating(x, f.spec);
            const float got = f.round(x);
            VERIFY_LAZY(ref::same_value(want, got), qPrintable(QString("%1(%2) = %3, reference %4")
                                                                   .arg(f.name, describe(x), describe(got))
                                                                   .arg(want, 0, 'g', 17)));
            const double want_format = f.round_to_format_saturates ? want : ref::round_value(x, f.spec);
            VERIFY_LAZY(ref::same_value(want_format, round_to_format(x, f.format)),
                        qPrintable(QString("round_to_format(%1, %2)").arg(describe(x), f.name)));
        }
    }
}

void TestMxFormats::round_to_format_matches_reference_on_arrays() {
    // Large enough to be split over the thread pool.
    for (const ElementFormat& f : kElementFormats) {
        if (!f.round_to_format_saturates) continue;
        const std::vector<float> in = random_inputs(f.spec, 99);
        std::vector<float> out(in.size());
        round_to_format(f.format, in.data(), out.data(), in.size());
        for (size_t i = 0; i < in.size(); ++i)
            VERIFY_LAZY(ref::same_value(ref::round_value_saturating(in[i], f.spec), out[i]),
                        qPrintable(QString("%1 array at %2: %3").arg(f.name).arg(i).arg(describe(in[i]))));
    }
}

void TestMxFormats::code_encoders_saturate_and_map_nan_to_max() {
    QCOMPARE(unsigned(float_to_e3m2_bits(kInf)), 0x1fu);
    QCOMPARE(unsigned(float_to_e3m2_bits(-kInf)), 0x3fu);
    QCOMPARE(unsigned(float_to_e3m2_bits(30.0f)), 0x1fu);
    QCOMPARE(unsigned(float_to_e3m2_bits(kNaN)), 0x1fu);
    QCOMPARE(unsigned(float_to_e2m3_bits(-1e9f)), 0x3fu);
    QCOMPARE(unsigned(float_to_e2m3_bits(-kNaN)), 0x1fu);
    QCOMPARE(unsigned(float_to_e2m1_bits(7.0f)), 0x7u);
    QCOMPARE(unsigned(float_to_e2m1_bits(-5.0f)), 0xeu);  // tie between 4 (code 6) and 6 (code 7): even
    QCOMPARE(unsigned(float_to_e2m1_bits(-0.0f)), 0x8u);
    QCOMPARE(unsigned(float_to_e2m1_bits(kNaN)), 0x7u);
    QCOMPARE(e2m1_bits_to_float(0x7), 6.0f);
    QCOMPARE(e2m1_bits_to_float(0x1), 0.5f);
}

void TestMxFormats::format_table_rows_and_names() {
    struct Row {
        Format f;
        const char* name;
        const ref::Spec& spec;
    };
    const Row rows[] = {{Format::E3M2, "e3m2", ref::kE3M2},
                        {Format::E2M3, "e2m3", ref::kE2M3},
                        {Format::E2M1, "e2m1", ref::kE2M1}};
    for (const Row& r : rows) {
        const FormatInfo& info = format_info(r.f);
        QCOMPARE(info.format, r.f);
        QCOMPARE(QString(info.name), QString(r.name));
        QCOMPARE(parse_format(QString(r.name).toUpper().toStdString()), r.f);
        QCOMPARE(info.exponent_bits, r.spec.exponent_bits);
        QCOMPARE(info.mantissa_bits, r.spec.mantissa_bits);
        QVERIFY(!info.has_infinity);
        const std::vector<double> mags = finite_magnitudes(r.spec);
        QCOMPARE(double(info.max_finite), mags.back());
        QCOMPARE(double(info.min_subnormal), mags[1]);
        QCOMPARE(double(info.min_normal), std::ldexp(1.0, 1 - r.spec.bias));
        QCOMPARE(info.min_exponent, std::ilogb(mags[1]));
        QCOMPARE(info.max_exponent, std::ilogb(mags.back()));
    }
}

void TestMxFormats::e8m0_decode_every_code() {
    for (int code = 0; code < 255; ++code)
        QCOMPARE(double(e8m0_to_float(static_cast<uint8_t>(code))), std::ldexp(1.0, code - 127));
    QVERIFY(std::isnan(e8m0_to_float(kE8M0NaN)));
}

void TestMxFormats::e8m0_floor_and_ceil_match_frexp_reference() {
    std::vector<float> in = {0.0f,
                             -0.0f,
                             kInf,
                             -kInf,
                             kNaN,
                             1.0f,
                             0.75f,
                             1.5f,
                             -3.0f,
                             std::numeric_limits<float>::denorm_min(),
                             std::numeric_limits<float>::min(),
                             std::numeric_limits<float>::max(),
                             0x1p127f,
                             0x1.8p127f,
                             0x1p-127f,
                             0x1.8p-127f,
                             0x1p-128f};
    std::mt19937_64 gen(5);
    for (int i = 0; i < 200000; ++i) in.push_back(ref::from_bits(static_cast<uint32_t>(gen())));
    for (int e = -149; e <= 127; ++e) {
        const float p = std::ldexp(1.0f, e);
        for (float x : {p, std::nextafter(p, 0.0f), std::nextafter(p, kInf)}) in.push_back(x);
    }
    for (float x : in) {
        VERIFY_LAZY(float_to_e8m0_floor_bits(x) == ref::e8m0_code(x, false),
                    qPrintable("floor " + describe(x)));
        VERIFY_LAZY(float_to_e8m0_ceil_bits(x) == ref::e8m0_code(x, true), qPrintable("ceil " + describe(x)));
    }
}

void TestMxFormats::floor_log2_matches_frexp() {
    std::mt19937_64 gen(6);
    for (int i = 0; i < 200000; ++i) {
        const float x = std::fabs(ref::from_bits(static_cast<uint32_t>(gen())));
        if (!std::isfinite(x) || x == 0.0f) continue;
        int e = 0;
        std::frexp(x, &e);
        VERIFY_LAZY(floor_log2(x) == e - 1, qPrintable(describe(x)));
    }
    QCOMPARE(floor_log2(std::numeric_limits<float>::denorm_min()), -149);
    QCOMPARE(floor_log2(std::numeric_limits<float>::max()), 127);
}

void TestMxFormats::counter_random_bits_are_pinned() {
    // Stored runs replay stochastic rounding from (seed, index); these values must never change.
    QCOMPARE(counter_random_bits(1, 0), 3220144176u);
    QCOMPARE(counter_random_bits(1, 1), 1599417572u);
    QVERIFY(counter_random_bits(2, 0) != counter_random_bits(1, 0));
}

void TestMxFormats::stochastic_is_deterministic_and_thread_split_independent() {
    const std::vector<float> in = random_inputs(ref::kE2M1, 3);
    std::vector<float> whole(in.size()), parts(in.size());
    round_to_format_stochastic(Format::E2M1, in.data(), whole.data(), in.size(), 42, 1000);
    // The same elements in two calls with shifted first_index give the same draws.
    const size_t half = in.size() / 3;
    round_to_format_stochastic(Format::E2M1, in.data(), parts.data(), half, 42, 1000);
    round_to_format_stochastic(Format::E2M1, in.data() + half, parts.data() + half, in.size() - half, 42,
                               1000 + half);
    for (size_t i = 0; i < in.size(); ++i) {
        QVERIFY(same_float(whole[i], parts[i]));
        QVERIFY(same_float(whole[i],
                           round_element_stochastic<E2M1Spec>(in[i], counter_random_bits(42, 1000 + i))));
    }
    std::vector<float> other_seed(in.size());
    round_to_format_stochastic(Format::E2M1, in.data(), other_seed.data(), in.size(), 43, 1000);
    size_t differ = 0;
    for (size_t i = 0; i < in.size(); ++i) differ += !same_float(whole[i], other_seed[i]);
    QVERIFY(differ > 0);
}

void TestMxFormats::stochastic_gives_a_neighbour_and_is_unbiased() {
    // For each fixed x, n draws: the mean of the results must lie within 6 standard deviations
    // of x (the draws are fixed by the seed; a rounding biased by a tenth of the gap, or
    // round-to-nearest, fails by far more).
    constexpr int kDraws = 40000;
    for (const ElementFormat& f : kElementFormats) {
        const std::vector<double> mags = finite_magnitudes(f.spec);
        std::vector<double> xs = {mags[1] * 0.3, mags[1] * 1.7,
                                  mags.back() - 0.37 * (mags.back() - mags[mags.size() - 2])};
        for (size_t i = 2; i + 1 < mags.size(); i += 5)
            xs.push_back(mags[i] + 0.23 * (mags[i + 1] - mags[i]));
        for (double xd : xs) {
            for (float x : {static_cast<float>(xd), -static_cast<float>(xd)}) {
                const ref::Neighbours nb = ref::neighbours(x, f.spec);
                double sum = 0;
                for (int k = 0; k < kDraws; ++k) {
                    const float r = f.round_stochastic(x, counter_random_bits(77, static_cast<uint64_t>(k)));
                    const double a = std::fabs(double(r));
                    VERIFY_LAZY((a == nb.lo || a == nb.hi) && std::signbit(r) == std::signbit(x),
                                qPrintable(QString("%1(%2) gave %3").arg(f.name, describe(x), describe(r))));
                    sum += a;
                }
                const double p = (std::fabs(double(x)) - nb.lo) / (nb.hi - nb.lo);
                const double sd = (nb.hi - nb.lo) * std::sqrt(p * (1 - p) / kDraws);
                const double mean = sum / kDraws;
                VERIFY_LAZY(std::fabs(mean - std::fabs(double(x))) <= 6 * sd,
                            qPrintable(QString("%1: mean %2 for %3 (sd %4)")
                                           .arg(f.name)
                                           .arg(mean)
                                           .arg(describe(x))
                                           .arg(sd)));
            }
        }
        // Saturation and specials.
        QCOMPARE(double(f.round_stochastic(kInf, 0)), f.spec.max_finite);
        QCOMPARE(double(f.round_stochastic(-1e30f, 0xffffffffu)), -f.spec.max_finite);
        QVERIFY(std::isnan(f.round_stochastic(kNaN, 123)));
        QVERIFY(same_float(f.round_stochastic(-0.0f, 0xffffffffu), -0.0f));
    }
}

void TestMxFormats::stochastic_array_covers_every_format() {
    // Every Format: each output is a neighbour of its input in the format (FP32 copied), and
    // results differ across seeds only where the input is not representable.
    const Format all[] = {Format::FP32, Format::TF32, Format::FP16, Format::BF16, Format::E4M3,
                          Format::E5M2, Format::E3M2, Format::E2M3, Format::E2M1};
    const ref::Spec* specs[] = {nullptr,     &ref::kTf32, &ref::kHalf, &ref::kBf16, &ref::kE4M3,
                                &ref::kE5M2, &ref::kE3M2, &ref::kE2M3, &ref::kE2M1};
    std::mt19937_64 gen(8);
    std::vector<float> in;
    for (int i = 0; i < 50000; ++i) {
        const float x = ref::from_bits(static_cast<uint32_t>(gen()));
        if (std::isfinite(x)) in.push_back(x);
    }
    in.push_back(kInf);
    in.push_back(kNaN);
    std::vector<float> out(in.size());
    for (size_t k = 0; k < std::size(all); ++k) {
        round_to_format_stochastic(all[k], in.data(), out.data(), in.size(), 9, 0);
        for (size_t i = 0; i < in.size(); ++i) {
            const float x = in[i];
            if (std::isnan(x)) {
                QVERIFY(std::isnan(out[i]));
                continue;
            }
            if (!specs[k]) {
                QVERIFY(same_float(out[i], x));
                continue;
            }
            const ref::Spec& s = *specs[k];
            const double a = std::fabs(double(x));
            const double got = std::fabs(double(out[i]));
            QVERIFY(std::signbit(out[i]) == std::signbit(x));
            if (a >= s.max_finite) {
                VERIFY_LAZY(got == s.max_finite,
                            qPrintable(QString::fromStdString(format_name(all[k])) + ": " + describe(x)));
                continue;
            }
            const ref::Neighbours nb = ref::neighbours(x, s);
            VERIFY_LAZY(got == nb.lo || got == std::min(nb.hi, s.max_finite),
                        qPrintable(QString::fromStdString(format_name(all[k])) + ": " + describe(x) +
                                   " gave " + describe(out[i])));
        }
    }
}

void TestMxFormats::stochastic_array_is_unbiased_for_wide_formats() {
    // FP16 (minifloat path) and BF16/TF32 (add-and-truncate path): many copies of one value, one
    // draw each; the mean must be within 6 standard deviations of the value. Normal values and an
    // FP32 subnormal (which BF16 and TF32 keep on their own subnormal grid).
    struct Case {
        Format f;
        const ref::Spec& spec;
        float x;
    };
    const Case cases[] = {{Format::FP16, ref::kHalf, 1.00021f},    {Format::FP16, ref::kHalf, -3.3e-7f},
                          {Format::BF16, ref::kBf16, 1.0031f},     {Format::BF16, ref::kBf16, 2.7e-39f},
                          {Format::TF32, ref::kTf32, -1234.5678f}, {Format::TF32, ref::kTf32, 1.1e-40f}};
    constexpr size_t kDraws = 40000;
    for (const Case& c : cases) {
        const std::vector<float> in(kDraws, c.x);
        std::vector<float> out(kDraws);
        round_to_format_stochastic(c.f, in.data(), out.data(), kDraws, 123, 0);
        const ref::Neighbours nb = ref::neighbours(c.x, c.spec);
        QVERIFY(nb.hi > nb.lo);
        double sum = 0;
        for (float r : out) sum += std::fabs(double(r));
        const double p = (std::fabs(double(c.x)) - nb.lo) / (nb.hi - nb.lo);
        const double sd = (nb.hi - nb.lo) * std::sqrt(p * (1 - p) / kDraws);
        VERIFY_LAZY(std::fabs(sum / kDraws - std::fabs(double(c.x))) <= 6 * sd,
                    qPrintable(QString::fromStdString(format_name(c.f)) + ": mean off for " + describe(c.x)));
    }
}

QTEST_APPLESS_MAIN(TestMxFormats)
#include "test_mx_formats.moc"
