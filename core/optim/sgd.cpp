// SGD (see sgd.h): the update, and the checks of its momentum buffer in a checkpoint.
#include "core/optim/sgd.h"

#include <cmath>

namespace mpwb {

namespace {

class Sgd final : public Optimizer {
public:
    using Optimizer::Optimizer;

protected:
    bool prepare_state(State& s, int64_t n) const override {
        if (config_.momentum == 0.0f || !s.a.empty()) return false;
        s.a.assign(static_cast<size_t>(n), 0.0f);
        return true;
    }

    // The momentum buffer is allocated at the first update that uses momentum (a live change
    // may turn it on later), so it may be missing; SGD keeps no second buffer.
    std::string size_problem(const State& s, int64_t n) const override {
        if (!s.b.empty()) return "holds " + buffer_text(s.b, "second buffer") + ", which SGD does not keep";
        if (!s.a.empty() && s.a.size() != static_cast<size_t>(n))
            return "holds " + buffer_text(s.a, "momentum buffer") + "; the parameter has " +
                   std::to_string(n);
        return {};
    }

    // Momentum sums finite gradients: a non-finite one would already have made the weight so.
    std::string value_problem(const State& s) const override {
        const std::string bad = first_bad_value(s.a, [](float v) { return !std::isfinite(v); });
        return bad.empty() ? bad : "has a non-finite momentum: " + bad;
    }

    void update_range(const Update& u, int64_t begin, int64_t end) const override {
        const float wd = u.decay ? config_.weight_decay : 0.0f;
        const float mu = config_.momentum;
        const bool nesterov = config_.nesterov;
        const float lr = u.lr;
        const bool fresh = u.fresh;
        float* __restrict value = u.value;  // see Adam: no overlap, so the loop vectorises
        const float* __restrict grad = u.grad;
        float* __restrict momentum = u.a;
        for (int64_t i = begin; i < end; ++i) {
            const float w = value[i];
            float d = grad[i];
            if (wd != 0.0f) d = d + wd * w;
            if (mu != 0.0f) {
                const float buf = fresh ? d : mu * momentum[i] + d;
                momentum[i] = buf;
                d = nesterov ? d + mu * buf : buf;
            }
            value[i] = w - lr * d;
        }
    }
};

}  // namespace

std::unique_ptr<Optimizer> make_sgd(const OptimizerConfig& config) { return std::make_unique<Sgd>(config); }

}  // namespace mpwb
