// BF16, TF32, FP8 e4m3/e5m2 and the Format API: boundary tables written from the format
// definitions, every bit pattern of the 8- and 16-bit formats both ways, a dense sample of all
// floats against the float64 reference, the threaded array path, and name parsing errors.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/numeric/bfloat16.h"
#include "core/numeric/format.h"
#include "core/numeric/fp8.h"
#include "core/numeric/tf32.h"
#include "tests/numeric/reference_formats.h"

using namespace mpwb;

namespace {

struct BitsCase {
    double x;
    unsigned bits;
};

QString hex(uint32_t v, int width) { return QString("0x%1").arg(v, width, 16, QChar('0')); }

std::vector<float> strided_inputs() {
    std::vector<float> v;
    v.reserve((uint64_t{1} << 32) / 4099 + 1);
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099)
        v.push_back(ref::from_bits(static_cast<uint32_t>(b)));
    return v;
}

const ref::Spec& spec_of(Format f) {
    switch (f) {
        case Format::TF32:
            return ref::kTf32;
        case Format::FP16:
            return ref::kHalf;
        case Format::BF16:
            return ref::kBf16;
        case Format::E4M3:
            return ref::kE4M3;
        case Format::E5M2:
            return ref::kE5M2;
        default:
            break;
    }
    qFatal("no reference spec");
}

}  // namespace

class TestFormats : public QObject {
    Q_OBJECT

private slots:
    void bf16_table() {
        const BitsCase cases[] = {
            {0x1.fep127, 0x7f7f},      // max
            {0x1.fefffep127, 0x7f7f},  // just below max + half ulp
            {0x1.ffp127, 0x7f80},      // max + half ulp: tie, odd max -> inf
            {0x1.fffffep127, 0x7f80},  // FLT_MAX -> inf
            {-0x1.ffp127, 0xff80},
            {1.0, 0x3f80},
            {1.0 + 0x1p-8, 0x3f80},
            {1.0 + 3 * 0x1p-8, 0x3f82},
            {1.0 + 0x1p-8 + 0x1p-20, 0x3f81},
            {0x1p-126, 0x0080},  // min normal
            {0x1p-133, 0x0001},  // min subnormal
            {0x1p-134, 0x0000},
            {-0x1p-134, 0x8000},  // half of it: tie to even zero
            {0.75 * 0x1p-133, 0x0001},
            {1.5 * 0x1p-133, 0x0002},
            {2.5 * 0x1p-133, 0x0002},
            {127 * 0x1p-133, 0x007f},
            {127.5 * 0x1p-133, 0x0080},  // top subnormal rounds into min normal
            {0x1p-149, 0x0000},
            {-2.0, 0xc000},
            {0.0, 0x0000},
            {-0.0, 0x8000},
            {INFINITY, 0x7f80},
            {-INFINITY, 0xff80},
        };
        for (const auto& c : cases) {
            const uint16_t got = float_to_bf16_bits(static_cast<float>(c.x));
            QVERIFY2(
                got == c.bits,
                qPrintable(
                    QString("%1 -> %2, want %3").arg(c.x, 0, 'g', 12).arg(hex(got, 4)).arg(hex(c.bits, 4))));
            QCOMPARE(ref::to_bits(round_to_bf16(static_cast<float>(c.x))),
                     ref::to_bits(bf16_bits_to_float(got)));
        }
        for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu}) {
            const uint16_t b = float_to_bf16_bits(ref::from_bits(nan));
            QVERIFY2((b & 0x7f80) == 0x7f80 && (b & 0x0040), qPrintable(hex(b, 4)));  // NaN, quiet
            QCOMPARE(uint32_t(b & 0x8000) << 16, nan & 0x80000000u);
            QVERIFY(std::isnan(round_to_bf16(ref::from_bits(nan))));
            QCOMPARE(std::signbit(round_to_bf16(ref::from_bits(nan))), bool(nan >> 31));
        }
    }

    void e4m3_table() {
        const BitsCase cases[] = {
            {448.0, 0x7e},         {-448.0, 0xfe},  // max
            {464.0, 0x7e},         {480.0, 0x7e},        {1e6, 0x7e},          {3e38, 0x7e},
            {-1e6, 0xfe},                          // saturation
            {416.0, 0x7d},         {432.0, 0x7e},  // tie between 416 (odd) and 448 (even)
            {256.0, 0x78},         {240.0, 0x77},        {1.0, 0x38},          {1.0625, 0x38},
            {1.1875, 0x3a},        {-1.5, 0xbc},         {0x1p-6, 0x08},  // min normal
            {0x1p-9, 0x01},                                               // min subnormal
            {0x1p-10, 0x00},       {-0x1p-10, 0x80},                      // tie -> signed zero
            {0.75 * 0x1p-9, 0x01}, {1.5 * 0x1p-9, 0x02}, {2.5 * 0x1p-9, 0x02}, {7 * 0x1p-9, 0x07},
            {7.5 * 0x1p-9, 0x08},  // top subnormal tie -> min normal
            {1e-10, 0x00},         {0.0, 0x00},          {-0.0, 0x80},         {INFINITY, 0x7e},
            {-INFINITY, 0xfe},  // satfinite: no inf in e4m3
        };
        for (const auto& c : cases) {
            const uint8_t got = float_to_e4m3_bits(static_cast<float>(c.x));
            QVERIFY2(
                got == c.bits,
                qPrintable(
                    QString("%1 -> %2, want %3").arg(c.x, 0, 'g', 12).arg(hex(got, 2)).arg(hex(c.bits, 2))));
        }
        QCOMPARE(float_to_e4m3_bits(NAN), uint8_t{0x7f});
        QCOMPARE(float_to_e4m3_bits(-NAN), uint8_t{0xff});
        QCOMPARE(float_to_e4m3_bits(ref::from_bits(0x7f800001u)), uint8_t{0x7f});
        QVERIFY(std::isnan(e4m3_bits_to_float(0x7f)));
        QVERIFY(std::isnan(e4m3_bits_to_float(0xff)) && std::signbit(e4m3_bits_to_float(0xff)));
        QCOMPARE(e4m3_bits_to_float(0x7e), 448.0f);
        QCOMPARE(e4m3_bits_to_float(0x01), 0x1p-9f);
    }

    void e5m2_table() {
        const BitsCase cases[] = {
            {57344.0, 0x7b},       {-57344.0, 0xfb},  // max
            {61439.0, 0x7b},       {61440.0, 0x7c},   // max + half ulp: tie, odd max -> inf
            {1e6, 0x7c},           {-1e6, 0xfc},        {1.0, 0x3c},
            {1.125, 0x3c},         {1.375, 0x3e},       {1.625, 0x3e},
            {-2.0, 0xc0},          {0x1p-14, 0x04},  // min normal
            {0x1p-16, 0x01},                         // min subnormal
            {0x1p-17, 0x00},       {-0x1p-17, 0x80},    {0.75 * 0x1p-16, 0x01},
            {1.5 * 0x1p-16, 0x02}, {3 * 0x1p-16, 0x03}, {3.5 * 0x1p-16, 0x04},
            {0.0, 0x00},           {-0.0, 0x80},        {INFINITY, 0x7c},
            {-INFINITY, 0xfc},
        };
        for (const auto& c : cases) {
            const uint8_t got = float_to_e5m2_bits(static_cast<float>(c.x));
            QVERIFY2(
                got == c.bits,
                qPrintable(
                    QString("%1 -> %2, want %3").arg(c.x, 0, 'g', 12).arg(hex(got, 2)).arg(hex(c.bits, 2))));
        }
        for (float nan : {NAN, -NAN, ref::from_bits(0x7f800001u)}) {
            const uint8_t b = float_to_e5m2_bits(nan);
            QVERIFY2((b & 0x7c) == 0x7c && (b & 0x03), qPrintable(hex(b, 2)));
            QCOMPARE(bool(b & 0x80), std::signbit(nan));
        }
        QVERIFY(std::isinf(e5m2_bits_to_float(0x7c)));
        QVERIFY(std::isnan(e5m2_bits_to_float(0x7d)));
    }

    void tf32_table() {
        struct Case {
            double x, want;
        };
        const Case cases[] = {
            {1.0 + 0x1p-11, 1.0},
            {1.0 + 3 * 0x1p-11, 1.0 + 0x1p-9},
            {1.0 + 0x1p-11 + 0x1p-23, 1.0 + 0x1p-10},
            {1.0 + 0x1p-10, 1.0 + 0x1p-10},
            {-(1.0 + 0x1p-11), -1.0},
            {0x1.ffcp127, 0x1.ffcp127},
            {0x1.ffdffep127, 0x1.ffcp127},
            {0x1.ffep127, INFINITY},
            {0x1.fffffep127, INFINITY},
            {0x1p-126, 0x1p-126},
            {0x1p-136, 0x1p-136},
            {0x1p-137, 0.0},
            {3 * 0x1p-137, 0x1p-135},
            {0x1p-149, 0.0},
            {-0.0, -0.0},
            {INFINITY, INFINITY},
            {-INFINITY, -INFINITY},
        };
        for (const auto& c : cases) {
            const float got = round_to_tf32(static_cast<float>(c.x));
            QVERIFY2(ref::same_value(got, c.want), qPrintable(QString("%1 -> %2, want %3")
                                                                  .arg(c.x, 0, 'g', 17)
                                                                  .arg(double(got), 0, 'g', 17)
                                                                  .arg(c.want, 0, 'g', 17)));
        }
        const float nan = round_to_tf32(ref::from_bits(0xff800001u));
        QVERIFY(std::isnan(nan) && std::signbit(nan));
    }

    void all_fp8_patterns_round_trip() {
        for (uint32_t b = 0; b < 256; ++b) {
            const float e4 = e4m3_bits_to_float(static_cast<uint8_t>(b));
            QVERIFY2(ref::same_value(e4, ref::decode(b, ref::kE4M3)), qPrintable("e4m3 " + hex(b, 2)));
            const uint8_t back4 = float_to_e4m3_bits(e4);
            if (std::isnan(e4))
                QCOMPARE(back4, static_cast<uint8_t>(b));  // only S.1111.111
            else
                QVERIFY2(back4 == b, qPrintable("e4m3 " + hex(b, 2) + " -> " + hex(back4, 2)));

            const float e5 = e5m2_bits_to_float(static_cast<uint8_t>(b));
            QVERIFY2(ref::same_value(e5, ref::decode(b, ref::kE5M2)), qPrintable("e5m2 " + hex(b, 2)));
            const uint8_t back5 = float_to_e5m2_bits(e5);
            if (std::isnan(e5))
                QVERIFY((back5 & 0x7c) == 0x7c && (back5 & 0x3) && (back5 & 0x80) == (b & 0x80));
            else
                QVERIFY2(back5 == b, qPrintable("e5m2 " + hex(b, 2) + " -> " + hex(back5, 2)));
        }
    }

    void all_bf16_patterns_round_trip() {
        for (uint32_t b = 0; b < 65536; ++b) {
            const float f = bf16_bits_to_float(static_cast<uint16_t>(b));
            if (!ref::same_value(f, ref::decode(b, ref::kBf16)))
                QFAIL(qPrintable("bf16 decode " + hex(b, 4)));
            const uint16_t back = float_to_bf16_bits(f);
            if (std::isnan(f)) {
                QVERIFY((back & 0x7f80) == 0x7f80 && (back & 0x40) && (back & 0x8000) == (b & 0x8000));
                QCOMPARE(back & 0x3f, b & 0x3f);  // payload kept
            } else if (back != b) {
                QFAIL(qPrintable("bf16 " + hex(b, 4) + " -> " + hex(back, 4)));
            }
        }
    }

    // Every format against the float64 reference over ~1M floats spread over all patterns.
    void strided_floats_match_reference() {
        const std::vector<float> in = strided_inputs();
        for (Format f : {Format::TF32, Format::FP16, Format::BF16, Format::E4M3, Format::E5M2}) {
            const ref::Spec& spec = spec_of(f);
            std::vector<float> arr(in.size());
            round_to_format(f, in.data(), arr.data(), in.size());
            int bad = 0;
            QString first;
            for (size_t i = 0; i < in.size(); ++i) {
                const float got = round_to_format(in[i], f);
                const double want = ref::round_value(in[i], spec);
                if ((!ref::same_value(got, want) || ref::to_bits(arr[i]) != ref::to_bits(got)) && bad++ == 0)
                    first = QString("x=%1 (%2) got %3 array %4 want %5")
                                .arg(double(in[i]), 0, 'g', 12)
                                .arg(hex(ref::to_bits(in[i]), 8))
                                .arg(double(got), 0, 'g', 12)
                                .arg(double(arr[i]), 0, 'g', 12)
                                .arg(want, 0, 'g', 12);
            }
            QVERIFY2(bad == 0, qPrintable(QString::fromStdString(format_name(f)) +
                                          QString(": %1 mismatches, first %2").arg(bad).arg(first)));
        }
    }

    // The threaded array path equals the scalar path bit for bit, in place or not, for every
    // format, on gradient-like data spanning many binades.
    void array_path_equals_scalar() {
        Rng rng(7);
        std::vector<float> in(300007);
        for (auto& v : in) v = rng.normal() * std::ldexp(1.0f, static_cast<int>(rng.below(60)) - 40);
        in[5] = NAN;
        in[6] = -INFINITY;
        in[7] = -0.0f;
        in[8] = ref::from_bits(0x7f812345u);
        for (Format f :
             {Format::FP32, Format::TF32, Format::FP16, Format::BF16, Format::E4M3, Format::E5M2}) {
            std::vector<float> out(in.size()), inplace = in;
            round_to_format(f, in.data(), out.data(), in.size());
            round_to_format(f, inplace.data(), inplace.data(), inplace.size());
            for (size_t i = 0; i < in.size(); ++i) {
                const uint32_t want = ref::to_bits(round_to_format(in[i], f));
                if (ref::to_bits(out[i]) != want || ref::to_bits(inplace[i]) != want)
                    QFAIL(qPrintable(QString::fromStdString(format_name(f) + " at " + std::to_string(i))));
            }
        }
        // FP32 is the identity, NaN payload included.
        QCOMPARE(ref::to_bits(round_to_format(in[8], Format::FP32)), 0x7f812345u);
    }

    void format_info_matches_definitions() {
        struct Want {
            Format f;
            const char* name;
            int e, m;
            bool inf;
            double max, min_normal, min_sub;
        };
        const Want wants[] = {
            {Format::FP32, "fp32", 8, 23, true, 0x1.fffffep127, 0x1p-126, 0x1p-149},
            {Format::TF32, "tf32", 8, 10, true, 0x1.ffcp127, 0x1p-126, 0x1p-136},
            {Format::FP16, "fp16", 5, 10, true, 65504.0, 0x1p-14, 0x1p-24},
            {Format::BF16, "bf16", 8, 7, true, 0x1.fep127, 0x1p-126, 0x1p-133},
            {Format::E4M3, "e4m3", 4, 3, false, 448.0, 0x1p-6, 0x1p-9},
            {Format::E5M2, "e5m2", 5, 2, true, 57344.0, 0x1p-14, 0x1p-16},
        };
        for (const auto& w : wants) {
            const FormatInfo& info = format_info(w.f);
            QCOMPARE(info.format, w.f);
            QCOMPARE(QString(info.name), QString(w.name));
            QCOMPARE(QString::fromStdString(format_name(w.f)), QString(w.name));
            QCOMPARE(info.exponent_bits, w.e);
            QCOMPARE(info.mantissa_bits, w.m);
            QCOMPARE(info.has_infinity, w.inf);
            QCOMPARE(double(info.max_finite), w.max);
            QCOMPARE(double(info.min_normal), w.min_normal);
            QCOMPARE(double(info.min_subnormal), w.min_sub);
            QCOMPARE(info.min_exponent, std::ilogb(w.min_sub));
            QCOMPARE(info.max_exponent, std::ilogb(w.max));
            // The limits are fixed points of the rounding.
            for (double v : {w.max, w.min_normal, w.min_sub, -w.max})
                QCOMPARE(double(round_to_format(static_cast<float>(v), w.f)), v);
        }
    }

    void parse_format_names() {
        for (Format f :
             {Format::FP32, Format::TF32, Format::FP16, Format::BF16, Format::E4M3, Format::E5M2}) {
            QCOMPARE(parse_format(format_name(f)), f);
            QString upper = QString::fromStdString(format_name(f)).toUpper();
            QCOMPARE(parse_format(upper.toStdString()), f);
        }
        QCOMPARE(parse_format("Bf16"), Format::BF16);
    }

    void parse_format_errors_name_the_value() {
        for (const char* bad : {"fp17", "", "float16 ", "e4m3fn", "half"}) {
            try {
                parse_format(bad);
                QFAIL(qPrintable(QString("'%1' was accepted").arg(bad)));
            } catch (const ConfigError& e) {
                const QString msg = e.what();
                QVERIFY2(msg.contains(QString("'%1'").arg(bad)), qPrintable(msg));
                QVERIFY2(msg.contains("fp16") && msg.contains("e5m2"), qPrintable(msg));  // lists valid names
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestFormats)
#include "test_formats.moc"
