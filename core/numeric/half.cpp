// FP16 conversions: the integer software reference (minifloat.h) and the F16C vector path.
// The F16C functions are compiled for f16c/avx via a target attribute so the rest of the
// library stays baseline x86-64; callers check cpu_has_f16c() before using them.
#include "core/numeric/half.h"

#include "core/numeric/minifloat.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define MPWB_X86 1
#endif

namespace mpwb {

using detail::bits_float;
using detail::float_bits;

namespace {

// Inline bodies so the array loops get them without a call per element.
// Inline, branch-free bodies (32-bit arithmetic throughout) so the array loops run without a
// call or a mispredicted branch per element; inf and NaN are selected by masks.
inline uint16_t to_half(float x) {
    const uint32_t f = float_bits(x);
    const uint32_t sign = (f >> 16) & 0x8000u;
    const uint32_t a = f & 0x7fffffffu;
    // inf rounds to a code past the largest half, so the clamp gives 0x7c00 for it too.
    uint32_t code = detail::round_magnitude<10, -14>(a);
    code = code > kHalfMaxBits ? kHalfPosInf : code;
    // Quiet NaN, top 10 payload bits kept: what vcvtps2ph does.
    const uint32_t nan_code = 0x7e00u | ((a >> 13) & 0x3ffu);
    const uint32_t nan_mask = 0u - static_cast<uint32_t>(a > 0x7f800000u);
    return static_cast<uint16_t>(sign | (nan_code & nan_mask) | (code & ~nan_mask));
}

inline float from_half(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t mag = h & 0x7fffu;
    const uint32_t mant = mag & 0x3ffu;
    // inf, or NaN made quiet with its payload
    const uint32_t special = 0x7f800000u | (mant << 13) | (static_cast<uint32_t>(mant != 0) << 22);
    const uint32_t finite = float_bits(detail::decode_magnitude<10, -14>(mag));
    const uint32_t special_mask = 0u - static_cast<uint32_t>(mag >= kHalfPosInf);
    return bits_float(sign | (special & special_mask) | (finite & ~special_mask));
}

}  // namespace

uint16_t float_to_half_bits(float x) { return to_half(x); }
float half_bits_to_float(uint16_t h) { return from_half(h); }
float round_to_half(float x) { return from_half(to_half(x)); }

void round_to_half_software(const float* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = from_half(to_half(in[i]));
}

void float_to_half_bits_software(const float* in, uint16_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = to_half(in[i]);
}

void half_bits_to_float_software(const uint16_t* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = from_half(in[i]);
}

#ifdef MPWB_X86

bool cpu_has_f16c() {
    static const bool has = [] {
        __builtin_cpu_init();
        // F16C from CPUID leaf 1 (ECX bit 29): clang 14, the fuzz build's compiler, does not
        // know "f16c" in __builtin_cpu_supports. "avx" there also checks the OS saves YMM.
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
        return f16c && __builtin_cpu_supports("avx");
    }();
    return has;
}

// The immediate selects round-to-nearest-even regardless of MXCSR.RC.
__attribute__((target("f16c,avx"))) void round_to_half_f16c(const float* in, float* out, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i h0 = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        const __m128i h1 = _mm256_cvtps_ph(_mm256_loadu_ps(in + i + 8), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h0));
        _mm256_storeu_ps(out + i + 8, _mm256_cvtph_ps(h1));
    }
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i) out[i] = from_half(to_half(in[i]));
}

__attribute__((target("f16c,avx"))) void float_to_half_bits_f16c(const float* in, uint16_t* out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
    }
    for (; i < n; ++i) out[i] = to_half(in[i]);
}

__attribute__((target("f16c,avx"))) void half_bits_to_float_f16c(const uint16_t* in, float* out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i) out[i] = from_half(in[i]);
}

#else  // no x86: the software path stands in, so callers need no #ifdefs

bool cpu_has_f16c() { return false; }
void round_to_half_f16c(const float* in, float* out, size_t n) { round_to_half_software(in, out, n); }
void float_to_half_bits_f16c(const float* in, uint16_t* out, size_t n) {
    float_to_half_bits_software(in, out, n);
}
void half_bits_to_float_f16c(const uint16_t* in, float* out, size_t n) {
    half_bits_to_float_software(in, out, n);
}

#endif

}  // namespace mpwb
