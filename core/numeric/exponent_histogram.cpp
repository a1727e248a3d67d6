// Exponent histogram pass, range statistics and the blob codec.
#include "core/numeric/exponent_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>

#include "core/common/error.h"
#include "core/common/parallel.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mpwb {

namespace {

constexpr int kBinOffset = -ExponentHistogram::kMinExponent;  // index = exponent + 149

// The pass has two halves, run block by block so the data stays in L1:
//  - range counts: per format, values whose abs bits exceed the format's max bits (inf/NaN
//    included; the non-finite count is subtracted at the end), and the largest non-NaN
//    magnitude. Branch-free, four lanes at a time with SSE2 where the compiler targets it.
//  - the exponent field counted in four interleaved tables, so runs of equal exponents
//    (gradients cluster) do not serialise on one counter; only true FP32 subnormals branch.
// Abs bits of floats are below 2^31, so signed 32-bit compares order them correctly.
struct RangeCounts {
    uint64_t above[kFormatCount] = {};
    uint32_t max_bits = 0;
};

void range_counts_scalar(const float* x, size_t n, const uint32_t* thr, RangeCounts& rc) {
    for (size_t i = 0; i < n; ++i) {
        const uint32_t a = std::bit_cast<uint32_t>(x[i]) & 0x7fffffffu;
        for (size_t f = 0; f < kFormatCount; ++f) rc.above[f] += a > thr[f];
        rc.max_bits = std::max(rc.max_bits, a <= 0x7f800000u ? a : 0u);
    }
}

#if defined(__SSE2__)
void range_counts(const float* x, size_t n, const uint32_t* thr, RangeCounts& rc) {
    const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
    const __m128i inf = _mm_set1_epi32(0x7f800000);
    __m128i t[kFormatCount], acc[kFormatCount];
    for (size_t f = 0; f < kFormatCount; ++f) {
        t[f] = _mm_set1_epi32(static_cast<int>(thr[f]));
        acc[f] = _mm_setzero_si128();
    }
    __m128i mx = _mm_setzero_si128();
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {  // n is a block (<= 2^31 per lane), so 32-bit lanes suffice
        const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)), abs_mask);
        for (size_t f = 0; f < kFormatCount; ++f) acc[f] = _mm_sub_epi32(acc[f], _mm_cmpgt_epi32(a, t[f]));
        const __m128i not_nan = _mm_andnot_si128(_mm_cmpgt_epi32(a, inf), a);
        const __m128i gt = _mm_cmpgt_epi32(not_nan, mx);
        mx = _mm_or_si128(_mm_and_si128(gt, not_nan), _mm_andnot_si128(gt, mx));
    }
    alignas(16) uint32_t lanes[4];
    for (size_t f = 0; f < kFormatCount; ++f) {
        _mm_store_si128(reinterpret_cast<__m128i*>(lanes), acc[f]);
        rc.above[f] += uint64_t{lanes[0]} + lanes[1] + lanes[2] + lanes[3];
    }
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), mx);
    for (uint32_t m : lanes) rc.max_bits = std::max(rc.max_bits, m);
    range_counts_scalar(x + i, n - i, thr, rc);
}
#else
void range_counts(const float* x, size_t n, const uint32_t* thr, RangeCounts& rc) {
    range_counts_scalar(x, n, thr, rc);
}
#endif

void accumulate(const float* x, size_t n, ExponentHistogram& out) {
    uint64_t field[4][256] = {};
    uint64_t sub[23] = {};  // FP32 subnormals by leading bit position
    uint32_t thr[kFormatCount];
    for (size_t f = 0; f < kFormatCount; ++f)
        thr[f] = std::bit_cast<uint32_t>(format_info(static_cast<Format>(f)).max_finite);
    RangeCounts rc;

    auto one = [&](const float v, int lane) {
        const uint32_t a = std::bit_cast<uint32_t>(v) & 0x7fffffffu;
        ++field[lane][a >> 23];
        if (a - 1u < 0x7fffffu) [[unlikely]]
            ++sub[31 - std::countl_zero(a)];
    };
    constexpr size_t kBlock = 4096;
    for (size_t begin = 0; begin < n; begin += kBlock) {
        const size_t end = std::min(n, begin + kBlock);
        range_counts(x + begin, end - begin, thr, rc);
        size_t i = begin;
        for (; i + 4 <= end; i += 4) {
            one(x[i], 0);
            one(x[i + 1], 1);
            one(x[i + 2], 2);
            one(x[i + 3], 3);
        }
        for (; i < end; ++i) one(x[i], 0);
    }

    auto field_count = [&](int e) { return field[0][e] + field[1][e] + field[2][e] + field[3][e]; };
    uint64_t subnormals = 0;
    for (int k = 0; k < 23; ++k) {
        out.bins[static_cast<size_t>(k)] += sub[k];  // leading bit k: exponent k - 149
        subnormals += sub[k];
    }
    for (int e = 1; e <= 254; ++e) out.bins[static_cast<size_t>(e + 22)] += field_count(e);
    const uint64_t non_finite = field_count(255);
    out.zeros += field_count(0) - subnormals;
    out.non_finite += non_finite;
    for (size_t f = 0; f < kFormatCount; ++f) out.above_max[f] += rc.above[f] - non_finite;
    out.max_abs = std::max(out.max_abs, std::bit_cast<float>(rc.max_bits));
}

// --- blob codec -------------------------------------------------------------------------

constexpr uint8_t kMagic[4] = {'M', 'P', 'E', 'H'};
constexpr uint8_t kVersion = 1;

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
}

class Reader {
public:
    Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw DataError("exponent histogram blob (" + std::to_string(size_) + " bytes): " + what +
                        " at byte " + std::to_string(pos_));
    }
    uint8_t byte(const char* what) {
        if (pos_ >= size_) fail(std::string("truncated while reading ") + what);
        return data_[pos_++];
    }
    uint64_t varint(const char* what) {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            const uint8_t b = byte(what);
            if (shift == 63 && b > 1) fail(std::string("varint overflows 64 bits in ") + what);
            v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
        fail(std::string("varint longer than 10 bytes in ") + what);
    }
    uint32_t u32(const char* what) {
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) v |= static_cast<uint32_t>(byte(what)) << (8 * k);
        return v;
    }
    bool at_end() const { return pos_ == size_; }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

}  // namespace

ExponentHistogram ExponentHistogram::compute(const float* x, size_t n) {
    ExponentHistogram total;
    std::mutex merge;
    parallel_for(static_cast<int64_t>(n), int64_t{1} << 16, [&](int64_t begin, int64_t end) {
        ExponentHistogram part;
        accumulate(x + begin, static_cast<size_t>(end - begin), part);
        std::lock_guard lock(merge);
        total += part;
    });
    return total;
}

uint64_t ExponentHistogram::bin(int exponent) const {
    if (exponent < kMinExponent || exponent > kMaxExponent) return 0;
    return bins[static_cast<size_t>(exponent + kBinOffset)];
}

uint64_t ExponentHistogram::nonzero_finite() const {
    uint64_t s = 0;
    for (uint64_t b : bins) s += b;
    return s;
}

uint64_t ExponentHistogram::total() const { return nonzero_finite() + zeros + non_finite; }

int ExponentHistogram::lowest_exponent() const {
    for (size_t i = 0; i < kBinCount; ++i)
        if (bins[i]) return static_cast<int>(i) - kBinOffset;
    return kMaxExponent + 1;
}

int ExponentHistogram::highest_exponent() const {
    for (size_t i = kBinCount; i-- > 0;)
        if (bins[i]) return static_cast<int>(i) - kBinOffset;
    return kMinExponent - 1;
}

ExponentHistogram& ExponentHistogram::operator+=(const ExponentHistogram& other) {
    for (size_t i = 0; i < kBinCount; ++i) bins[i] += other.bins[i];
    zeros += other.zeros;
    non_finite += other.non_finite;
    for (size_t f = 0; f < kFormatCount; ++f) above_max[f] += other.above_max[f];
    max_abs = std::max(max_abs, other.max_abs);
    return *this;
}

bool ExponentHistogram::operator==(const ExponentHistogram& other) const {
    return bins == other.bins && zeros == other.zeros && non_finite == other.non_finite &&
           above_max == other.above_max &&
           std::bit_cast<uint32_t>(max_abs) == std::bit_cast<uint32_t>(other.max_abs);
}

// Layout (version 1): "MPEH", u8 version, varint zeros, varint non_finite, u32 max_abs bits,
// u8 format count (6), that many varint above_max counts, varint index of the first stored bin
// (exponent + 149), varint number of stored bins, that many varint bin counts.
std::vector<uint8_t> ExponentHistogram::to_blob() const {
    std::vector<uint8_t> out(std::begin(kMagic), std::end(kMagic));
    out.push_back(kVersion);
    put_varint(out, zeros);
    put_varint(out, non_finite);
    const uint32_t m = std::bit_cast<uint32_t>(max_abs);
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(m >> (8 * k)));
    out.push_back(static_cast<uint8_t>(kFormatCount));
    for (uint64_t a : above_max) put_varint(out, a);
    const int lo = lowest_exponent(), hi = highest_exponent();
    if (lo > hi) {
        put_varint(out, 0);
        put_varint(out, 0);
        return out;
    }
    put_varint(out, static_cast<uint64_t>(lo + kBinOffset));
    put_varint(out, static_cast<uint64_t>(hi - lo + 1));
    for (int e = lo; e <= hi; ++e) put_varint(out, bin(e));
    return out;
}

ExponentHistogram ExponentHistogram::from_blob(const uint8_t* data, size_t size) {
    Reader r(data, size);
    if (!data && size) r.fail("null data");
    for (uint8_t expected : kMagic)
        if (r.byte("magic") != expected) r.fail("bad magic (expected \"MPEH\")");
    const uint8_t version = r.byte("version");
    if (version != kVersion) r.fail("unsupported version " + std::to_string(version));
    ExponentHistogram h;
    h.zeros = r.varint("zero count");
    h.non_finite = r.varint("non-finite count");
    h.max_abs = std::bit_cast<float>(r.u32("max_abs"));
    if (std::isnan(h.max_abs) || std::signbit(h.max_abs)) r.fail("max_abs is NaN or negative");
    const uint8_t formats = r.byte("format count");
    if (formats != kFormatCount)
        r.fail("format count " + std::to_string(formats) + " (expected " + std::to_string(kFormatCount) +
               ")");
    for (auto& a : h.above_max) a = r.varint("overflow count");
    const uint64_t first = r.varint("first bin index");
    const uint64_t count = r.varint("bin count");
    if (first > kBinCount || count > kBinCount - first)
        r.fail("bin span [" + std::to_string(first) + ", +" + std::to_string(count) + ") outside the " +
               std::to_string(kBinCount) + " bins");
    if (count == 0 && first != 0) r.fail("empty bin span with nonzero start " + std::to_string(first));
    for (uint64_t i = 0; i < count; ++i) h.bins[first + i] = r.varint("bin count");
    if (!r.at_end()) r.fail("trailing bytes");

    // Consistency: values past a format's maximum must lie in its top binade or above.
    for (size_t f = 0; f < kFormatCount; ++f) {
        const int top = format_info(static_cast<Format>(f)).max_exponent;
        uint64_t possible = 0;
        for (int e = top; e <= kMaxExponent; ++e) possible += h.bin(e);
        if (h.above_max[f] > possible)
            r.fail("overflow count " + std::to_string(h.above_max[f]) + " for " +
                   format_name(static_cast<Format>(f)) + " exceeds the " + std::to_string(possible) +
                   " values at or above 2^" + std::to_string(top));
    }
    return h;
}

uint64_t ExponentHistogram::above_max_of(Format f) const {
    const auto i = static_cast<size_t>(f);
    if (i < kFormatCount) return above_max[i];
    uint64_t above = 0;
    for (int e = format_info(f).max_exponent + 1; e <= kMaxExponent; ++e) above += bin(e);
    return above;
}

FormatRangeStats range_stats(const ExponentHistogram& h, float max_abs, Format f) {
    const FormatInfo& info = format_info(f);
    FormatRangeStats s;
    s.max_abs = max_abs;
    s.headroom_log2 = max_abs == 0.0f ? std::numeric_limits<float>::infinity()
                                      : static_cast<float>(std::log2(static_cast<double>(info.max_finite)) -
                                                           std::log2(static_cast<double>(max_abs)));
    const uint64_t total = h.total();
    if (total == 0) return s;
    // min_subnormal and min_normal are powers of two, so bins decide these boundaries exactly.
    const int normal_exponent = std::ilogb(info.min_normal);
    uint64_t under = 0, subnormal = 0;
    for (int e = ExponentHistogram::kMinExponent; e < normal_exponent; ++e)
        (e < info.min_exponent ? under : subnormal) += h.bin(e);
    const double t = static_cast<double>(total);
    s.underflow_fraction = static_cast<double>(under) / t;
    s.subnormal_fraction = static_cast<double>(subnormal) / t;
    s.overflow_fraction = static_cast<double>(h.above_max_of(f) + h.non_finite) / t;
    return s;
}

FormatRangeStats range_stats(const ExponentHistogram& h, Format f) { return range_stats(h, h.max_abs, f); }

FormatRangeStats range_stats(const float* x, size_t n, Format f) {
    return range_stats(ExponentHistogram::compute(x, n), f);
}

}  // namespace mpwb
