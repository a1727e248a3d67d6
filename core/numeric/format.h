// Number formats the engine can store values in, and exact rounding into them.
// Values stay in float containers: round_to_format returns the float that the format would
// hold (every FP16/BF16/FP8/TF32 value is exactly an FP32 value), so emulation is bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mpwb {

enum class Format : uint8_t { FP32, TF32, FP16, BF16, E4M3, E5M2 };

struct FormatInfo {
    Format format;
    const char* name;  // "fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2"
    int exponent_bits;
    int mantissa_bits;  // explicit (stored) mantissa bits
    bool has_infinity;  // e4m3 (OCP FP8) has none: it saturates to +-448
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
// Overflow: formats with infinity round to +-inf past max + half an ulp; e4m3 saturates to
// +-448 (the OCP "satfinite" conversion that FP8 training uses); NaN stays NaN.
float round_to_format(float x, Format f);
// Same over an array (in == out allowed). Uses F16C for FP16 where the CPU has it.
void round_to_format(Format f, const float* in, float* out, size_t n);

}  // namespace mpwb
