// Per-element arithmetic that compiles for the host (g++) and for the device (nvcc) and gives the
// same bits on both: MPWB_HD marks such a function, the *_rn helpers round each operation on its
// own, and the transcendentals are glibc's on the host and libdevice's on the device.
//
// Bit-exactness needs every operation rounded on its own: nvcc would otherwise contract a*b+c
// into one FMA (its default, --fmad=true), which g++ never does for x86-64 without -mfma. So
// shared math goes through mul_rn, add_rn, ...: the CUDA round-to-nearest intrinsics on the
// device (never contracted), plain operators on the host. The activation table
// (core/backend/activations.h), the CUDA kernels' element math and the device step's rules
// (core/backend/cuda/element_math.h, step_math.h) are written with them.
//
// Plain C++17 without CUDA headers: the CPU backend and host tests include it too.
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define MPWB_HD __host__ __device__ __forceinline__
#else
#define MPWB_HD inline
#endif

namespace mpwb {

// ---- arithmetic rounded one operation at a time ----

MPWB_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
MPWB_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
MPWB_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
MPWB_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}
MPWB_HD float sqrt_rn(float a) {
#if defined(__CUDA_ARCH__)
    return __fsqrt_rn(a);
#else
    return std::sqrt(a);
#endif
}
MPWB_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}
MPWB_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
MPWB_HD double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}
MPWB_HD double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}
MPWB_HD double sqrt_rn(double a) {
#if defined(__CUDA_ARCH__)
    return __dsqrt_rn(a);
#else
    return std::sqrt(a);
#endif
}
// glibc's pow is within 1 ulp and CUDA's double pow within 2, so the two may differ in the
// last bit of the double; rounded to float afterwards that almost never shows (see optimizer_rule).
MPWB_HD double pow_d(double x, double y) {
#if defined(__CUDA_ARCH__)
    return ::pow(x, y);
#else
    return std::pow(x, y);
#endif
}
MPWB_HD bool is_finite(float x) {
#if defined(__CUDA_ARCH__)
    return ::isfinite(x);
#else
    return std::isfinite(x);
#endif
}

// ---- transcendentals ----
// glibc's on the host (what the CPU backend calls), CUDA's libdevice on the device (within 2 ulp
// of the correctly rounded value, so within a few ulp of the CPU).

MPWB_HD float exp_f(float x) {
#if defined(__CUDA_ARCH__)
    return expf(x);
#else
    return std::exp(x);
#endif
}
MPWB_HD float log_f(float x) {
#if defined(__CUDA_ARCH__)
    return logf(x);
#else
    return std::log(x);
#endif
}
MPWB_HD float erf_f(float x) {
#if defined(__CUDA_ARCH__)
    return erff(x);
#else
    return std::erf(x);
#endif
}
MPWB_HD float tanh_f(float x) {
#if defined(__CUDA_ARCH__)
    return tanhf(x);
#else
    return std::tanh(x);
#endif
}

}  // namespace mpwb
