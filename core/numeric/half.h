// IEEE 754 binary16 ("half", FP16): the software reference conversion and the F16C fast path.
// The software path is the definition of FP16 rounding in the engine (round to nearest even,
// subnormals, signed zero, inf, NaN kept quiet with its sign and top payload bits); the F16C
// path must give the same bits and is tested against it over all 2^32 floats.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mpwb {

inline constexpr uint16_t kHalfPosInf = 0x7c00;
inline constexpr uint16_t kHalfMaxBits = 0x7bff;  // 65504

// float -> half bits, round to nearest even; past 65504 + half an ulp (>= 65520) gives +-inf.
uint16_t float_to_half_bits(float x);
// half bits -> float, exact. A NaN comes back quiet with its sign and payload.
float half_bits_to_float(uint16_t h);
// The float an FP16 store would hold: half_bits_to_float(float_to_half_bits(x)).
float round_to_half(float x);

// True when the CPU has F16C and AVX (checked once at run time).
bool cpu_has_f16c();

// Serial array conversions, in == out allowed. The *_software ones are the reference; the
// *_f16c ones require cpu_has_f16c() and give identical results. round_to_format (format.h)
// picks between them and spreads large arrays over threads.
void round_to_half_software(const float* in, float* out, size_t n);
void round_to_half_f16c(const float* in, float* out, size_t n);
void float_to_half_bits_software(const float* in, uint16_t* out, size_t n);
void float_to_half_bits_f16c(const float* in, uint16_t* out, size_t n);
void half_bits_to_float_software(const uint16_t* in, float* out, size_t n);
void half_bits_to_float_f16c(const uint16_t* in, float* out, size_t n);

}  // namespace mpwb
