// FP8 conversions on the shared minifloat rounding; this file adds each format's special values.
#include "core/numeric/fp8.h"

#include "core/numeric/minifloat.h"

namespace mpwb {

using detail::bits_float;
using detail::float_bits;

namespace {

inline uint8_t float_to_e4m3_bits_impl(float x) {
    const uint32_t f = float_bits(x);
    const uint8_t sign = static_cast<uint8_t>((f >> 24) & 0x80u);
    const uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | kE4M3NaNBits;
    if (a == 0x7f800000u) return sign | kE4M3MaxBits;  // satfinite
    const uint32_t code = detail::round_magnitude<3, -6>(a);
    return static_cast<uint8_t>(sign | (code > kE4M3MaxBits ? kE4M3MaxBits : code));
}

inline float e4m3_bits_to_float_impl(uint8_t b) {
    const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
    const uint32_t mag = b & 0x7fu;
    if (mag == kE4M3NaNBits) return bits_float(sign | 0x7fc00000u);
    return bits_float(float_bits(detail::decode_magnitude<3, -6>(mag)) | sign);
}

inline uint8_t float_to_e5m2_bits_impl(float x) {
    const uint32_t f = float_bits(x);
    const uint8_t sign = static_cast<uint8_t>((f >> 24) & 0x80u);
    const uint32_t a = f & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        if (a == 0x7f800000u) return sign | kE5M2InfBits;
        return static_cast<uint8_t>(sign | 0x7eu | ((a >> 21) & 0x3u));  // quiet, top payload bit kept
    }
    const uint32_t code = detail::round_magnitude<2, -14>(a);
    return static_cast<uint8_t>(sign | (code > kE5M2MaxBits ? kE5M2InfBits : code));
}

inline float e5m2_bits_to_float_impl(uint8_t b) {
    const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
    const uint32_t mag = b & 0x7fu;
    if (mag >= kE5M2InfBits) {
        const uint32_t mant = mag & 0x3u;
        if (mant == 0) return bits_float(sign | 0x7f800000u);
        return bits_float(sign | 0x7fc00000u | (mant << 21));
    }
    return bits_float(float_bits(detail::decode_magnitude<2, -14>(mag)) | sign);
}

}  // namespace

uint8_t float_to_e4m3_bits(float x) { return float_to_e4m3_bits_impl(x); }
float e4m3_bits_to_float(uint8_t b) { return e4m3_bits_to_float_impl(b); }
uint8_t float_to_e5m2_bits(float x) { return float_to_e5m2_bits_impl(x); }
float e5m2_bits_to_float(uint8_t b) { return e5m2_bits_to_float_impl(b); }

void round_to_e4m3(const float* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = e4m3_bits_to_float_impl(float_to_e4m3_bits_impl(in[i]));
}

void round_to_e5m2(const float* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = e5m2_bits_to_float_impl(float_to_e5m2_bits_impl(in[i]));
}

}  // namespace mpwb
