// The activation table: every activation layer kind, each defined once here by one entry: its
// name (the layer kind's JSON "type"), the palette's help line, its PyTorch module, and its
// forward and derivative math as MPWB_HD functions. The CPU backend runs that math on the host
// and the CUDA kernels on the device (the same formulas rounded op by op, so the two agree bit
// for bit wherever the transcendentals do); the layer registry makes one kind per entry; the
// PyTorch export writes the entry's module.
//
// Adding an activation: its enum value, its entry struct and its place in ActivationTable (all
// below), and its float64 reference in tests/backend/reference_ops.h.
//
// The backends dispatch on the kind once per tensor (visit_activation): each entry's loop or
// kernel is its own instantiation, so the per-element math has no dispatch in it.
// Plain C++17 without CUDA headers (nvcc compiles the kernels that include it as C++17).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/hd_math.h"

namespace mpwb {

// The table's order: the palette's.
enum class Activation : uint8_t { ReLU, LeakyReLU, GELU, GELUTanh, Tanh, Sigmoid };

// Each entry has:
//   kind, name, help    the enum value, the layer kind's name, the palette's line
//   pytorch             the PyTorch module; "{slope}" stands for the slope setting
//   has_slope           the kind has the "slope" setting (LeakyReLU's negative slope)
//   backward_reads_output  backward needs y rather than x (the kernels load only what it reads)
//   forward(x, slope) -> y, backward(x, y, dy, slope) -> dx

struct ReluActivation {
    static constexpr Activation kind = Activation::ReLU;
    static constexpr const char* name = "ReLU";
    static constexpr const char* help = "max(x, 0)";
    static constexpr const char* pytorch = "nn.ReLU()";
    static constexpr bool has_slope = false;
    static constexpr bool backward_reads_output = false;
    // NaN goes to 0 both ways (the comparison is false), as PyTorch's ReLU does forward.
    MPWB_HD static float forward(float x, float) { return x > 0.0f ? x : 0.0f; }
    MPWB_HD static float backward(float x, float, float dy, float) { return x > 0.0f ? dy : 0.0f; }
};

struct LeakyReluActivation {
    static constexpr Activation kind = Activation::LeakyReLU;
    static constexpr const char* name = "LeakyReLU";
    static constexpr const char* help = "x, or slope · x below 0";
    static constexpr const char* pytorch = "nn.LeakyReLU(negative_slope={slope})";
    static constexpr bool has_slope = true;
    static constexpr bool backward_reads_output = false;
    MPWB_HD static float forward(float x, float slope) { return x > 0.0f ? x : slope * x; }
    MPWB_HD static float backward(float x, float, float dy, float slope) {
        return x > 0.0f ? dy : slope * dy;
    }
};

// The exact GELU, x Φ(x) with erf (PyTorch's default).
struct GeluActivation {
    static constexpr Activation kind = Activation::GELU;
    static constexpr const char* name = "GELU";
    static constexpr const char* help = "Gaussian error linear unit";
    static constexpr const char* pytorch = "nn.GELU()";
    static constexpr bool has_slope = false;
    static constexpr bool backward_reads_output = false;
    static constexpr float kSqrtHalf = static_cast<float>(0.70710678118654752440);
    MPWB_HD static float one_plus_erf(float x) { return add_rn(1.0f, erf_f(mul_rn(x, kSqrtHalf))); }
    MPWB_HD static float forward(float x, float) { return mul_rn(mul_rn(0.5f, x), one_plus_erf(x)); }
    MPWB_HD static float backward(float x, float, float dy, float) {
        // φ(x) = exp(-x²/2) / sqrt(2π); the scale is computed in double, then rounded once.
        constexpr float pdf_scale = static_cast<float>(0.5 * 1.12837916709551257390 * 0.70710678118654752440);
        const float pdf = mul_rn(exp_f(mul_rn(mul_rn(-0.5f, x), x)), pdf_scale);
        const float cdf = mul_rn(0.5f, one_plus_erf(x));
        return mul_rn(dy, add_rn(cdf, mul_rn(x, pdf)));
    }
};

// GELU with the tanh approximation (GPT-2): 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))),
// differentiated as PyTorch's kernel does. Its tanh is a rational function rather than glibc's
// tanhf: plain arithmetic, so the CPU loops vectorise (tanhf and its expm1f were 36% of a
// fortunes-gpt step) and host and device compute the same bits. Within 4.1e-7 of tanh (7 ulp
// near ±1), well inside the approximation's own distance from the exact GELU.
struct GeluTanhActivation {
    static constexpr Activation kind = Activation::GELUTanh;
    static constexpr const char* name = "GELUTanh";
    static constexpr const char* help = "GELU, tanh approximation (GPT-2)";
    static constexpr const char* pytorch = "nn.GELU(approximate=\"tanh\")";
    static constexpr bool has_slope = false;
    static constexpr bool backward_reads_output = false;
    static constexpr float kBeta = static_cast<float>(0.79788456080286535588);  // sqrt(2/π)
    static constexpr float kKappa = 0.044715f;
    // tanh(u) as an odd degree-13 polynomial over an even degree-6 one (the minimax fit Eigen's
    // float tanh uses), ±1 where |u| passes the point above which tanh is 1 in float; NaN stays
    // NaN (the test is false). The fit is computed for every u and the select comes last: g++
    // (with trapping math) will not if-convert a select that feeds the division, and a loop with
    // a branch does not vectorise. Large |u| make the fit inf or NaN, which the select drops.
    MPWB_HD static float rational_tanh(float u) {
        constexpr float kSaturates = 7.90531110763549805f;
        const float u2 = mul_rn(u, u);
        float p = add_rn(mul_rn(-2.76076847742355e-16f, u2), 2.00018790482477e-13f);
        p = add_rn(mul_rn(p, u2), -8.60467152213735e-11f);
        p = add_rn(mul_rn(p, u2), 5.12229709037114e-08f);
        p = add_rn(mul_rn(p, u2), 1.48572235717979e-05f);
        p = add_rn(mul_rn(p, u2), 6.37261928875436e-04f);
        p = add_rn(mul_rn(p, u2), 4.89352455891786e-03f);
        float q = add_rn(mul_rn(1.19825839466702e-06f, u2), 1.18534705686654e-04f);
        q = add_rn(mul_rn(q, u2), 2.26843463243900e-03f);
        q = add_rn(mul_rn(q, u2), 4.89352518554385e-03f);
        const float fit = div_rn(mul_rn(p, u), q);
        const float one = u > 0.0f ? 1.0f : -1.0f;
        return (u > kSaturates || u < -kSaturates) ? one : fit;
    }
    MPWB_HD static float inner_tanh(float x) {
        return rational_tanh(mul_rn(kBeta, add_rn(x, mul_rn(kKappa, mul_rn(mul_rn(x, x), x)))));
    }
    MPWB_HD static float forward(float x, float) {
        return mul_rn(mul_rn(0.5f, x), add_rn(1.0f, inner_tanh(x)));
    }
    MPWB_HD static float backward(float x, float, float dy, float) {
        const float t = inner_tanh(x);
        const float left_derivative = mul_rn(0.5f, add_rn(1.0f, t));
        const float inner_derivative =
            mul_rn(kBeta, add_rn(1.0f, mul_rn(mul_rn(3.0f, kKappa), mul_rn(x, x))));
        const float right_derivative =
            mul_rn(mul_rn(mul_rn(0.5f, x), sub_rn(1.0f, mul_rn(t, t))), inner_derivative);
        return mul_rn(dy, add_rn(left_derivative, right_derivative));
    }
};

struct TanhActivation {
    static constexpr Activation kind = Activation::Tanh;
    static constexpr const char* name = "Tanh";
    static constexpr const char* help = "Hyperbolic tangent";
    static constexpr const char* pytorch = "nn.Tanh()";
    static constexpr bool has_slope = false;
    static constexpr bool backward_reads_output = true;
    MPWB_HD static float forward(float x, float) { return tanh_f(x); }
    MPWB_HD static float backward(float, float y, float dy, float) {
        return mul_rn(dy, sub_rn(1.0f, mul_rn(y, y)));
    }
};

struct SigmoidActivation {
    static constexpr Activation kind = Activation::Sigmoid;
    static constexpr const char* name = "Sigmoid";
    static constexpr const char* help = "1 / (1 + e^-x)";
    static constexpr const char* pytorch = "nn.Sigmoid()";
    static constexpr bool has_slope = false;
    static constexpr bool backward_reads_output = true;
    MPWB_HD static float forward(float x, float) { return 1.0f / add_rn(1.0f, exp_f(-x)); }
    MPWB_HD static float backward(float, float y, float dy, float) {
        return mul_rn(mul_rn(dy, y), sub_rn(1.0f, y));
    }
};

template <class... Entries>
struct ActivationList {};

using ActivationTable = ActivationList<ReluActivation, LeakyReluActivation, GeluActivation,
                                       GeluTanhActivation, TanhActivation, SigmoidActivation>;

namespace activation_detail {

template <class... E>
constexpr bool in_enum_order(ActivationList<E...>) {
    int index = 0;
    return ((static_cast<int>(E::kind) == index++) && ...);
}

template <class F, class... E>
void for_each(F& f, ActivationList<E...>) {
    (f(E{}), ...);
}

}  // namespace activation_detail

static_assert(activation_detail::in_enum_order(ActivationTable{}),
              "ActivationTable lists every Activation once, in the enum's order");

// Calls f(Entry{}) for every entry, in the table's order.
template <class F>
void for_each_activation(F&& f) {
    activation_detail::for_each(f, ActivationTable{});
}

// Calls f(Entry{}) with kind's entry: a loop or kernel launched inside f is instantiated per
// entry, so its per-element math has no dispatch in it.
template <class F>
void visit_activation(Activation kind, F&& f) {
    bool found = false;
    for_each_activation([&](auto entry) {
        if (decltype(entry)::kind != kind) return;
        found = true;
        f(entry);
    });
    if (!found) throw std::logic_error("unknown activation id " + std::to_string(static_cast<int>(kind)));
}

// An entry's host-side description.
struct ActivationInfo {
    Activation kind;
    const char* name;
    const char* help;
    const char* pytorch;
    bool has_slope;
};

// Every entry, in the table's order.
inline const std::vector<ActivationInfo>& activation_infos() {
    static const std::vector<ActivationInfo> infos = [] {
        std::vector<ActivationInfo> all;
        for_each_activation([&](auto entry) {
            using E = decltype(entry);
            all.push_back({E::kind, E::name, E::help, E::pytorch, E::has_slope});
        });
        return all;
    }();
    return infos;
}

inline const ActivationInfo& activation_info(Activation kind) {
    return activation_infos().at(static_cast<size_t>(kind));  // the table is in the enum's order
}

}  // namespace mpwb
