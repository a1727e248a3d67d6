// FP16 tests: every half pattern both ways, float->half against the float64 reference over a
// dense sample of all floats plus every boundary, for the software path, the F16C path and
// round_to_format's threaded array path.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "core/numeric/format.h"
#include "core/numeric/half.h"
#include "tests/numeric/reference_formats.h"

using namespace mpwb;

namespace {

// Floats near every FP16 boundary: each value, its neighbours within 64 ulps, both signs.
std::vector<float> boundary_inputs() {
    const double m24 = std::ldexp(1.0, -24);
    const double anchors[] = {
        65504.0,
        65520.0,
        65536.0,
        65488.0,
        65512.0,  // max, overflow tie, ulp ties below max
        std::ldexp(1.0, -14),
        1023.5 * m24,
        1023.0 * m24,  // min normal, top subnormal tie
        m24,
        0.5 * m24,
        0.75 * m24,
        1.5 * m24,
        2.5 * m24,
        3.5 * m24,  // subnormal ties
        0.25 * m24,
        std::ldexp(1.0, -126),
        std::ldexp(1.0, -149),
        1.0,
        1.0 + std::ldexp(1.0, -11),
        1.0 + 3 * std::ldexp(1.0, -11),
        2048.0,
        2049.0,
        2051.0,
        3.0e38,
        1.0e-30,
        0.1,
        1.0 / 3.0,
    };
    std::vector<float> v;
    for (double a : anchors) {
        const uint32_t b = ref::to_bits(static_cast<float>(a));
        for (int d = -64; d <= 64; ++d) {
            const float f = ref::from_bits(b + static_cast<uint32_t>(d));
            v.push_back(f);
            v.push_back(-f);
        }
    }
    const float specials[] = {0.0f,
                              -0.0f,
                              INFINITY,
                              -INFINITY,
                              ref::from_bits(0x7fc00000u),
                              ref::from_bits(0xffc00000u),
                              ref::from_bits(0x7f800001u),
                              ref::from_bits(0xff812345u),
                              ref::from_bits(0x7fffffffu),
                              ref::from_bits(0x00000001u),
                              ref::from_bits(0x807fffffu)};
    for (float f : specials) v.push_back(f);
    return v;
}

// Every 1031st float pattern (a prime stride, so all exponents, signs and low-bit patterns are hit).
std::vector<float> strided_inputs() {
    std::vector<float> v;
    v.reserve((uint64_t{1} << 32) / 1031 + 1);
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 1031)
        v.push_back(ref::from_bits(static_cast<uint32_t>(b)));
    return v;
}

}  // namespace

class TestHalf : public QObject {
    Q_OBJECT

private:
    // Checks software bits for x against the reference; returns false (with a message) on mismatch.
    static bool check_one(float x, uint16_t h, QString* why) {
        const double want = ref::round_value(x, ref::kHalf);
        const double got = ref::decode(h, ref::kHalf);
        if (ref::same_value(want, got)) return true;
        *why = QString("x=%1 (0x%2): got half 0x%3 = %4, want %5")
                   .arg(double(x), 0, 'g', 17)
                   .arg(ref::to_bits(x), 8, 16, QChar('0'))
                   .arg(h, 4, 16, QChar('0'))
                   .arg(got, 0, 'g', 17)
                   .arg(want, 0, 'g', 17);
        return false;
    }

    static void check_array(const std::vector<float>& in) {
        // software scalar vs reference
        int bad = 0;
        QString first;
        for (float x : in) {
            QString why;
            if (!check_one(x, float_to_half_bits(x), &why) && bad++ == 0) first = why;
        }
        QVERIFY2(bad == 0, qPrintable(QString("%1 software mismatches; first: %2").arg(bad).arg(first)));

        // NaN payload rule: quiet, sign kept, top 10 payload bits kept
        for (float x : in) {
            const uint32_t b = ref::to_bits(x);
            if ((b & 0x7fffffffu) <= 0x7f800000u) continue;
            const uint16_t want =
                static_cast<uint16_t>(((b >> 16) & 0x8000u) | 0x7e00u | ((b >> 13) & 0x3ffu));
            QCOMPARE(float_to_half_bits(x), want);
        }

        std::vector<uint16_t> sw_bits(in.size()), hw_bits(in.size());
        std::vector<float> sw(in.size()), hw(in.size()), threaded(in.size());
        float_to_half_bits_software(in.data(), sw_bits.data(), in.size());
        round_to_half_software(in.data(), sw.data(), in.size());
        round_to_format(Format::FP16, in.data(), threaded.data(), in.size());
        for (size_t i = 0; i < in.size(); ++i) {
            QCOMPARE(sw_bits[i], float_to_half_bits(in[i]));
            QCOMPARE(ref::to_bits(sw[i]), ref::to_bits(half_bits_to_float(sw_bits[i])));
            QCOMPARE(ref::to_bits(threaded[i]), ref::to_bits(sw[i]));
            QCOMPARE(ref::to_bits(round_to_format(in[i], Format::FP16)), ref::to_bits(sw[i]));
        }
        if (!cpu_has_f16c()) {
            qWarning("CPU has no F16C: F16C path not tested");
            return;
        }
        float_to_half_bits_f16c(in.data(), hw_bits.data(), in.size());
        round_to_half_f16c(in.data(), hw.data(), in.size());
        for (size_t i = 0; i < in.size(); ++i) {
            if (hw_bits[i] != sw_bits[i] || ref::to_bits(hw[i]) != ref::to_bits(sw[i]))
                QFAIL(qPrintable(
                    QString("F16C differs at x=0x%1: bits 0x%2 vs software 0x%3, float 0x%4 vs 0x%5")
                        .arg(ref::to_bits(in[i]), 8, 16, QChar('0'))
                        .arg(hw_bits[i], 4, 16, QChar('0'))
                        .arg(sw_bits[i], 4, 16, QChar('0'))
                        .arg(ref::to_bits(hw[i]), 8, 16, QChar('0'))
                        .arg(ref::to_bits(sw[i]), 8, 16, QChar('0'))));
        }
    }

private slots:
    void all_halves_decode_like_ldexp() {
        for (uint32_t h = 0; h < 65536; ++h) {
            const float f = half_bits_to_float(static_cast<uint16_t>(h));
            const double want = ref::decode(h, ref::kHalf);
            if (!ref::same_value(f, want))
                QFAIL(qPrintable(
                    QString("half 0x%1 -> %2, want %3").arg(h, 4, 16, QChar('0')).arg(double(f)).arg(want)));
            if (std::isnan(f)) {  // quiet, payload kept
                const uint32_t b = ref::to_bits(f);
                QCOMPARE(b & 0x00400000u, 0x00400000u);
                QCOMPARE((b >> 13) & 0x1ffu, h & 0x1ffu);
            }
        }
    }

    void all_halves_round_trip() {
        for (uint32_t h = 0; h < 65536; ++h) {
            const uint16_t back = float_to_half_bits(half_bits_to_float(static_cast<uint16_t>(h)));
            const bool nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
            if (nan) {
                QVERIFY2((back & 0x7c00u) == 0x7c00u && (back & 0x3ffu), qPrintable(QString::number(h, 16)));
                QCOMPARE(back & 0x8000u, h & 0x8000u);
                QCOMPARE(back & 0x200u, 0x200u);  // quiet
            } else if (back != h) {
                QFAIL(qPrintable(QString("half 0x%1 came back as 0x%2")
                                     .arg(h, 4, 16, QChar('0'))
                                     .arg(back, 4, 16, QChar('0'))));
            }
        }
    }

    void all_halves_f16c_decode() {
        if (!cpu_has_f16c()) QSKIP("CPU has no F16C");
        std::vector<uint16_t> h(65536);
        for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
        std::vector<float> hw(65536), sw(65536);
        half_bits_to_float_f16c(h.data(), hw.data(), h.size());
        half_bits_to_float_software(h.data(), sw.data(), h.size());
        for (uint32_t i = 0; i < 65536; ++i) QCOMPARE(ref::to_bits(hw[i]), ref::to_bits(sw[i]));
    }

    void known_values() {
        const double m24 = std::ldexp(1.0, -24);
        struct Case {
            double x;
            uint16_t bits;
        };
        const Case cases[] = {
            {65504.0, 0x7bff},
            {65519.99, 0x7bff},
            {65520.0, 0x7c00},
            {1e6, 0x7c00},
            {-65520.0, 0xfc00},
            {std::ldexp(1.0, -14), 0x0400},
            {1023.0 * m24, 0x03ff},
            {1023.5 * m24, 0x0400},
            {m24, 0x0001},
            {0.5 * m24, 0x0000},
            {-0.5 * m24, 0x8000},
            {0.5000001 * m24, 0x0001},
            {0.75 * m24, 0x0001},
            {1.5 * m24, 0x0002},
            {2.5 * m24, 0x0002},
            {1.0, 0x3c00},
            {1.0 + std::ldexp(1.0, -11), 0x3c00},
            {1.0 + 3 * std::ldexp(1.0, -11), 0x3c02},
            {-2.0, 0xc000},
            {0.0, 0x0000},
            {-0.0, 0x8000},
            {1e-30, 0x0000},
            {-1e-30, 0x8000},
        };
        for (const Case& c : cases) {
            const uint16_t got = float_to_half_bits(static_cast<float>(c.x));
            QVERIFY2(got == c.bits, qPrintable(QString("x=%1 -> 0x%2, want 0x%3")
                                                   .arg(c.x, 0, 'g', 12)
                                                   .arg(got, 4, 16, QChar('0'))
                                                   .arg(c.bits, 4, 16, QChar('0'))));
        }
        QCOMPARE(float_to_half_bits(INFINITY), uint16_t{0x7c00});
        QCOMPARE(float_to_half_bits(-INFINITY), uint16_t{0xfc00});
        const uint16_t nan = float_to_half_bits(-std::nanf(""));
        QVERIFY((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0 && (nan & 0x8000));
    }

    void boundaries_match_reference() { check_array(boundary_inputs()); }

    void strided_floats_match_reference() { check_array(strided_inputs()); }

    // F16C must not depend on MXCSR flush-to-zero / denormals-are-zero (which other code or
    // libraries may set): the software path never does.
    void f16c_ignores_ftz_daz() {
#if defined(__x86_64__) || defined(__i386__)
        if (!cpu_has_f16c()) QSKIP("CPU has no F16C");
        const std::vector<float> in = boundary_inputs();
        std::vector<float> sw(in.size()), hw(in.size());
        round_to_half_software(in.data(), sw.data(), in.size());
        const unsigned saved = _mm_getcsr();
        _mm_setcsr(saved | 0x8040u);  // FTZ | DAZ
        round_to_half_f16c(in.data(), hw.data(), in.size());
        _mm_setcsr(saved);
        for (size_t i = 0; i < in.size(); ++i)
            QVERIFY2(ref::to_bits(hw[i]) == ref::to_bits(sw[i]),
                     qPrintable(QString("x=0x%1").arg(ref::to_bits(in[i]), 8, 16, QChar('0'))));
#else
        QSKIP("not x86");
#endif
    }

    void in_place_and_tails() {
        // Every length 0..40 (vector body + scalar tail), in place.
        for (size_t n = 0; n <= 40; ++n) {
            std::vector<float> v(n), want(n);
            for (size_t i = 0; i < n; ++i) v[i] = 1.0f + static_cast<float>(i) * 0x1.0p-12f;
            for (size_t i = 0; i < n; ++i) want[i] = static_cast<float>(ref::round_value(v[i], ref::kHalf));
            round_to_format(Format::FP16, v.data(), v.data(), n);
            for (size_t i = 0; i < n; ++i) QCOMPARE(v[i], want[i]);
        }
    }
};

QTEST_APPLESS_MAIN(TestHalf)
#include "test_half.moc"
