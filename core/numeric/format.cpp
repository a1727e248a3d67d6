// Format table, name parsing and round_to_format. The scalar path dispatches to the per-format
// bit conversions; the array path uses the fastest exact loop for each format (F16C for FP16
// when present, bias-trick loops for BF16/TF32) and spreads large arrays over the thread pool.
#include "core/numeric/format.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstring>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/numeric/bfloat16.h"
#include "core/numeric/fp8.h"
#include "core/numeric/half.h"
#include "core/numeric/minifloat.h"
#include "core/numeric/tf32.h"

namespace mpwb {

namespace {

constexpr float pow2(int e) {
    // Normal powers of two by bits; subnormal ones by halving the smallest normal (exact).
    if (e >= -126) return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23);
    float v = std::bit_cast<float>(uint32_t{1} << 23);
    for (int i = -126; i > e; --i) v *= 0.5f;
    return v;
}

constexpr std::array<FormatInfo, 6> kFormats = {{
    {Format::FP32, "fp32", 8, 23, true, std::bit_cast<float>(0x7f7fffffu), pow2(-126), pow2(-149), -149, 127},
    {Format::TF32, "tf32", 8, 10, true, std::bit_cast<float>(0x7f7fe000u), pow2(-126), pow2(-136), -136, 127},
    {Format::FP16, "fp16", 5, 10, true, 65504.0f, pow2(-14), pow2(-24), -24, 15},
    {Format::BF16, "bf16", 8, 7, true, std::bit_cast<float>(0x7f7f0000u), pow2(-126), pow2(-133), -133, 127},
    {Format::E4M3, "e4m3", 4, 3, false, 448.0f, pow2(-6), pow2(-9), -9, 8},
    {Format::E5M2, "e5m2", 5, 2, true, 57344.0f, pow2(-14), pow2(-16), -16, 15},
}};

constexpr int64_t kGrain = int64_t{1} << 15;

template <class Loop>
void parallel_rounding(const float* in, float* out, size_t n, Loop loop) {
    parallel_for(static_cast<int64_t>(n), kGrain, [&](int64_t begin, int64_t end) {
        loop(in + begin, out + begin, static_cast<size_t>(end - begin));
    });
}

}  // namespace

const FormatInfo& format_info(Format f) {
    const auto i = static_cast<size_t>(f);
    if (i >= kFormats.size()) throw ConfigError("format_info: unknown format id " + std::to_string(i));
    return kFormats[i];
}

Format parse_format(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const auto& info : kFormats)
        if (lower == info.name) return info.format;
    throw ConfigError("unknown number format '" + std::string(name) +
                      "' (expected one of fp32, tf32, fp16, bf16, e4m3, e5m2)");
}

std::string format_name(Format f) { return format_info(f).name; }

float round_to_format(float x, Format f) {
    switch (f) {
        case Format::FP32:
            return x;
        case Format::TF32:
            return round_to_tf32(x);
        case Format::FP16:
            return round_to_half(x);
        case Format::BF16:
            return round_to_bf16(x);
        case Format::E4M3:
            return e4m3_bits_to_float(float_to_e4m3_bits(x));
        case Format::E5M2:
            return e5m2_bits_to_float(float_to_e5m2_bits(x));
    }
    throw ConfigError("round_to_format: unknown format id " + std::to_string(static_cast<int>(f)));
}

void round_to_format(Format f, const float* in, float* out, size_t n) {
    if (n == 0) return;
    switch (f) {
        case Format::FP32:
            if (in != out) std::memmove(out, in, n * sizeof(float));
            return;
        case Format::TF32:
            return parallel_rounding(in, out, n,
                                     [](const float* i, float* o, size_t k) { round_to_tf32(i, o, k); });
        case Format::BF16:
            return parallel_rounding(in, out, n,
                                     [](const float* i, float* o, size_t k) { round_to_bf16(i, o, k); });
        case Format::FP16:
            if (cpu_has_f16c())
                return parallel_rounding(
                    in, out, n, [](const float* i, float* o, size_t k) { round_to_half_f16c(i, o, k); });
            return parallel_rounding(
                in, out, n, [](const float* i, float* o, size_t k) { round_to_half_software(i, o, k); });
        case Format::E4M3:
            return parallel_rounding(in, out, n,
                                     [](const float* i, float* o, size_t k) { round_to_e4m3(i, o, k); });
        case Format::E5M2:
            return parallel_rounding(in, out, n,
                                     [](const float* i, float* o, size_t k) { round_to_e5m2(i, o, k); });
    }
    throw ConfigError("round_to_format: unknown format id " + std::to_string(static_cast<int>(f)));
}

}  // namespace mpwb
