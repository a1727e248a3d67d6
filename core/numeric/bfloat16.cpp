// BF16 conversions by the classic bias trick: adding 0x7fff plus the lowest kept bit rounds the
// upper half to nearest even, and a carry into the exponent is exactly the right next value
// (including FLT_MAX-range values becoming inf). NaN is masked out first so it cannot carry
// into (or away from) the exponent.
#include "core/numeric/bfloat16.h"

#include "core/numeric/minifloat.h"

namespace mpwb {

using detail::bits_float;
using detail::float_bits;

uint16_t float_to_bf16_bits(float x) {
    const uint32_t f = float_bits(x);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x0040u);
    return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

namespace {
inline uint32_t bf16_round_bits(uint32_t f) {
    const uint32_t rounded = (f + 0x7fffu + ((f >> 16) & 1u)) & 0xffff0000u;
    const uint32_t quiet_nan = (f | 0x00400000u) & 0xffff0000u;
    return (f & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}
}  // namespace

float round_to_bf16(float x) { return bits_float(bf16_round_bits(float_bits(x))); }

void round_to_bf16(const float* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = bits_float(bf16_round_bits(float_bits(in[i])));
}

}  // namespace mpwb
