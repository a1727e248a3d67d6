// Exponent histograms of gradients: how many values fall at each power of two, and how much of a
// tensor each number format would lose. The training loop takes one per layer every K steps on
// the scaled FP32 gradient (before it is rounded to the storage format); the GUI draws the bins
// against the format zones and the run store keeps them as blobs (to_blob/from_blob).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/numeric/format.h"

namespace mpwb {

// Formats whose overflow the histogram counts exactly: the first six entries of enum Format (FP32
// .. E5M2, the storage formats). The MX element formats appended after them (E3M2, E2M3, E2M1)
// are only ever used behind a block scale, and counting them would change the blob layout and
// the device histogram, so for them above_max_of gives the values in binades wholly above max.
inline constexpr size_t kFormatCount = 6;

struct ExponentHistogram {
    // One bin per power of two over the whole FP32 range: bin e counts the finite nonzero values
    // with floor(log2|x|) == e, from the smallest subnormal (2^-149) to the top binade (2^127).
    static constexpr int kMinExponent = -149;
    static constexpr int kMaxExponent = 127;
    static constexpr size_t kBinCount = kMaxExponent - kMinExponent + 1;

    std::array<uint64_t, kBinCount> bins{};
    uint64_t zeros = 0;       // +0 and -0
    uint64_t non_finite = 0;  // +-inf and NaN
    // Per format (indexed by Format): finite values with |x| > format_info(f).max_finite. Bins
    // cannot tell 65504 from 65505, so overflow is counted exactly in the same pass.
    std::array<uint64_t, kFormatCount> above_max{};
    // Largest |x| over every non-NaN value (inf included, so an overflowed tensor shows inf).
    float max_abs = 0.0f;

    // One pass over x: exponent bits read directly, subnormal floats by their leading bit.
    // Large arrays are split over the thread pool; counts are integers, so the result does not
    // depend on the split.
    static ExponentHistogram compute(const float* x, size_t n);

    // Count of bin `exponent`; 0 outside [kMinExponent, kMaxExponent].
    uint64_t bin(int exponent) const;
    // Exact for the first kFormatCount formats; a lower bound for the others (see kFormatCount).
    uint64_t above_max_of(Format f) const;
    uint64_t nonzero_finite() const;  // sum of all bins
    uint64_t total() const;           // every element counted: bins + zeros + non_finite
    // Lowest / highest exponent with a nonzero bin; kMaxExponent+1 / kMinExponent-1 when empty.
    int lowest_exponent() const;
    int highest_exponent() const;

    // Histogram of the concatenation of both inputs.
    ExponentHistogram& operator+=(const ExponentHistogram& other);
    bool operator==(const ExponentHistogram& other) const;

    // Compact, versioned little-endian blob: varint counts and only the span of nonzero bins
    // (a typical gradient histogram is a few dozen bytes). from_blob validates everything and
    // throws DataError naming what is wrong.
    std::vector<uint8_t> to_blob() const;
    static ExponentHistogram from_blob(const uint8_t* data, size_t size);
    static ExponentHistogram from_blob(const std::vector<uint8_t>& blob) {
        return from_blob(blob.data(), blob.size());
    }
};

// Where a tensor lies relative to one format's range. All fractions are over the total element
// count, zeros and non-finite values included (so an all-zero tensor has no underflow), and they
// describe the value before rounding:
struct FormatRangeStats {
    // nonzero |x| < min_subnormal: lost, or at best moved to the smallest subnormal
    double underflow_fraction = 0.0;
    // min_subnormal <= |x| < min_normal: kept with reduced precision
    double subnormal_fraction = 0.0;
    // |x| > max_finite, or inf/NaN. (FP16 values in (65504, 65520) still round to 65504; they
    // count here because they lie past the format's largest value.)
    double overflow_fraction = 0.0;
    float max_abs = 0.0f;
    // log2(max_finite / max_abs): how many doublings of the loss scale the tensor can still take.
    // +inf when max_abs == 0, negative when something lies past the maximum, -inf for inf.
    float headroom_log2 = 0.0f;
};

FormatRangeStats range_stats(const ExponentHistogram& h, float max_abs, Format f);
// Uses h.max_abs.
FormatRangeStats range_stats(const ExponentHistogram& h, Format f);
// Convenience: one pass over x, then the stats for f.
FormatRangeStats range_stats(const float* x, size_t n, Format f);

}  // namespace mpwb
