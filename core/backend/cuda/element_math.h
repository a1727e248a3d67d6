// Per-element math of the CUDA backend's own kernels, as MPWB_HD functions: the kernels in
// elementwise.cu, batchnorm.cu, loss.cu and histogram.cu call them on the device, and the CPU
// references of the tests and parity checks call the very same functions on the host.
//
//   storage     FP32 -> FP16 / BF16 / TF32 round-to-nearest-even done with integer bit
//               operations (subnormals, signed zero, inf, quiet NaN with its payload, overflow
//               to inf exactly as core/numeric does), the exact decodes back, and load/store of
//               a value of a DType as float. Integer arithmetic on the host; the device uses
//               its FP16 conversion instructions (round to nearest even, no flush to zero: the
//               same bits, checked over every half and every rounding boundary by the selftest)
//               for all but NaN, whose payload the instructions do not keep. 16-bit values are
//               accessed as their bit patterns (the bytes of __half / __nv_bfloat16).
//   activations are the activation table's entries (core/backend/activations.h), shared with
//               the CPU backend the same way.
//   batchnorm,  the scalar steps of CpuBackend's batchnorm and loss code after the sums, so the
//   losses     kernels reduce however they like and still finish like the CPU does.
//   histogram   the slot of a float in ExponentHistogram (bin, zero, non-finite) and each
//               format's largest finite value as bits for the above-max counts.
//   dropout     a counter-based hash of (seed, step, index) -> uniform -> 0 or 1/(1-p).
//
// Host-compilable without CUDA headers (a g++-compiled test includes it).
#pragma once
#include <cmath>
#include <cstdint>

#include <cstring>

#include "core/backend/backend.h"
#include "core/backend/cuda/device_types.h"
#include "core/backend/cuda/step_math.h"

namespace mpwb::cuda {

// ---- bits -------------------------------------------------------------------------------
// memcpy and __builtin_clz rather than C++20's <bit>: the header must also compile where nvcc
// runs its host pass in C++17 mode.

MPWB_HD uint32_t bits_of(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
#endif
}

MPWB_HD float float_of(uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(b);
#else
    float x;
    std::memcpy(&x, &b, sizeof x);
    return x;
#endif
}

MPWB_HD int leading_zeros(uint32_t x) {  // 32 for 0
#if defined(__CUDA_ARCH__)
    return __clz(static_cast<int>(x));
#else
    return x == 0 ? 32 : __builtin_clz(x);
#endif
}

// mul_rn, add_rn, sub_rn, exp_f, log_f (core/backend/hd_math.h): products and sums the device
// compiler must not fuse into an FMA, so the CPU backend's formulas, which round after every
// operation, come out the same bits on the device.

// ---- storage rounding -------------------------------------------------------------------

inline constexpr uint16_t kHalfInfBits = 0x7c00;
inline constexpr uint16_t kHalfMaxFiniteBits = 0x7bff;  // 65504

// FP16 bits of x, round to nearest even. The magnitude is rounded at the quantum of its binade
// (or the subnormal quantum 2^-24 below 2^-14); a mantissa carry rolls into the exponent field,
// which is the right next value (largest subnormal -> smallest normal, 65520 -> inf). NaN stays
// quiet with its sign and top 10 payload bits (what F16C and core's reference do).
MPWB_HD uint16_t half_bits_from_float(float x) {
#if defined(__CUDA_ARCH__)
    if (x == x) {
        unsigned short h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
        return h;
    }
#endif
    const uint32_t f = bits_of(x);
    const uint32_t sign = (f >> 16) & 0x8000u;
    const uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | kHalfInfBits);  // >= 65520, inf
    const int raw_exp = static_cast<int>(a >> 23);
    const uint32_t m = (a & 0x7fffffu) | (raw_exp != 0 ? 0x800000u : 0u);
    const int e = (raw_exp != 0 ? raw_exp : 1) - 127;  // x = m * 2^(e - 23)
    // Keep 10 mantissa bits below the leading one, or fewer when the result is subnormal
    // (quantum 2^-24): shift away (e - 23) - (quantum exponent) ... i.e. the low bits.
    const int quantum_exp = (e > -14 ? e : -14) - 10;
    int shift = quantum_exp - (e - 23);  // >= 13
    shift = shift < 31 ? shift : 31;     // m < 2^24: past 25 everything rounds to 0 anyway
    const uint32_t kept = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    const uint32_t rounded = kept + ((rest > halfway || (rest == halfway && (kept & 1u))) ? 1u : 0u);
    // Normal results: `kept` still holds the implicit bit, which adds one to the exponent field,
    // so the field gets e + 15 - 1 added.
    const uint32_t code = e >= -14 ? rounded + (static_cast<uint32_t>(e + 14) << 10) : rounded;
    return static_cast<uint16_t>(sign | code);
}

// Exact FP32 value of FP16 bits; NaN comes back quiet with its payload.
MPWB_HD float float_from_half_bits(uint16_t h) {
#if defined(__CUDA_ARCH__)
    if ((h & 0x7fffu) <= kHalfInfBits) {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
        return f;
    }
#endif
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x400000u : 0u));
    if (exp != 0) return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
    if (mant == 0) return float_of(sign);
    // Subnormal mant * 2^-24: normalise the leading one into the implicit bit (exact).
    const int lead = 31 - leading_zeros(mant);  // 0..9
    const uint32_t frac = (mant << (23 - lead)) & 0x7fffffu;
    return float_of(sign | (static_cast<uint32_t>(lead - 24 + 127) << 23) | frac);
}

// BF16 bits of x, round to nearest even by adding 0x7fff plus the lowest kept bit: a carry into
// the exponent is the right next value, FLT_MAX-range values become inf. NaN kept quiet.
MPWB_HD uint16_t bf16_bits_from_float(float x) {
    const uint32_t f = bits_of(x);
    if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x0040u);
    return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

MPWB_HD float float_from_bf16_bits(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

// TF32: the FP32 mantissa rounded to 10 bits by the same bias trick on the low 13 bits.
MPWB_HD float round_to_tf32_value(float x) {
    const uint32_t f = bits_of(x);
    if ((f & 0x7fffffffu) > 0x7f800000u) return float_of((f | 0x00400000u) & 0xffffe000u);
    return float_of((f + 0xfffu + ((f >> 13) & 1u)) & 0xffffe000u);
}

MPWB_HD float round_to_half_value(float x) { return float_from_half_bits(half_bits_from_float(x)); }
MPWB_HD float round_to_bf16_value(float x) { return float_from_bf16_bits(bf16_bits_from_float(x)); }

// The float a value of `format` holds for x. The formats the device stores or computes in;
// the kernels refuse FP8 before launching.
MPWB_HD float round_to_device_format(float x, Format format) {
    switch (format) {
        case Format::TF32:
            return round_to_tf32_value(x);
        case Format::FP16:
            return round_to_half_value(x);
        case Format::BF16:
            return round_to_bf16_value(x);
        default:
            return x;
    }
}

// ---- load and store by DType ------------------------------------------------------------

template <DType T>
MPWB_HD float load_value(const void* data, int64_t i) {
    if constexpr (T == DType::F32)
        return static_cast<const float*>(data)[i];
    else if constexpr (T == DType::F16)
        return float_from_half_bits(static_cast<const uint16_t*>(data)[i]);
    else
        return float_from_bf16_bits(static_cast<const uint16_t*>(data)[i]);
}

template <DType T>
MPWB_HD void store_value(void* data, int64_t i, float v) {
    if constexpr (T == DType::F32)
        static_cast<float*>(data)[i] = v;
    else if constexpr (T == DType::F16)
        static_cast<uint16_t*>(data)[i] = half_bits_from_float(v);
    else
        static_cast<uint16_t*>(data)[i] = bf16_bits_from_float(v);
}

MPWB_HD float load_value(DType t, const void* data, int64_t i) {
    switch (t) {
        case DType::F16:
            return load_value<DType::F16>(data, i);
        case DType::BF16:
            return load_value<DType::BF16>(data, i);
        default:
            return load_value<DType::F32>(data, i);
    }
}

MPWB_HD void store_value(DType t, void* data, int64_t i, float v) {
    switch (t) {
        case DType::F16:
            return store_value<DType::F16>(data, i, v);
        case DType::BF16:
            return store_value<DType::BF16>(data, i, v);
        default:
            return store_value<DType::F32>(data, i, v);
    }
}

// The float a store in dtype t keeps of v.
MPWB_HD float round_to_dtype(DType t, float v) {
    switch (t) {
        case DType::F16:
            return round_to_half_value(v);
        case DType::BF16:
            return round_to_bf16_value(v);
        default:
            return v;
    }
}

// ---- batch normalisation (CpuBackend::batchnorm_*), after the FP64 sums -------------------

struct BatchnormChannel {
    float mean = 0.0f;
    float invstd = 0.0f;
};

// Training statistics of one channel from its sums over `count` values; updates the running
// statistics with momentum (running variance unbiased), as the CPU backend does.
MPWB_HD BatchnormChannel batchnorm_training_stats(double sum, double sum_sq, double count, float eps,
                                                  float momentum, float& running_mean, float& running_var) {
    const double m = sum / count;
    double var = sub_rn(sum_sq / count, mul_rn(m, m));  // never one FMA: the CPU rounds m * m
    var = var > 0.0 ? var : 0.0;
    BatchnormChannel s;
    s.mean = static_cast<float>(m);
    s.invstd = static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)));
    const double unbiased = count > 1 ? var * count / (count - 1) : var;
    const float keep = 1.0f - momentum;
    running_mean = add_rn(mul_rn(keep, running_mean), mul_rn(momentum, s.mean));
    running_var = add_rn(mul_rn(keep, running_var), mul_rn(momentum, static_cast<float>(unbiased)));
    return s;
}

MPWB_HD BatchnormChannel batchnorm_inference_stats(float running_mean, float running_var, float eps) {
    return {running_mean, 1.0f / sqrtf(running_var + eps)};
}

// y = x * scale + shift with scale = gamma * invstd, shift = beta - mean * scale.
struct BatchnormAffine {
    float scale = 1.0f;
    float shift = 0.0f;
};

MPWB_HD BatchnormAffine batchnorm_affine(float gamma, float beta, BatchnormChannel s) {
    const float scale = mul_rn(gamma, s.invstd);
    return {scale, sub_rn(beta, mul_rn(s.mean, scale))};
}

MPWB_HD float batchnorm_apply(float x, BatchnormAffine a) { return add_rn(mul_rn(x, a.scale), a.shift); }

// One term of the backward's second sum: dy * xhat, in double as the CPU sums it.
MPWB_HD double batchnorm_dy_xhat(float x, float dy, float mean, float invstd) {
    return mul_rn(mul_rn(static_cast<double>(dy), static_cast<double>(sub_rn(x, mean))),
                  static_cast<double>(invstd));
}

// dx of one element, from the channel's means of dy and dy * xhat.
struct BatchnormBackwardChannel {
    float mean = 0.0f, invstd = 0.0f;
    float k = 0.0f;  // gamma * invstd
    float mean_dy = 0.0f, mean_dy_xhat = 0.0f;
};

MPWB_HD BatchnormBackwardChannel batchnorm_backward_channel(float gamma, float mean, float invstd,
                                                            double sum_dy, double sum_dy_xhat, double count) {
    return {mean, invstd, mul_rn(gamma, invstd), static_cast<float>(sum_dy / count),
            static_cast<float>(sum_dy_xhat / count)};
}

MPWB_HD float batchnorm_dx(float x, float dy, const BatchnormBackwardChannel& c) {
    const float xhat = mul_rn(sub_rn(x, c.mean), c.invstd);
    return mul_rn(c.k, sub_rn(sub_rn(dy, c.mean_dy), mul_rn(xhat, c.mean_dy_xhat)));
}

// ---- losses (CpuBackend::softmax_cross_entropy / mse) -------------------------------------

// The running argmax rule of the CPU loss: a larger value wins, the first index wins ties, and
// a NaN always wins (so the last NaN ends up as the argmax). `candidate` comes after `best` in
// the row when merging in order; for merging two partial results out of order, argmax_merge.
MPWB_HD bool argmax_takes(float candidate, float best) { return candidate > best || candidate != candidate; }

// Merges two partial argmaxes (value, index) of disjoint parts of a row into the one the CPU's
// left-to-right scan gives over their union.
MPWB_HD void argmax_merge(float& value, int64_t& index, float other_value, int64_t other_index) {
    const bool mine_nan = value != value, other_nan = other_value != other_value;
    bool take;
    if (mine_nan || other_nan)
        take = other_nan && (!mine_nan || other_index > index);
    else
        take = other_value > value || (other_value == value && other_index < index);
    if (index < 0)
        take = true;
    else if (other_index < 0)
        take = false;
    if (take) {
        value = other_value;
        index = other_index;
    }
}

// One row's loss: log(sum exp(z - zmax)) + zmax - z[label], in float.
MPWB_HD float cross_entropy_row_loss(float log_sum, float zmax, float z_label) {
    return sub_rn(add_rn(log_sum, zmax), z_label);
}

// dlogits[j] = g * (softmax_j - onehot_j), g = grad_scale / n.
MPWB_HD float cross_entropy_grad(float z, float zmax, float log_sum, float g, bool is_label) {
    const float p = exp_f(sub_rn(sub_rn(z, zmax), log_sum));
    return mul_rn(g, sub_rn(p, is_label ? 1.0f : 0.0f));
}

// ---- exponent histogram (ExponentHistogram::compute) ----------------------------------------

inline constexpr int kHistogramMinExponent = -149;
inline constexpr int kHistogramBinCount = 277;                          // 2^-149 .. 2^127
inline constexpr int kHistogramZeroSlot = kHistogramBinCount;           // +0 and -0
inline constexpr int kHistogramNonFiniteSlot = kHistogramBinCount + 1;  // inf and NaN
inline constexpr int kHistogramSlotCount = kHistogramBinCount + 2;

// Bin index (floor(log2|x|) + 149) of a finite nonzero x, or the zero / non-finite slot.
MPWB_HD int histogram_slot(float x) {
    const uint32_t a = bits_of(x) & 0x7fffffffu;
    if (a == 0) return kHistogramZeroSlot;
    if (a >= 0x7f800000u) return kHistogramNonFiniteSlot;
    if (a >= 0x00800000u) return static_cast<int>(a >> 23) + 22;  // biased exponent e: 2^(e-127)
    return 31 - leading_zeros(a);                                 // subnormal: leading bit k, 2^(k-149)
}

// Bits of format_info(f).max_finite (a non-negative float's bits order like its value).
MPWB_HD uint32_t format_max_finite_bits(int format) {
    switch (static_cast<Format>(format)) {
        case Format::FP32:
            return 0x7f7fffffu;
        case Format::TF32:
            return 0x7f7fe000u;
        case Format::FP16:
            return 0x477fe000u;  // 65504
        case Format::BF16:
            return 0x7f7f0000u;
        case Format::E4M3:
            return 0x43e00000u;  // 448
        case Format::E5M2:
            return 0x47600000u;  // 57344
        case Format::E3M2:
            return 0x41e00000u;  // 28 (never asked for: the histogram counts the first six formats)
        case Format::E2M3:
            return 0x40f00000u;  // 7.5
        case Format::E2M1:
            return 0x40c00000u;  // 6
    }
    return 0x7f7fffffu;
}

// Counted above format f's maximum: finite and larger in magnitude.
MPWB_HD bool histogram_above_max(float x, int format) {
    const uint32_t a = bits_of(x) & 0x7fffffffu;
    return a < 0x7f800000u && a > format_max_finite_bits(format);
}

// What x contributes to max_abs, as bits: |x| for every non-NaN (inf included), 0 for NaN.
MPWB_HD uint32_t histogram_max_abs_bits(float x) {
    const uint32_t a = bits_of(x) & 0x7fffffffu;
    return a <= 0x7f800000u ? a : 0u;
}

// ---- dropout ----------------------------------------------------------------------------

// SplitMix64's finaliser: a bijection of 64 bits with full avalanche.
MPWB_HD uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The key of one step's mask: the step goes through the mixer before it meets the seed, so
// (seed, step) pairs that differ anywhere give unrelated streams.
MPWB_HD uint64_t dropout_key(uint64_t seed, int64_t step) {
    return mix64(seed ^ mix64(static_cast<uint64_t>(step) + 0x9E3779B97F4A7C15ull));
}

// Uniform in [0, 1) with 24 random bits (exact in float, as Rng::uniform) for element i.
MPWB_HD float dropout_uniform(uint64_t key, int64_t i) {
    const uint64_t h = mix64(key + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
    return static_cast<float>(h >> 40) * 0x1.0p-24f;
}

// The mask value: dropped with probability p (0), else kept and scaled by 1/(1-p), the same
// rule as Dropout's host mask (u < p drops).
MPWB_HD float dropout_mask_value(float p, uint64_t key, int64_t i) {
    return dropout_uniform(key, i) < p ? 0.0f : 1.0f / (1.0f - p);
}

}  // namespace mpwb::cuda
