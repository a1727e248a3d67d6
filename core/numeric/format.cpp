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
#include "core/numeric/element_formats.h"
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

constexpr std::array<FormatInfo, 9> kFormats = {{
    {Format::FP32, "fp32", 8, 23, true, std::bit_cast<float>(0x7f7fffffu), pow2(-126), pow2(-149), -149, 127},
    {Format::TF32, "tf32", 8, 10, true, std::bit_cast<float>(0x7f7fe000u), pow2(-126), pow2(-136), -136, 127},
    {Format::FP16, "fp16", 5, 10, true, 65504.0f, pow2(-14), pow2(-24), -24, 15},
    {Format::BF16, "bf16", 8, 7, true, std::bit_cast<float>(0x7f7f0000u), pow2(-126), pow2(-133), -133, 127},
    {Format::E4M3, "e4m3", 4, 3, false, 448.0f, pow2(-6), pow2(-9), -9, 8},
    {Format::E5M2, "e5m2", 5, 2, true, 57344.0f, pow2(-14), pow2(-16), -16, 15},
    {Format::E3M2, "e3m2", 3, 2, false, 28.0f, pow2(-2), pow2(-4), -4, 4},
    {Format::E2M3, "e2m3", 2, 3, false, 7.5f, pow2(0), pow2(-3), -3, 2},
    {Format::E2M1, "e2m1", 2, 1, false, 6.0f, pow2(0), pow2(-1), -1, 2},
}};

// FP16 as an element spec, for its stochastic rounding (which saturates like the others).
struct Fp16Spec {
    static constexpr int kMantissaBits = 10, kMinNormalExp = -14;
    static constexpr float kMax = 65504.0f;
};

constexpr int64_t kGrain = int64_t{1} << 15;

template <class Loop>
void parallel_rounding(const float* in, float* out, size_t n, Loop loop) {
    parallel_for(static_cast<int64_t>(n), kGrain, [&](int64_t begin, int64_t end) {
        loop(in + begin, out + begin, static_cast<size_t>(end - begin));
    });
}

template <class Spec>
void element_loop(const float* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = round_element_saturating<Spec>(in[i]);
}

// Stochastic rounding for the formats with FP32's exponent range (BF16, TF32): adding uniform
// random bits below the kept mantissa and truncating rounds up with probability (dropped bits) /
// 2^DROP, across binades and FP32 subnormals alike because the bit patterns are ordered like the
// values. A carry into the infinity pattern, and infinity itself, saturate at MAX_BITS.
template <int DROP, uint32_t MAX_BITS>
float stochastic_truncation(float x, uint32_t random_bits) {
    const uint32_t f = detail::float_bits(x);
    const uint32_t a = f & 0x7fffffffu;
    const uint32_t mask = (1u << DROP) - 1u;
    uint32_t r = (a + (random_bits >> (32 - DROP))) & ~mask;
    r = r < MAX_BITS ? r : MAX_BITS;
    const uint32_t sign = f & 0x80000000u;
    return detail::bits_float(a > 0x7f800000u ? (sign | 0x7fc00000u) : (sign | r));
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
                      "' (expected one of fp32, tf32, fp16, bf16, e4m3, e5m2, e3m2, e2m3, e2m1)");
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
        case Format::E3M2:
            return round_element_saturating<E3M2Spec>(x);
        case Format::E2M3:
            return round_element_saturating<E2M3Spec>(x);
        case Format::E2M1:
            return round_element_saturating<E2M1Spec>(x);
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
        case Format::E3M2:
            return parallel_rounding(in, out, n, element_loop<E3M2Spec>);
        case Format::E2M3:
            return parallel_rounding(in, out, n, element_loop<E2M3Spec>);
        case Format::E2M1:
            return parallel_rounding(in, out, n, element_loop<E2M1Spec>);
    }
    throw ConfigError("round_to_format: unknown format id " + std::to_string(static_cast<int>(f)));
}

void round_to_format_stochastic(Format f, const float* in, float* out, size_t n, uint64_t seed,
                                uint64_t first_index) {
    if (n == 0) return;
    const auto run = [&](auto round_one) {
        parallel_for(static_cast<int64_t>(n), kGrain, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i)
                out[i] = round_one(in[i], counter_random_bits(seed, first_index + static_cast<uint64_t>(i)));
        });
    };
    switch (f) {
        case Format::FP32:
            if (in != out) std::memmove(out, in, n * sizeof(float));
            return;
        case Format::TF32:
            return run(stochastic_truncation<13, 0x7f7fe000u>);
        case Format::BF16:
            return run(stochastic_truncation<16, 0x7f7f0000u>);
        case Format::FP16:
            return run(round_element_stochastic<Fp16Spec>);
        case Format::E4M3:
            return run(round_element_stochastic<E4M3Spec>);
        case Format::E5M2:
            return run(round_element_stochastic<E5M2Spec>);
        case Format::E3M2:
            return run(round_element_stochastic<E3M2Spec>);
        case Format::E2M3:
            return run(round_element_stochastic<E2M3Spec>);
        case Format::E2M1:
            return run(round_element_stochastic<E2M1Spec>);
    }
    throw ConfigError("round_to_format_stochastic: unknown format id " + std::to_string(static_cast<int>(f)));
}

}  // namespace mpwb
