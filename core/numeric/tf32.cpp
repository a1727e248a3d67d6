// TF32 rounding by the bias trick on the low 13 mantissa bits (see bfloat16.cpp for why the
// carry into the exponent is correct).
#include "core/numeric/tf32.h"

#include "core/numeric/minifloat.h"

namespace mpwb {

namespace {
inline uint32_t tf32_round_bits(uint32_t f) {
    const uint32_t rounded = (f + 0xfffu + ((f >> 13) & 1u)) & 0xffffe000u;
    const uint32_t quiet_nan = (f | 0x00400000u) & 0xffffe000u;
    return (f & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}
}  // namespace

float round_to_tf32(float x) { return detail::bits_float(tf32_round_bits(detail::float_bits(x))); }

void round_to_tf32(const float* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = detail::bits_float(tf32_round_bits(detail::float_bits(in[i])));
}

}  // namespace mpwb
