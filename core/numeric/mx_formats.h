// Bit codes of the OCP MX element formats FP6 E3M2, FP6 E2M3 and FP4 E2M1 (NVFP4 uses E2M1 too)
// and of the E8M0 power-of-two scale, for storing, exporting and testing quantized blocks. The
// float -> float roundings used in the quantizers' inner loops are the inline ones in
// element_formats.h; these functions give the same values as codes.
//
// Element codes sit in the low 6 (FP6) or 4 (FP4) bits, the sign in the top bit of the code
// (bit 5 or bit 3): S.EEE.MM, S.EE.MMM, S.EE.M. Every code is a finite number; the formats have
// no infinity and no NaN. Encoding rounds to nearest even and saturates at +-max (infinity
// included). NaN has no code: it encodes as +max, because an MX block that holds a NaN is
// marked by its E8M0 scale (kE8M0NaN), not by its elements.
#pragma once
#include <cstdint>

namespace mpwb {

uint8_t float_to_e3m2_bits(float x);
float e3m2_bits_to_float(uint8_t bits);  // bits above the low 6 are ignored
uint8_t float_to_e2m3_bits(float x);
float e2m3_bits_to_float(uint8_t bits);  // bits above the low 6 are ignored
uint8_t float_to_e2m1_bits(float x);
float e2m1_bits_to_float(uint8_t bits);  // bits above the low 4 are ignored

// E8M0 scale codes (value 2^(code-127)) for the magnitude of x: the largest power of two <= |x|
// (floor) or the smallest >= |x| (ceil), clamped to the code range 0..254 (2^-127 .. 2^127).
// Zero gives code 0; NaN and +-inf give kE8M0NaN (0xFF).
uint8_t float_to_e8m0_floor_bits(float x);
uint8_t float_to_e8m0_ceil_bits(float x);

}  // namespace mpwb
