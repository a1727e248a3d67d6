// Independent float64 reference for the number formats, written from the format definitions
// (ldexp/ilogb/floor in double) and sharing no code with core/numeric, so the tests and the
// exhaustive FP16 check compare the engine's bit tricks against plain arithmetic.
#pragma once
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
    bool has_inf;  // false: e4m3 (saturates; S.1111.111 is NaN)
};

inline constexpr Spec kHalf{5, 10, 15, 65504.0, true};
inline constexpr Spec kBf16{8, 7, 127, 0x1.fep127, true};
inline constexpr Spec kTf32{8, 10, 127, 0x1.ffcp127, true};
inline constexpr Spec kE4M3{4, 3, 7, 448.0, false};
inline constexpr Spec kE5M2{5, 2, 15, 57344.0, true};

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

// Value of a bit pattern of `spec` (1 + exponent_bits + mantissa_bits wide), by ldexp.
inline double decode(uint32_t bits, const Spec& spec) {
    const int width = 1 + spec.exponent_bits + spec.mantissa_bits;
    const bool neg = (bits >> (width - 1)) & 1u;
    const uint32_t e = (bits >> spec.mantissa_bits) & ((1u << spec.exponent_bits) - 1u);
    const uint32_t m = bits & ((1u << spec.mantissa_bits) - 1u);
    const uint32_t e_all = (1u << spec.exponent_bits) - 1u;
    double v;
    if (spec.has_inf && e == e_all) {
        v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    } else if (!spec.has_inf && e == e_all && m == (1u << spec.mantissa_bits) - 1u) {
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
