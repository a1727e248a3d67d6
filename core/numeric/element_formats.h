// Element formats of the scaled low-precision recipes (OCP FP8 E4M3/E5M2, the OCP MX FP6 formats
// E3M2/E2M3 and FP4 E2M1, which NVFP4 shares) and the E8M0 power-of-two scale, as inline
// float -> float roundings for the block quantizers' inner loops: every function here is inline
// and branch-light, built on the exact integer rounding of minifloat.h. Values stay in floats
// (every element value is exactly an FP32 value), so emulation is bit for bit.
//
// All element roundings saturate (finite values past the largest, and +-inf, become +-kMax, as
// the scaled recipes do, E5M2 included), keep NaN as NaN and keep the sign of zero.
#pragma once
#include <bit>
#include <cstdint>

#include "core/numeric/minifloat.h"

namespace mpwb {

// One struct per element format: stored mantissa bits, smallest normal exponent, largest finite.
struct E4M3Spec {
    static constexpr int kMantissaBits = 3, kMinNormalExp = -6;
    static constexpr float kMax = 448.0f;
};
struct E5M2Spec {
    static constexpr int kMantissaBits = 2, kMinNormalExp = -14;
    static constexpr float kMax = 57344.0f;
};
struct E3M2Spec {  // MX FP6: 0.0625 .. 28
    static constexpr int kMantissaBits = 2, kMinNormalExp = -2;
    static constexpr float kMax = 28.0f;
};
struct E2M3Spec {  // MX FP6: 0.125 .. 7.5
    static constexpr int kMantissaBits = 3, kMinNormalExp = 0;
    static constexpr float kMax = 7.5f;
};
struct E2M1Spec {  // MX FP4 / NVFP4: 0, 0.5, 1, 1.5, 2, 3, 4, 6
    static constexpr int kMantissaBits = 1, kMinNormalExp = 0;
    static constexpr float kMax = 6.0f;
};

namespace detail {

// Magnitude code of Spec::kMax: the saturation limit of the codes.
template <class Spec>
inline constexpr uint32_t kMaxCode =
    round_magnitude<Spec::kMantissaBits, Spec::kMinNormalExp>(std::bit_cast<uint32_t>(Spec::kMax));

// Float of a magnitude code clamped to kMax, with the sign bits of x; NaN for a NaN x. Both
// candidates are formed and one selected, so the compiler emits conditional moves.
template <class Spec>
inline float finish_element(uint32_t x_bits, uint32_t code) {
    code = code < kMaxCode<Spec> ? code : kMaxCode<Spec>;
    const uint32_t sign = x_bits & 0x80000000u;
    const uint32_t value =
        float_bits(decode_magnitude<Spec::kMantissaBits, Spec::kMinNormalExp>(code)) | sign;
    // A mask, not ?:, which GCC 12 keeps as a branch and then does not vectorise the loop.
    const uint32_t nan_mask = 0u - static_cast<uint32_t>((x_bits & 0x7fffffffu) > 0x7f800000u);
    return bits_float((value & ~nan_mask) | ((sign | 0x7fc00000u) & nan_mask));
}

}  // namespace detail

// Whether |x| is past what rounding to nearest even would bring to Spec::kMax, i.e. whether
// saturation changes it by more than rounding does (448.01 rounds to 448 in E4M3 and is not
// saturated; 470 is). Infinities count; NaN does not.
template <class Spec>
inline bool rounds_past_max(float x) {
    const uint32_t a = detail::float_bits(x) & 0x7fffffffu;
    return a <= 0x7f800000u &&
           detail::round_magnitude<Spec::kMantissaBits, Spec::kMinNormalExp>(a) > detail::kMaxCode<Spec>;
}

// x rounded to nearest even into the format, saturating at +-kMax (also +-inf); NaN stays NaN
// (quiet, sign kept); signed zero kept; exact subnormals.
template <class Spec>
inline float round_element_saturating(float x) {
    const uint32_t f = detail::float_bits(x);
    // round_magnitude is plain integer arithmetic for inf and NaN bits too (a large code, which
    // the clamp and the NaN select then replace).
    return detail::finish_element<Spec>(
        f, detail::round_magnitude<Spec::kMantissaBits, Spec::kMinNormalExp>(f & 0x7fffffffu));
}

// Stochastic rounding: the magnitude goes to the upper neighbour with probability
// (distance to the lower neighbour) / (gap), decided by random_bits (all 32 used, as a 32-bit
// fixed-point threshold), else to the lower one; saturating and NaN as above. Unbiased in
// expectation below kMax (up to 2^-32 of a gap for magnitudes under 2^-32 of the subnormal step).
template <class Spec>
inline float round_element_stochastic(float x, uint32_t random_bits) {
    const uint32_t f = detail::float_bits(x);
    return detail::finish_element<Spec>(
        f, detail::round_magnitude_stochastic<Spec::kMantissaBits, Spec::kMinNormalExp>(f & 0x7fffffffu,
                                                                                        random_bits));
}

// Counter-based random bits: splitmix64's finaliser over the mixed seed plus index times the
// golden-ratio increment. A pure function of (seed, index), so any split of the index range over
// threads, and any platform, gives the same bits. The seed mix is loop-invariant and hoisted.
inline uint64_t splitmix64_finalise(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
inline uint32_t counter_random_bits(uint64_t seed, uint64_t index) {
    return static_cast<uint32_t>(
        splitmix64_finalise(splitmix64_finalise(seed) + (index + 1) * 0x9e3779b97f4a7c15ull) >> 32);
}

// E8M0 (MX scale): value 2^(bits - 127); 0xFF is NaN; there is no zero and no sign.
inline constexpr uint8_t kE8M0NaN = 0xFF;
inline float e8m0_to_float(uint8_t bits) {
    // bits << 23 is the FP32 pattern of 2^(bits-127) for 1..254; code 0 (2^-127, an FP32
    // subnormal) and 0xFF (inf -> quiet NaN) both need the bit 0x400000 set on top.
    const uint32_t b = bits;
    const uint32_t edge = static_cast<uint32_t>((b == 0) | (b == 0xFFu)) << 22;
    return detail::bits_float((b << 23) | edge);
}

// floor(log2(x)) of a positive finite float (subnormals included), exact integer arithmetic.
inline int floor_log2(float x) {
    const uint32_t a = detail::float_bits(x) & 0x7fffffffu;
    const int raw_exp = static_cast<int>(a >> 23);
    const int fe = raw_exp + (raw_exp == 0);
    const uint32_t m = (a & 0x7fffffu) | (static_cast<uint32_t>(raw_exp != 0) << 23);
    return fe - 151 + std::bit_width(m);  // value = m * 2^(fe - 150), m < 2^bit_width(m)
}

}  // namespace mpwb
