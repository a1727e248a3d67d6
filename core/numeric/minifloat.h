// Shared bit-level machinery for the small binary formats (FP16, FP8 e4m3/e5m2): exact
// round-to-nearest-even of an FP32 magnitude into a format with a given mantissa width and
// minimum normal exponent, and the exact decode back. Internal to core/numeric; the public
// conversions live in half.h and fp8.h, which add each format's rules for inf/NaN/overflow.
#pragma once
#include <bit>
#include <cstdint>

namespace mpwb::detail {

inline uint32_t float_bits(float x) { return std::bit_cast<uint32_t>(x); }
inline float bits_float(uint32_t b) { return std::bit_cast<float>(b); }

// A finite FP32 magnitude `a` (abs bits) cut at the quantum of a format with MBITS stored
// mantissa bits whose smallest normal exponent is EMIN: the code rounded toward zero, the bits
// cut off, and how many. Integer arithmetic only, so nothing depends on the FPU rounding mode or
// FTZ/DAZ. There is no upper limit: codes past the format's largest finite value continue the
// sequence, and the caller decides between infinity and saturation. Adding 1 to a code rolls a
// mantissa carry into the exponent field, which is exactly what the encoding needs (the largest
// subnormal rounds up to the smallest normal, and so on).
struct MagnitudeCut {
    uint32_t truncated;  // code rounded toward zero, exponent field included
    uint32_t remainder;  // the cut-off bits of the significand (below 2^min(shift, 31))
    int shift;           // how many bits were cut off, >= 1; may exceed 31 for tiny magnitudes
};

template <int MBITS, int EMIN>
constexpr MagnitudeCut cut_magnitude(uint32_t a) {
    // Written without data-dependent branches: gradients mix binades at random, and a
    // mispredicted branch per element costs more than the arithmetic.
    const int raw_exp = static_cast<int>(a >> 23);
    const int fe = raw_exp + (raw_exp == 0);  // FP32 subnormal: exponent of the smallest normal
    const uint32_t m = (a & 0x7fffffu) | (static_cast<uint32_t>(raw_exp != 0) << 23);  // implicit bit
    const int e = fe - 127;  // value = m * 2^(fe - 150)
    const int quantum = (e > EMIN ? e : EMIN) - MBITS;
    // >= 23 - MBITS >= 1. Past 24 everything is below half a quantum (m < 2^24 <= halfway), so
    // clamping to 31 keeps the shifts defined and still yields 0 with no rounding up.
    const int shift = quantum - (fe - 150);
    const int clamped = shift < 31 ? shift : 31;
    // Normal results add the exponent offset; a mask rather than ?: because compilers turn
    // the ternary into a branch here.
    const uint32_t normal_mask = 0u - static_cast<uint32_t>(e >= EMIN);
    return {(m >> clamped) + ((static_cast<uint32_t>(e - EMIN) << MBITS) & normal_mask),
            m & ((1u << clamped) - 1u), shift};
}

// Magnitude code of a finite FP32 magnitude, rounded to nearest even (see cut_magnitude).
template <int MBITS, int EMIN>
constexpr uint32_t round_magnitude(uint32_t a) {
    const MagnitudeCut c = cut_magnitude<MBITS, EMIN>(a);
    const uint32_t halfway = 1u << ((c.shift < 31 ? c.shift : 31) - 1);
    // All-ones masks rather than bools: GCC 12 does not vectorise the bool form.
    const uint32_t above = 0u - static_cast<uint32_t>(c.remainder > halfway);
    const uint32_t tie = 0u - static_cast<uint32_t>(c.remainder == halfway);
    return c.truncated + ((above | (tie & (0u - (c.truncated & 1u)))) & 1u);
}

// Magnitude code rounded up with probability remainder / 2^shift, decided by comparing 32 uniform
// random bits with that fraction in 32-bit fixed point (exact while shift <= 32; for smaller
// magnitudes the fraction is floored, a bias below 2^-32 of the gap).
template <int MBITS, int EMIN>
constexpr uint32_t round_magnitude_stochastic(uint32_t a, uint32_t random_bits) {
    const MagnitudeCut c = cut_magnitude<MBITS, EMIN>(a);
    const uint64_t fraction = (static_cast<uint64_t>(c.remainder) << 32) >> (c.shift < 63 ? c.shift : 63);
    return c.truncated + static_cast<uint32_t>(random_bits < fraction);
}

// FP32 value of a finite magnitude code. Subnormals go through one float multiply by a power of
// two, which is exact (the product is a normal FP32 number), so no rounding mode matters.
template <int MBITS, int EMIN>
constexpr float decode_magnitude(uint32_t code) {
    // Both candidates are computed and one selected, so mixed subnormal/normal data does not
    // mispredict.
    const uint32_t biased = code >> MBITS;
    const uint32_t mant = code & ((1u << MBITS) - 1u);
    constexpr uint32_t quantum_bits = static_cast<uint32_t>(EMIN - MBITS + 127) << 23;
    const float subnormal = static_cast<float>(mant) * std::bit_cast<float>(quantum_bits);
    const uint32_t normal_bits =
        ((biased + static_cast<uint32_t>(EMIN + 126)) << 23) | (mant << (23 - MBITS));
    const uint32_t normal_mask = 0u - static_cast<uint32_t>(biased != 0);
    return std::bit_cast<float>((normal_bits & normal_mask) |
                                (std::bit_cast<uint32_t>(subnormal) & ~normal_mask));
}

}  // namespace mpwb::detail
