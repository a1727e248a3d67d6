// Per-element and per-tensor math of the device's per-tensor FP8 recipes (fp8-delayed,
// fp8-current; DESIGN.md, "Scaled low-precision formats"), as MPWB_HD functions: the kernels in
// fp8_quantize.cu call them on the device, and tests/backend/test_fp8_math.cpp calls the very same
// functions on the host against the CPU quantizer (core/precision/gemm_quantizer.cpp,
// block_quantize.cpp, core/numeric/element_formats.h).
//
//   encoding   x·scale rounded to nearest even into E4M3 / E5M2 bytes, saturating at the largest
//              finite value (also for +-inf, as the CPU quantizer does for both formats), NaN kept
//              as the format's NaN, signed zero kept; the exact decode back. The rounding is the
//              integer magnitude rounding of core/numeric/minifloat.h, written again in C++17.
//   scale rule per_tensor_scale (FP8 max / amax / 2^margin; an amax of 0 or a non-finite amax keeps
//              the previous scale; an FP32 overflow becomes FLT_MAX), the delayed amax of a
//              history (its maximum with NaN skipped, or its newest entry), and a tensor's state
//              from one step to the next as GemmQuantizer keeps it (begin_step, the amax of the
//              step's one quantization, end_step appending to the history).
//
// Host-compilable without CUDA headers.
#pragma once
#include <cstdint>

#include "core/backend/cuda/element_math.h"
#include "core/backend/hd_math.h"

namespace mpwb::cuda {

enum class Fp8Element : uint8_t { E4M3, E5M2 };

// Stored mantissa bits and smallest normal exponent of each element format.
template <Fp8Element kElement>
struct Fp8Traits;
template <>
struct Fp8Traits<Fp8Element::E4M3> {
    static constexpr int kMantissaBits = 3, kMinNormalExp = -6;
    static constexpr uint32_t kMaxCode = 0x7e;  // 448
    static constexpr uint8_t kNaN = 0x7f;
};
template <>
struct Fp8Traits<Fp8Element::E5M2> {
    static constexpr int kMantissaBits = 2, kMinNormalExp = -14;
    static constexpr uint32_t kMaxCode = 0x7b;  // 57344
    static constexpr uint8_t kNaN = 0x7e;       // quiet NaN
};

MPWB_HD float fp8_element_max(Fp8Element e) { return e == Fp8Element::E4M3 ? 448.0f : 57344.0f; }

// The magnitude code of a finite FP32 magnitude (abs bits) rounded to nearest even at the quantum
// of a format with kMantissaBits stored bits and smallest normal exponent kMinNormalExp; the code
// is the format's exponent and mantissa fields (minifloat.h's round_magnitude, same arithmetic).
template <int kMantissaBits, int kMinNormalExp>
MPWB_HD uint32_t fp8_round_magnitude(uint32_t a) {
    const int raw_exp = static_cast<int>(a >> 23);
    const int fe = raw_exp + (raw_exp == 0 ? 1 : 0);
    const uint32_t m = (a & 0x7fffffu) | (raw_exp != 0 ? 0x800000u : 0u);
    const int e = fe - 127;
    const int quantum = (e > kMinNormalExp ? e : kMinNormalExp) - kMantissaBits;
    const int shift = quantum - (fe - 150);
    const int clamped = shift < 31 ? shift : 31;
    const uint32_t truncated =
        (m >> clamped) +
        (e >= kMinNormalExp ? static_cast<uint32_t>(e - kMinNormalExp) << kMantissaBits : 0u);
    const uint32_t remainder = m & ((1u << clamped) - 1u);
    const uint32_t halfway = 1u << (clamped - 1);
    const bool up = remainder > halfway || (remainder == halfway && (truncated & 1u) != 0);
    return truncated + (up ? 1u : 0u);
}

// The FP8 byte of s (already multiplied by the scale): round to nearest even, saturate (inf
// included) to the largest finite value, NaN to the format's NaN with the sign kept.
template <Fp8Element kElement>
MPWB_HD uint8_t fp8_encode(float s) {
    using T = Fp8Traits<kElement>;
    const uint32_t f = bits_of(s);
    const uint32_t sign = (f >> 24) & 0x80u;
    const uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint8_t>(sign | T::kNaN);
    // inf's bits round to a large code too; the clamp turns it into the largest finite value.
    const uint32_t code =
        a == 0x7f800000u ? T::kMaxCode : fp8_round_magnitude<T::kMantissaBits, T::kMinNormalExp>(a);
    return static_cast<uint8_t>(sign | (code < T::kMaxCode ? code : T::kMaxCode));
}

// The exact FP32 value of an FP8 byte (NaN for the format's NaN codes; E5M2 inf decodes as inf,
// which the encoder never writes).
template <Fp8Element kElement>
MPWB_HD float fp8_decode(uint8_t byte) {
    using T = Fp8Traits<kElement>;
    const uint32_t sign = static_cast<uint32_t>(byte & 0x80u) << 24;
    const uint32_t code = byte & 0x7fu;
    if (kElement == Fp8Element::E4M3 && code == 0x7fu) return float_of(sign | 0x7fc00000u);
    if (kElement == Fp8Element::E5M2 && code >= 0x7cu)
        return float_of(sign | (code == 0x7cu ? 0x7f800000u : 0x7fc00000u));
    const uint32_t biased = code >> T::kMantissaBits;
    const uint32_t mant = code & ((1u << T::kMantissaBits) - 1u);
    if (biased == 0) {
        // mant * 2^(emin - mbits): a product by a power of two, exact in FP32.
        const uint32_t quantum = static_cast<uint32_t>(T::kMinNormalExp - T::kMantissaBits + 127) << 23;
        return float_of(sign | bits_of(static_cast<float>(mant) * float_of(quantum)));
    }
    return float_of(sign | ((biased + static_cast<uint32_t>(T::kMinNormalExp + 126)) << 23) |
                    (mant << (23 - T::kMantissaBits)));
}

MPWB_HD uint8_t fp8_encode(Fp8Element e, float s) {
    return e == Fp8Element::E4M3 ? fp8_encode<Fp8Element::E4M3>(s) : fp8_encode<Fp8Element::E5M2>(s);
}
MPWB_HD float fp8_decode(Fp8Element e, uint8_t byte) {
    return e == Fp8Element::E4M3 ? fp8_decode<Fp8Element::E4M3>(byte) : fp8_decode<Fp8Element::E5M2>(byte);
}

// ---- scale rule ---------------------------------------------------------------------------

MPWB_HD bool fp8_finite(float x) { return (bits_of(x) & 0x7f800000u) != 0x7f800000u; }

// element_max / amax / 2^margin, as block_quantize.cpp's per_tensor_scale (margin 0..64, so the
// power of two is exact).
MPWB_HD float fp8_per_tensor_scale(float amax, float element_max, int margin, float previous) {
    if (!(amax > 0.0f) || !fp8_finite(amax)) return previous;
    const float power = float_of(static_cast<uint32_t>(127 + margin) << 23);
    const float scale = div_rn(div_rn(element_max, amax), power);
    return fp8_finite(scale) ? scale : 3.40282347e38f;  // FLT_MAX
}

// The settings of one run's per-tensor recipe the device rule needs (ScaledRecipeConfig).
struct Fp8Rule {
    int32_t delayed = 1;      // fp8-delayed; 0: fp8-current
    int32_t most_recent = 0;  // AmaxAlgorithm::MostRecent
    int32_t margin = 0;
    int32_t history_len = 1024;
    float fixed_scale = 0.0f;  // > 0 replaces every scale
};

// One quantized tensor's state (GemmQuantizer::State::PerTensor) with its amax history, a ring
// of history_len floats kept elsewhere (device memory) and passed in.
struct Fp8TensorState {
    float scale = 1.0f;           // of the last step that ended
    float step_scale = 1.0f;      // in use this step
    float step_inverse = 1.0f;    // 1 / step_scale rounded once: the dequantization factor
    uint32_t step_amax_bits = 0;  // |x| bits: NaN above inf above every finite value
    int32_t used = 0;
    int32_t count = 0;  // entries in the ring
    int32_t head = 0;   // the oldest entry
    float element_max = 448.0f;
};

// The history's amax as the delayed scale reads it: the maximum with NaN skipped (inf kept), or
// the newest entry.
MPWB_HD float fp8_history_amax(const Fp8TensorState& t, const float* ring, const Fp8Rule& rule) {
    if (rule.most_recent) return ring[(t.head + t.count - 1) % rule.history_len];
    float m = 0.0f;
    for (int32_t i = 0; i < t.count; ++i) {
        const float a = ring[(t.head + i) % rule.history_len];
        m = a > m ? a : m;
    }
    return m;
}

MPWB_HD void fp8_set_step_scale(Fp8TensorState& t, float scale) {
    t.step_scale = scale;
    t.step_inverse = div_rn(1.0f, scale);
}

// GemmQuantizer::begin_step for one tensor, given its history's amax (fp8_history_amax; any
// value when the history is empty): the step's scale (delayed: from the history up to the last
// step; current: the last scale until the tensor's amax is known), no amax seen yet. The device
// reduces the history in parallel (a maximum with NaN skipped does not depend on the order).
MPWB_HD void fp8_begin_step_from(Fp8TensorState& t, float history_amax, const Fp8Rule& rule) {
    t.used = 0;
    t.step_amax_bits = 0;
    float scale = t.scale;
    if (rule.fixed_scale > 0.0f)
        scale = rule.fixed_scale;
    else if (rule.delayed && t.count > 0)
        scale = fp8_per_tensor_scale(history_amax, t.element_max, rule.margin, t.scale);
    fp8_set_step_scale(t, scale);
}

MPWB_HD void fp8_begin_step(Fp8TensorState& t, const float* ring, const Fp8Rule& rule) {
    fp8_begin_step_from(t, t.count > 0 ? fp8_history_amax(t, ring, rule) : 0.0f, rule);
}

// The step's quantization of the tensor saw `amax_bits` (|x| bits of its largest magnitude):
// recorded for the history, and under fp8-current it sets the step's scale.
MPWB_HD void fp8_take_amax(Fp8TensorState& t, uint32_t amax_bits, const Fp8Rule& rule) {
    t.step_amax_bits = t.used && t.step_amax_bits > amax_bits ? t.step_amax_bits : amax_bits;
    t.used = 1;
    if (rule.fixed_scale > 0.0f)
        fp8_set_step_scale(t, rule.fixed_scale);
    else if (!rule.delayed)
        fp8_set_step_scale(t, fp8_per_tensor_scale(float_of(amax_bits), t.element_max, rule.margin, t.scale));
}

// GemmQuantizer::end_step for one tensor: a tensor quantized this step keeps its scale and
// appends its amax to the ring (dropping the oldest when full).
MPWB_HD void fp8_end_step(Fp8TensorState& t, float* ring, const Fp8Rule& rule) {
    if (!t.used) return;
    t.scale = t.step_scale;
    const float amax = float_of(t.step_amax_bits);
    if (t.count < rule.history_len) {
        ring[(t.head + t.count) % rule.history_len] = amax;
        ++t.count;
    } else {
        ring[t.head] = amax;
        t.head = (t.head + 1) % rule.history_len;
    }
}

}  // namespace mpwb::cuda
