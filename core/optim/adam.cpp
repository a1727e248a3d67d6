// Adam and AdamW (see adam.h): one update loop per weight-decay form, and the checks of their
// moments in a checkpoint. Per-step scalars (the bias corrections) are computed in double, as
// PyTorch does in Python; the elementwise arithmetic is FP32.
#include "core/optim/adam.h"

#include <cmath>

namespace mpwb {

namespace {

struct AdamConstants {
    float step_size, bc2_sqrt, beta1, beta2, eps, one_minus_b1, one_minus_b2, wd, shrink;
};

// Local restrict pointers: the four arrays never overlap, and saying so lets the loop vectorise
// instead of reloading through `u` after every store.
template <bool Decoupled, bool L2, class Update>
void adam_loop(const Update& u, const AdamConstants& k, int64_t begin, int64_t end) {
    float* __restrict value = u.value;
    const float* __restrict grad = u.grad;
    float* __restrict first = u.a;
    float* __restrict second = u.b;
    for (int64_t i = begin; i < end; ++i) {
        float w = value[i];
        float g = grad[i];
        if constexpr (Decoupled) w = w * k.shrink;
        if constexpr (L2) g = g + k.wd * w;
        const float m = k.beta1 * first[i] + k.one_minus_b1 * g;
        const float v = k.beta2 * second[i] + k.one_minus_b2 * (g * g);
        first[i] = m;
        second[i] = v;
        const float denom = std::sqrt(v) / k.bc2_sqrt + k.eps;
        value[i] = w - k.step_size * (m / denom);
    }
}

class Adam final : public Optimizer {
public:
    Adam(OptimizerConfig config, bool decoupled) : Optimizer(std::move(config)), decoupled_(decoupled) {}

protected:
    bool prepare_state(State& s, int64_t n) const override {
        if (!s.a.empty()) return false;
        s.a.assign(static_cast<size_t>(n), 0.0f);
        s.b.assign(static_cast<size_t>(n), 0.0f);
        return true;
    }

    // Both moments are allocated together at the first update: none before it, one value per
    // element of the parameter in each after it.
    std::string size_problem(const State& s, int64_t n) const override {
        const auto want = static_cast<size_t>(s.step > 0 ? n : 0);
        if (s.a.size() == want && s.b.size() == want) return {};
        return "holds " + buffer_text(s.a, "first moment") + " and " + buffer_text(s.b, "second moment") +
               " after " + std::to_string(s.step) + " updates; a parameter of " + std::to_string(n) +
               " values has " +
               (want ? std::to_string(want) + " in each" : std::string("none before its first"));
    }

    // The first moment averages finite gradients, so it is finite; the second averages their
    // squares, which may overflow to +inf but are never negative or NaN.
    std::string value_problem(const State& s) const override {
        std::string bad = first_bad_value(s.a, [](float v) { return !std::isfinite(v); });
        if (!bad.empty()) return "has a non-finite first moment: " + bad;
        bad = first_bad_value(s.b, [](float v) { return !(v >= 0.0f); });
        return bad.empty() ? bad : "has a second moment that is negative or NaN: " + bad;
    }

    void update_range(const Update& u, int64_t begin, int64_t end) const override {
        const double b1 = config_.beta1, b2 = config_.beta2;
        const double bc1 = 1.0 - std::pow(b1, static_cast<double>(u.step));
        const double bc2 = 1.0 - std::pow(b2, static_cast<double>(u.step));
        const auto step_size = static_cast<float>(u.lr / bc1);
        const auto bc2_sqrt = static_cast<float>(std::sqrt(bc2));
        const float beta1 = config_.beta1, beta2 = config_.beta2, eps = config_.eps;
        const auto one_minus_b1 = static_cast<float>(1.0 - b1);
        const auto one_minus_b2 = static_cast<float>(1.0 - b2);
        const float wd = u.decay ? config_.weight_decay : 0.0f;
        const bool l2 = wd != 0.0f && !decoupled_;
        const bool decay = wd != 0.0f && decoupled_;
        const auto shrink = static_cast<float>(1.0 - static_cast<double>(u.lr) * wd);
        const AdamConstants k{step_size, bc2_sqrt, beta1, beta2, eps, one_minus_b1, one_minus_b2, wd, shrink};
        // One branch-free loop per weight-decay form, so each vectorises.
        if (decay)
            adam_loop<true, false>(u, k, begin, end);
        else if (l2)
            adam_loop<false, true>(u, k, begin, end);
        else
            adam_loop<false, false>(u, k, begin, end);
    }

private:
    bool decoupled_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adam(const OptimizerConfig& config) {
    return std::make_unique<Adam>(config, false);
}

std::unique_ptr<Optimizer> make_adamw(const OptimizerConfig& config) {
    return std::make_unique<Adam>(config, true);
}

}  // namespace mpwb
