// The CUDA engine's optimizer state to and from the checkpoint's format (device_optimizer_state.h).
#include "core/engine/cuda/device_optimizer_state.h"

#include "core/common/error.h"
#include "core/engine/cuda/step_math_host.h"

namespace mpwb::cuda {
namespace {

std::string parameter_text(std::span<Parameter* const> params, size_t i, const ParameterName& name) {
    return name ? name(i) : "parameter " + std::to_string(i) + " ('" + params[i]->name + "')";
}

// A device buffer of one parameter, checked against it before it is copied anywhere.
void check_device_buffer(const std::vector<std::vector<float>>& buffers, bool kept, const char* what,
                         std::span<Parameter* const> params, const ParameterName& name) {
    const size_t want = kept ? params.size() : 0;
    if (buffers.size() != want)
        throw DataError("the device's optimizer state holds " + std::to_string(buffers.size()) + " " + what +
                        " buffers for " + std::to_string(params.size()) + " parameters; its rule keeps " +
                        (kept ? "one per parameter" : "none"));
    for (size_t i = 0; i < buffers.size(); ++i)
        if (std::ssize(buffers[i]) != params[i]->value.numel())
            throw DataError("the device's " + std::string(what) + " buffer of " +
                            parameter_text(params, i, name) + " holds " + std::to_string(buffers[i].size()) +
                            " values; the parameter has " + std::to_string(params[i]->value.numel()));
}

}  // namespace

DeviceOptimizerBuffers device_optimizer_buffers(const OptimizerConfig& config) {
    const OptimizerKind kind = optimizer_constants(config).kind;
    if (kind == OptimizerKind::SGD) return {.first = config.momentum != 0.0f, .second = false};
    return {.first = true, .second = true};
}

std::vector<uint8_t> encode_device_optimizer_state(const OptimizerConfig& config,
                                                   std::span<Parameter* const> params,
                                                   const DeviceOptimizerState& state,
                                                   const ParameterName& name) {
    const DeviceOptimizerBuffers kept = device_optimizer_buffers(config);
    if (state.updates < 0)
        throw DataError("the device's optimizer counts " + std::to_string(state.updates) + " updates");
    check_device_buffer(state.first, kept.first, "first", params, name);
    check_device_buffer(state.second, kept.second, "second", params, name);
    auto optimizer = make_optimizer(config);
    // Before its first update a CPU optimizer holds no state at all; after it, one per parameter.
    std::vector<Optimizer::State> states(state.updates > 0 ? params.size() : 0);
    for (size_t i = 0; i < states.size(); ++i) {
        states[i].step = state.updates;
        if (kept.first) states[i].a = state.first.at(i);
        if (kept.second) states[i].b = state.second.at(i);
    }
    optimizer->set_states(std::move(states), params, name);
    return optimizer->save_state();
}

DeviceOptimizerState decode_device_optimizer_state(const OptimizerConfig& config,
                                                   std::span<const uint8_t> blob,
                                                   std::span<Parameter* const> params,
                                                   const ParameterName& name) {
    const DeviceOptimizerBuffers kept = device_optimizer_buffers(config);
    auto optimizer = make_optimizer(config);
    optimizer->load_state(blob, params, name);
    const std::vector<Optimizer::State>& states = optimizer->states();
    DeviceOptimizerState out;
    out.updates = states.empty() ? 0 : states.front().step;
    for (size_t i = 0; i < params.size(); ++i) {
        const auto n = static_cast<size_t>(params[i]->value.numel());
        const Optimizer::State* s = states.empty() ? nullptr : &states[i];
        if (s && s->step != out.updates)
            throw DataError("optimizer state of " + parameter_text(params, i, name) + " counts " +
                            std::to_string(s->step) + " updates, " + parameter_text(params, 0, name) + " " +
                            std::to_string(out.updates) +
                            "; the CUDA engine counts the updates once for all parameters");
        // load_state checked every buffer's size: each is empty or of n values.
        if (kept.first && out.updates > 0 && (!s || s->a.empty()))
            throw DataError("optimizer state of " + parameter_text(params, i, name) + " holds no " +
                            (kept.second ? "first moment" : "momentum buffer") + " after " +
                            std::to_string(out.updates) +
                            " updates; the CUDA engine keeps one from the first update on");
        if (kept.first) out.first.push_back(s && !s->a.empty() ? s->a : std::vector<float>(n, 0.0f));
        if (kept.second) out.second.push_back(s && !s->b.empty() ? s->b : std::vector<float>(n, 0.0f));
    }
    return out;
}

}  // namespace mpwb::cuda
