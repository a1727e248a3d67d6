// bfloat16 (BF16): FP32's sign and 8-bit exponent with 7 stored mantissa bits. Conversion is
// round to nearest even on the upper 16 bits of the FP32 pattern; overflow past the largest
// BF16 (about 3.39e38) plus half an ulp gives inf, subnormals are kept, NaN stays quiet NaN.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mpwb {

uint16_t float_to_bf16_bits(float x);
float bf16_bits_to_float(uint16_t b);
// The float a BF16 store would hold (branch-light, same result as the pair above).
float round_to_bf16(float x);
// Serial array version, in == out allowed; round_to_format adds the threads.
void round_to_bf16(const float* in, float* out, size_t n);

}  // namespace mpwb
