// Exponent histogram: bins on constructed arrays (every power of two of the FP32 range,
// subnormal floats, zeros, inf/NaN), agreement with an independent frexp classification on
// random data (threaded path included), merging, range statistics per format on hand-counted
// inputs, and the blob codec including every kind of malformed blob.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/numeric/exponent_histogram.h"
#include "core/numeric/format.h"

using namespace mpwb;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The formats' limits written from their definitions, independent of format_info().
struct Limits {
    Format f;
    double max, min_sub, min_normal;
};
const Limits kLimits[] = {
    {Format::FP32, 0x1.fffffep127, 0x1p-149, 0x1p-126},
    {Format::TF32, 0x1.ffcp127, 0x1p-136, 0x1p-126},
    {Format::FP16, 65504.0, 0x1p-24, 0x1p-14},
    {Format::BF16, 0x1.fep127, 0x1p-133, 0x1p-126},
    {Format::E4M3, 448.0, 0x1p-9, 0x1p-6},
    {Format::E5M2, 57344.0, 0x1p-16, 0x1p-14},
};

// Histogram by frexp, one element at a time.
struct Expected {
    std::vector<uint64_t> bins = std::vector<uint64_t>(277, 0);
    uint64_t zeros = 0, non_finite = 0;
    uint64_t above[6] = {};
    float max_abs = 0;
};

Expected classify(const std::vector<float>& x) {
    Expected e;
    for (float v : x) {
        if (std::isnan(v)) {
            ++e.non_finite;
            continue;
        }
        e.max_abs = std::max(e.max_abs, std::fabs(v));
        if (std::isinf(v)) {
            ++e.non_finite;
            continue;
        }
        if (v == 0) {
            ++e.zeros;
            continue;
        }
        int ex;
        std::frexp(static_cast<double>(v), &ex);  // |v| = m * 2^ex, m in [0.5, 1)
        ++e.bins[static_cast<size_t>(ex - 1 + 149)];
        for (const auto& l : kLimits)
            if (std::fabs(static_cast<double>(v)) > l.max) ++e.above[static_cast<int>(l.f)];
    }
    return e;
}

void compare(const ExponentHistogram& h, const Expected& e) {
    for (int ex = -149; ex <= 127; ++ex)
        QVERIFY2(h.bin(ex) == e.bins[static_cast<size_t>(ex + 149)],
                 qPrintable(
                     QString("bin 2^%1: %2, want %3").arg(ex).arg(h.bin(ex)).arg(e.bins[size_t(ex + 149)])));
    QCOMPARE(h.zeros, e.zeros);
    QCOMPARE(h.non_finite, e.non_finite);
    for (const auto& l : kLimits) QCOMPARE(h.above_max_of(l.f), e.above[static_cast<int>(l.f)]);
    QCOMPARE(h.max_abs, e.max_abs);
}

// Range stats from the definitions, element by element, in double.
FormatRangeStats stats_by_definition(const std::vector<float>& x, const Limits& l) {
    uint64_t under = 0, sub = 0, over = 0;
    float max_abs = 0;
    for (float v : x) {
        const double a = std::fabs(static_cast<double>(v));
        if (!std::isnan(v)) max_abs = std::max(max_abs, std::fabs(v));
        if (!std::isfinite(v) || a > l.max)
            ++over;
        else if (a != 0 && a < l.min_sub)
            ++under;
        else if (a >= l.min_sub && a < l.min_normal)
            ++sub;
    }
    FormatRangeStats s;
    const double n = static_cast<double>(x.size());
    s.underflow_fraction = under / n;
    s.subnormal_fraction = sub / n;
    s.overflow_fraction = over / n;
    s.max_abs = max_abs;
    s.headroom_log2 = max_abs == 0 ? kInf : static_cast<float>(std::log2(l.max / max_abs));
    return s;
}

std::vector<float> wide_random(size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> x(n);
    for (auto& v : x) {
        const int e = static_cast<int>(rng.below(300)) - 165;  // reaches below 2^-149 and past 2^128
        v = static_cast<float>(std::ldexp(1.0 + rng.uniform(), e)) * (rng.below(2) ? 1.0f : -1.0f);
        if (rng.below(50) == 0) v = 0.0f;
    }
    x[3] = std::nanf("");
    x[4] = -kInf;
    x[5] = 65504.0f;
    x[6] = 65505.0f;
    x[7] = 448.0f;
    x[8] = 448.00003f;
    return x;
}

void put_varint(std::vector<uint8_t>& b, uint64_t v) {
    while (v >= 0x80) {
        b.push_back(uint8_t(v | 0x80));
        v >>= 7;
    }
    b.push_back(uint8_t(v));
}

// A blob written by hand from the documented layout.
std::vector<uint8_t> handmade_blob(uint64_t zeros, uint64_t nf, float max_abs, int formats,
                                   const std::vector<uint64_t>& above, uint64_t first,
                                   const std::vector<uint64_t>& bins) {
    std::vector<uint8_t> b = {'M', 'P', 'E', 'H', 1};
    put_varint(b, zeros);
    put_varint(b, nf);
    uint32_t m;
    std::memcpy(&m, &max_abs, 4);
    for (int k = 0; k < 4; ++k) b.push_back(uint8_t(m >> (8 * k)));
    b.push_back(uint8_t(formats));
    for (uint64_t a : above) put_varint(b, a);
    put_varint(b, first);
    put_varint(b, bins.size());
    for (uint64_t c : bins) put_varint(b, c);
    return b;
}

void expect_data_error(const std::vector<uint8_t>& blob, const char* needle) {
    try {
        ExponentHistogram::from_blob(blob);
        QFAIL(qPrintable(QString("blob accepted; expected error containing '%1'").arg(needle)));
    } catch (const DataError& e) {
        QVERIFY2(QString(e.what()).contains(needle), qPrintable(QString(e.what()) + " // wanted: " + needle));
        QVERIFY2(QString(e.what()).contains("exponent histogram blob"), e.what());
    }
}

}  // namespace

class TestExponentHistogram : public QObject {
    Q_OBJECT

private slots:
    void every_power_of_two() {
        std::vector<float> x;
        std::vector<uint64_t> want(277, 0);
        for (int e = -149; e <= 127; ++e) {
            const int copies = (e + 1000) % 5 + 1;
            for (int c = 0; c < copies; ++c) {
                // Mantissas 1, 1.5, 1.75 where representable (2^-149 has no room for a fraction).
                const double m = e == -149 ? 1.0 : (e == -148 ? 1.5 : 1.0 + 0.25 * (c % 4));
                x.push_back(static_cast<float>(std::ldexp(c % 2 ? -m : m, e)));
            }
            want[size_t(e + 149)] = uint64_t(copies);
        }
        for (int i = 0; i < 7; ++i) x.push_back(i % 2 ? -0.0f : 0.0f);
        x.push_back(kInf);
        x.push_back(-kInf);
        x.push_back(std::nanf(""));
        x.push_back(-std::nanf(""));
        const ExponentHistogram h = ExponentHistogram::compute(x.data(), x.size());
        for (int e = -149; e <= 127; ++e) QCOMPARE(h.bin(e), want[size_t(e + 149)]);
        QCOMPARE(h.bin(-150), uint64_t{0});
        QCOMPARE(h.bin(128), uint64_t{0});
        QCOMPARE(h.zeros, uint64_t{7});
        QCOMPARE(h.non_finite, uint64_t{4});
        QCOMPARE(h.total(), uint64_t(x.size()));
        QCOMPARE(h.lowest_exponent(), -149);
        QCOMPARE(h.highest_exponent(), 127);
        QCOMPARE(h.max_abs, kInf);
        compare(h, classify(x));
    }

    void subnormal_floats_by_leading_bit() {
        const std::vector<float> x = {0x1p-149f, 0x1.8p-148f, 0x1.fffffcp-127f,
                                      0x1p-127f, 0x1.4p-140f, 0x1p-126f};
        const ExponentHistogram h = ExponentHistogram::compute(x.data(), x.size());
        QCOMPARE(h.bin(-149), uint64_t{1});
        QCOMPARE(h.bin(-148), uint64_t{1});
        QCOMPARE(h.bin(-127), uint64_t{2});
        QCOMPARE(h.bin(-140), uint64_t{1});
        QCOMPARE(h.bin(-126), uint64_t{1});
        QCOMPARE(h.zeros, uint64_t{0});
        QCOMPARE(h.max_abs, 0x1p-126f);
    }

    void empty_and_zero_inputs() {
        const ExponentHistogram empty = ExponentHistogram::compute(nullptr, 0);
        QCOMPARE(empty.total(), uint64_t{0});
        const FormatRangeStats s = range_stats(empty, Format::FP16);
        QCOMPARE(s.underflow_fraction, 0.0);
        QCOMPARE(s.overflow_fraction, 0.0);
        QCOMPARE(s.headroom_log2, kInf);
        const std::vector<float> zeros(1000, 0.0f);
        const FormatRangeStats z = range_stats(zeros.data(), zeros.size(), Format::E4M3);
        QCOMPARE(z.underflow_fraction, 0.0);  // zeros are not underflow
        QCOMPARE(z.max_abs, 0.0f);
        QCOMPARE(z.headroom_log2, kInf);
    }

    // Large enough for the threaded path; every count against frexp.
    void random_matches_frexp() {
        const std::vector<float> x = wide_random(700001, 11);
        compare(ExponentHistogram::compute(x.data(), x.size()), classify(x));
    }

    void merge_equals_whole() {
        const std::vector<float> x = wide_random(200003, 12);
        ExponentHistogram a = ExponentHistogram::compute(x.data(), 77777);
        a += ExponentHistogram::compute(x.data() + 77777, x.size() - 77777);
        QVERIFY(a == ExponentHistogram::compute(x.data(), x.size()));
        QCOMPARE(a.total(), uint64_t(x.size()));
    }

    void range_stats_hand_counted() {
        std::vector<float> x;
        auto add = [&](int n, float v) {
            for (int i = 0; i < n; ++i) x.push_back(i % 2 ? -v : v);
        };
        add(10, 0.0f);
        add(5, 0x1p-30f);
        add(3, 0x1p-25f);
        add(4, 0x1p-24f);
        add(2, 6e-5f);
        add(6, 1.0f);
        add(1, 65504.0f);
        add(1, 65505.0f);
        add(1, kInf);
        add(1, std::nanf(""));
        QCOMPARE(x.size(), size_t{34});
        const ExponentHistogram h = ExponentHistogram::compute(x.data(), x.size());

        const FormatRangeStats fp16 = range_stats(h, Format::FP16);
        QCOMPARE(fp16.underflow_fraction, 8.0 / 34);  // 2^-30 and 2^-25 are below 2^-24
        QCOMPARE(fp16.subnormal_fraction, 6.0 / 34);  // 2^-24 and 6e-5 < 2^-14
        QCOMPARE(fp16.overflow_fraction, 3.0 / 34);   // 65505, inf, NaN (65504 fits)
        QCOMPARE(fp16.max_abs, kInf);
        QCOMPARE(fp16.headroom_log2, -kInf);

        const FormatRangeStats e4m3 = range_stats(h, Format::E4M3);
        QCOMPARE(e4m3.underflow_fraction, 14.0 / 34);  // everything below 2^-9
        QCOMPARE(e4m3.subnormal_fraction, 0.0);
        QCOMPARE(e4m3.overflow_fraction, 4.0 / 34);  // 65504, 65505, inf, NaN

        const FormatRangeStats bf16 = range_stats(h, Format::BF16);
        QCOMPARE(bf16.underflow_fraction, 0.0);
        QCOMPARE(bf16.subnormal_fraction, 0.0);
        QCOMPARE(bf16.overflow_fraction, 2.0 / 34);

        // Without inf: headroom from the largest finite magnitude, via the explicit max_abs overload.
        const FormatRangeStats at_max = range_stats(h, 65504.0f, Format::FP16);
        QCOMPARE(at_max.headroom_log2, 0.0f);
        const FormatRangeStats small = range_stats(h, 0.25f, Format::E4M3);
        QCOMPARE(small.headroom_log2, static_cast<float>(std::log2(448.0 / 0.25)));
    }

    void range_stats_random_all_formats() {
        const std::vector<float> x = wide_random(300007, 13);
        const ExponentHistogram h = ExponentHistogram::compute(x.data(), x.size());
        for (const auto& l : kLimits) {
            const FormatRangeStats got = range_stats(h, l.f);
            const FormatRangeStats want = stats_by_definition(x, l);
            const QString name = QString::fromStdString(format_name(l.f));
            QVERIFY2(got.underflow_fraction == want.underflow_fraction, qPrintable(name));
            QVERIFY2(got.subnormal_fraction == want.subnormal_fraction, qPrintable(name));
            QVERIFY2(got.overflow_fraction == want.overflow_fraction, qPrintable(name));
            QCOMPARE(got.max_abs, want.max_abs);
            QCOMPARE(got.headroom_log2, want.headroom_log2);
            const FormatRangeStats direct = range_stats(x.data(), x.size(), l.f);
            QCOMPARE(direct.overflow_fraction, got.overflow_fraction);
        }
    }

    void blob_round_trip() {
        const std::vector<float> x = wide_random(50000, 14);
        const ExponentHistogram h = ExponentHistogram::compute(x.data(), x.size());
        const std::vector<uint8_t> blob = h.to_blob();
        QVERIFY(ExponentHistogram::from_blob(blob) == h);
        QVERIFY(ExponentHistogram::from_blob(ExponentHistogram().to_blob()) == ExponentHistogram());

        // A gradient-like tensor (a few dozen binades) stays small.
        Rng rng(3);
        std::vector<float> g(100000);
        for (auto& v : g) v = rng.normal() * 1e-3f;
        const ExponentHistogram gh = ExponentHistogram::compute(g.data(), g.size());
        const std::vector<uint8_t> gb = gh.to_blob();
        QVERIFY2(gb.size() < 150, qPrintable(QString::number(gb.size())));
        QVERIFY(ExponentHistogram::from_blob(gb) == gh);

        // The hand-written layout decodes to what it says.
        const auto hand = handmade_blob(3, 1, 2.5f, 6, {0, 0, 0, 0, 0, 0}, 149, {4, 5});
        const ExponentHistogram hh = ExponentHistogram::from_blob(hand);
        QCOMPARE(hh.zeros, uint64_t{3});
        QCOMPARE(hh.non_finite, uint64_t{1});
        QCOMPARE(hh.max_abs, 2.5f);
        QCOMPARE(hh.bin(0), uint64_t{4});
        QCOMPARE(hh.bin(1), uint64_t{5});
        QCOMPARE(hh.total(), uint64_t{13});
        QVERIFY(hh.to_blob() == hand);
    }

    void malformed_blobs() {
        const std::vector<float> x = wide_random(5000, 15);
        const std::vector<uint8_t> good = ExponentHistogram::compute(x.data(), x.size()).to_blob();
        expect_data_error({}, "truncated");
        for (size_t len = 0; len < good.size(); ++len)
            expect_data_error(std::vector<uint8_t>(good.begin(), good.begin() + long(len)), "truncated");
        auto trailing = good;
        trailing.push_back(0);
        expect_data_error(trailing, "trailing");
        auto magic = good;
        magic[0] = 'X';
        expect_data_error(magic, "magic");
        auto version = good;
        version[4] = 9;
        expect_data_error(version, "version 9");

        const std::vector<uint64_t> no_over(6, 0);
        expect_data_error(handmade_blob(0, 0, 1.0f, 5, {0, 0, 0, 0, 0}, 149, {1}), "format count 5");
        expect_data_error(handmade_blob(0, 0, 1.0f, 6, no_over, 270, {1, 1, 1, 1, 1, 1, 1, 1}), "outside");
        expect_data_error(handmade_blob(0, 0, 1.0f, 6, no_over, 5, {}), "empty bin span");
        expect_data_error(handmade_blob(0, 0, 1.0f, 6, no_over, 400, {}), "outside");
        expect_data_error(handmade_blob(0, 0, std::nanf(""), 6, no_over, 149, {1}), "NaN");
        expect_data_error(handmade_blob(0, 0, 1.0f, 6, {0, 0, 2, 0, 0, 0}, 149, {1}),
                          "fp16");  // overflow w/o big values
        auto overlong = handmade_blob(0, 0, 1.0f, 6, no_over, 149, {1});
        overlong.insert(overlong.begin() + 5,
                        {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
        expect_data_error(overlong, "varint");
    }
};

QTEST_APPLESS_MAIN(TestExponentHistogram)
#include "test_exponent_histogram.moc"
