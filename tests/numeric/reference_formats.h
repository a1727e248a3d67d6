// Independent float64 reference for the number formats, written from the format definitions
// (ldexp/ilogb/floor in double) and sharing no code with core/numeric, so the tests and the
// exhaustive FP16 and MX checks compare the engine's bit tricks against plain arithmetic.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace mpwb::ref {

struct Spec {
    int exponent_bits;
    int mantissa_bits;
    int bias;
    double max_finite;
    bool has_inf;             // false: e4m3 (saturates; S.1111.111 is NaN) and the MX formats
    bool all_finite = false;  // the MX FP6/FP4 formats: every code is a number (no NaN, no inf)
};

inline constexpr Spec kHalf{5, 10, 15, 65504.0, true};
inline constexpr Spec kBf16{8, 7, 127, 0x1.fep127, true};
inline constexpr Spec kTf32{8, 10, 127, 0x1.ffcp127, true};
inline constexpr Spec kE4M3{4, 3, 7, 448.0, false};
inline constexpr Spec kE5M2{5, 2, 15, 57344.0, true};
// OCP MX element formats (OCP Microscaling Formats v1.0, section 5.3).
inline constexpr Spec kE3M2{3, 2, 3, 28.0, false, true};
inline constexpr Spec kE2M3{2, 3, 1, 7.5, false, true};
inline constexpr Spec kE2M1{2, 1, 1, 6.0, false, true};

// Nearest representable value of `spec` to x (ties to even), as a double; +-inf past the
// overflow point, or +-max for saturating formats; NaN for NaN. Signed zero is kept.
inline double round_value(double x, const Spec& spec) {
    if (std::isnan(x)) return x;
    if (std::isinf(x)) return spec.has_inf ? x : std::copysign(spec.max_finite, x);
    if (x == 0.0) return x;
    const double a = std::fabs(x);
    const int emin = 1 - spec.bias;
    const int e = std::max(std::ilogb(a), emin);
    const double quantum = std::ldexp(1.0, e - spec.mantissa_bits);
    const double n = a / quantum;  // exact: division by a power of two
    double k = std::floor(n);
    const double frac = n - k;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(k, 2.0) != 0.0)) k += 1.0;
    double r = k * quantum;
    if (r > spec.max_finite) r = spec.has_inf ? std::numeric_limits<double>::infinity() : spec.max_finite;
    return std::copysign(r, x);
}

// As round_value, but saturating at +-max_finite for every format (+-inf included), as the
// scaled recipes convert.
inline double round_value_saturating(double x, const Spec& spec) {
    Spec saturating = spec;
    saturating.has_inf = false;
    return round_value(x, saturating);
}

// The two representable magnitudes around |x| (finite, below max_finite): lo <= |x| <= hi; both
// equal |x| when it is representable.
struct Neighbours {
    double lo, hi;
};
inline Neighbours neighbours(double x, const Spec& spec) {
    const double a = std::fabs(x);
    if (a == 0.0) return {0.0, 0.0};
    const int e = std::max(std::ilogb(a), 1 - spec.bias);
    const double quantum = std::ldexp(1.0, e - spec.mantissa_bits);
    const double k = std::floor(a / quantum);
    return {k * quantum, (k * quantum == a ? k : k + 1.0) * quantum};
}

// E8M0 scale code (2^(code-127), 0..254) of the largest power of two <= |x| (ceil: smallest >=),
// by frexp; 0xFF for inf and NaN, 0 for zero.
inline unsigned e8m0_code(double x, bool ceil) {
    if (!std::isfinite(x)) return 0xFF;
    if (x == 0.0) return 0;
    int e = 0;
    const double m = std::frexp(std::fabs(x), &e);  // |x| = m * 2^e, m in [0.5, 1)
    const int log2_floor = e - 1;
    const int log2 = ceil && m != 0.5 ? log2_floor + 1 : log2_floor;
    return static_cast<unsigned>(std::clamp(log2 + 127, 0, 254));
}

// Value of a bit pattern of `spec` (1 + exponent_bits + mantissa_bits wide), by ldexp.
inline double decode(uint32_t bits, const Spec& spec) {
    const int width = 1 + spec.exponent_bits + spec.mantissa_bits;
    const bool neg = (bits >> (width - 1)) & 1u;
    const uint32_t e = (bits >> spec.mantissa_bits) & ((1u << spec.exponent_bits) - 1u);
    const uint32_t m = bits & ((1u << spec.mantissa_bits) - 1u);
    const uint32_t e_all = (1u << spec.exponent_bits) - 1u;
    double v;
    const bool top_exponent = !spec.all_finite && e == e_all;
    if (spec.has_inf && top_exponent) {
        v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    } else if (!spec.has_inf && top_exponent && m == (1u << spec.mantissa_bits) - 1u) {
        v = std::numeric_limits<double>::quiet_NaN();
    } else if (e == 0) {
        v = std::ldexp(static_cast<double>(m), 1 - spec.bias - spec.mantissa_bits);
    } else {
        v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -spec.mantissa_bits),
                       static_cast<int>(e) - spec.bias);
    }
    return neg ? -v : v;
}

inline float from_bits(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
inline uint32_t to_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

// Same value and, for zeros and NaN, same sign; any NaN matches any NaN of the same sign.
inline bool same_value(double a, double b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
    return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace mpwb::ref
