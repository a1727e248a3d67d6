// MX element and E8M0 scale codes on the shared minifloat rounding (minifloat.h) and the
// element specs of element_formats.h.
#include "core/numeric/mx_formats.h"

#include <bit>

#include "core/numeric/element_formats.h"

namespace mpwb {

namespace {

constexpr bool is_nan_bits(uint32_t f) { return (f & 0x7fffffffu) > 0x7f800000u; }

// Code of x in a format whose magnitude field is WIDTH-1 bits wide and whose sign is bit WIDTH-1.
template <class Spec, int WIDTH>
uint8_t encode(float x) {
    const uint32_t f = detail::float_bits(x);
    if (is_nan_bits(f)) return static_cast<uint8_t>(detail::kMaxCode<Spec>);
    const uint32_t code = detail::round_magnitude<Spec::kMantissaBits, Spec::kMinNormalExp>(f & 0x7fffffffu);
    const uint32_t clamped = code < detail::kMaxCode<Spec> ? code : detail::kMaxCode<Spec>;
    return static_cast<uint8_t>(((f >> 31) << (WIDTH - 1)) | clamped);
}

template <class Spec, int WIDTH>
float decode(uint8_t bits) {
    const uint32_t magnitude = bits & ((1u << (WIDTH - 1)) - 1u);
    const uint32_t sign = static_cast<uint32_t>((bits >> (WIDTH - 1)) & 1u) << 31;
    return detail::bits_float(
        detail::float_bits(detail::decode_magnitude<Spec::kMantissaBits, Spec::kMinNormalExp>(magnitude)) |
        sign);
}

constexpr int kE8M0Bias = 127;
constexpr int kE8M0MaxCode = 254;

uint8_t clamp_e8m0(int code) {
    return static_cast<uint8_t>(code < 0 ? 0 : (code > kE8M0MaxCode ? kE8M0MaxCode : code));
}

}  // namespace

uint8_t float_to_e3m2_bits(float x) { return encode<E3M2Spec, 6>(x); }
float e3m2_bits_to_float(uint8_t bits) { return decode<E3M2Spec, 6>(bits); }
uint8_t float_to_e2m3_bits(float x) { return encode<E2M3Spec, 6>(x); }
float e2m3_bits_to_float(uint8_t bits) { return decode<E2M3Spec, 6>(bits); }
uint8_t float_to_e2m1_bits(float x) { return encode<E2M1Spec, 4>(x); }
float e2m1_bits_to_float(uint8_t bits) { return decode<E2M1Spec, 4>(bits); }

uint8_t float_to_e8m0_floor_bits(float x) {
    const uint32_t a = detail::float_bits(x) & 0x7fffffffu;
    if (a >= 0x7f800000u) return kE8M0NaN;
    if (a == 0) return 0;
    return clamp_e8m0(floor_log2(x) + kE8M0Bias);
}

uint8_t float_to_e8m0_ceil_bits(float x) {
    const uint32_t a = detail::float_bits(x) & 0x7fffffffu;
    if (a >= 0x7f800000u) return kE8M0NaN;
    if (a == 0) return 0;
    // A power of two has a single significand bit (implicit bit for normals, one stored bit for
    // subnormals); anything else lies strictly above 2^floor.
    const uint32_t significand = (a >> 23) != 0 ? ((a & 0x7fffffu) | 0x800000u) : a;
    const int above = std::has_single_bit(significand) ? 0 : 1;
    return clamp_e8m0(floor_log2(x) + above + kE8M0Bias);
}

}  // namespace mpwb
