// Number formats the engine can store values in, and exact rounding into them.
// Values stay in float containers: round_to_format returns the float that the format would
// hold (every FP16/BF16/FP8/TF32 value is exactly an FP32 value), so emulation is bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mpwb {

// New formats are appended: the numeric values are stored in session files.
// E3M2 and E2M3 are the OCP MX FP6 element formats, E2M1 the MX FP4 / NVFP4 one.
enum class Format : uint8_t { FP32, TF32, FP16, BF16, E4M3, E5M2, E3M2, E2M3, E2M1 };

struct FormatInfo {
    Format format;
    const char* name;  // "fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1"
    int exponent_bits;
    int mantissa_bits;  // explicit (stored) mantissa bits
    bool has_infinity;  // e4m3 (OCP FP8) and the MX FP6/FP4 formats have none: they saturate
    float max_finite;
    float min_normal;
    float min_subnormal;
    int min_exponent;  // floor(log2(min_subnormal))
    int max_exponent;  // floor(log2(max_finite))
};

const FormatInfo& format_info(Format f);
// Parses a name as above (case-insensitive); throws ConfigError naming the bad value.
Format parse_format(std::string_view name);
std::string format_name(Format f);

// Round to nearest, ties to even, into the format. Subnormals, signed zero and NaN are kept.
// Overflow: formats with infinity round to +-inf past max + half an ulp; e4m3, e3m2, e2m3 and
// e2m1 saturate to +-max (the OCP "satfinite" conversion that FP8 training uses, and the only
// choice for the MX formats, which have no infinity); NaN stays NaN.
float round_to_format(float x, Format f);
// Same over an array (in == out allowed). Uses F16C for FP16 where the CPU has it.
void round_to_format(Format f, const float* in, float* out, size_t n);

// Stochastic rounding over an array (in == out allowed): each value goes to one of its two
// neighbours in the format, the upper with probability (distance to the lower) / (gap), drawn
// from counter_random_bits(seed, first_index + i) (element_formats.h), so the result depends only
// on (seed, index) and not on the thread count. Every format saturates at +-max here (the scaled
// recipes never produce infinity); NaN stays NaN; FP32 is copied unchanged.
void round_to_format_stochastic(Format f, const float* in, float* out, size_t n, uint64_t seed,
                                uint64_t first_index);

}  // namespace mpwb
