// The two OCP FP8 formats used for training:
//  - e4m3: bias 7, largest 448, smallest normal 2^-6, smallest subnormal 2^-9, no infinity,
//    one NaN pattern per sign (S.1111.111). Conversion from float saturates ("satfinite", as
//    FP8 training recipes and cuda_fp8's __NV_SATFINITE do): anything that would round past 448,
//    infinity included, becomes +-448. NaN stays NaN.
//  - e5m2: bias 15, IEEE-like: largest 57344, smallest normal 2^-14, smallest subnormal 2^-16,
//    +-inf; past 57344 plus half an ulp (>= 61440) the result is inf. NaN stays quiet NaN.
// Both round to nearest even with exact subnormals.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mpwb {

inline constexpr uint8_t kE4M3MaxBits = 0x7e;  // 448
inline constexpr uint8_t kE4M3NaNBits = 0x7f;
inline constexpr uint8_t kE5M2MaxBits = 0x7b;  // 57344
inline constexpr uint8_t kE5M2InfBits = 0x7c;

uint8_t float_to_e4m3_bits(float x);
float e4m3_bits_to_float(uint8_t b);
uint8_t float_to_e5m2_bits(float x);
float e5m2_bits_to_float(uint8_t b);

// Serial array rounding (the float each format would hold), in == out allowed;
// round_to_format adds the threads.
void round_to_e4m3(const float* in, float* out, size_t n);
void round_to_e5m2(const float* in, float* out, size_t n);

}  // namespace mpwb
