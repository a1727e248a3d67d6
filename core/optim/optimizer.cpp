// What every optimizer kind shares: the config's validation and JSON, the step over the
// parameters with the fused master/copy write, and the state checkpoint. The kinds' updates are
// in their own files (sgd.cpp, adam.cpp), listed in optimizer_registry.cpp. Elementwise work
// splits over threads, so the result never depends on the thread count.
#include "core/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/common/byte_blob.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/json_input.h"
#include "core/common/text_format.h"
#include "core/optim/optimizer_registry.h"

namespace mpwb {

namespace {

// Names the settings in messages and is the path prefix of their fields ("optimizer.gamma").
constexpr const char* kWhat = "optimizer";

void check_finite(const char* key, float v) {
    if (!std::isfinite(v))
        throw ConfigError(std::string("optimizer ") + key + " = " + shortest_text(v) +
                          " is not a finite number");
}

// [0, 1): momentum and betas of 1 would never forget, and would divide by zero in Adam's
// bias correction.
void check_unit(const char* key, float v) {
    check_finite(key, v);
    if (v < 0.0f || v >= 1.0f)
        throw ConfigError(std::string("optimizer ") + key + " = " + shortest_text(v) + " is outside [0, 1)");
}

}  // namespace

void OptimizerConfig::validate() const {
    const OptimizerDefinition& definition = optimizer_named(kind);
    check_unit("momentum", momentum);
    check_finite("weight_decay", weight_decay);
    if (weight_decay < 0.0f)
        throw ConfigError("optimizer weight_decay = " + shortest_text(weight_decay) + " is negative");
    check_unit("beta1", beta1);
    check_unit("beta2", beta2);
    check_finite("eps", eps);
    if (eps <= 0.0f) throw ConfigError("optimizer eps = " + shortest_text(eps) + " must be > 0");
    if (definition.reads("nesterov") && nesterov && momentum == 0.0f)
        throw ConfigError("optimizer nesterov = true needs momentum > 0 (momentum = 0)");
}

void to_json(nlohmann::json& j, const OptimizerConfig& c) {
    j = nlohmann::json{{"kind", c.kind},
                       {"momentum", float_as_json_double(c.momentum)},
                       {"nesterov", c.nesterov},
                       {"weight_decay", float_as_json_double(c.weight_decay)},
                       {"beta1", float_as_json_double(c.beta1)},
                       {"beta2", float_as_json_double(c.beta2)},
                       {"eps", float_as_json_double(c.eps)}};
}

void from_json(const nlohmann::json& j, OptimizerConfig& c) {
    check_setting_keys(j, kWhat, {"kind", "momentum", "nesterov", "weight_decay", "beta1", "beta2", "eps"});
    OptimizerConfig out;
    read_setting(j, kWhat, "kind", out.kind);
    read_setting(j, kWhat, "momentum", out.momentum);
    read_setting(j, kWhat, "nesterov", out.nesterov);
    read_setting(j, kWhat, "weight_decay", out.weight_decay);
    read_setting(j, kWhat, "beta1", out.beta1);
    read_setting(j, kWhat, "beta2", out.beta2);
    read_setting(j, kWhat, "eps", out.eps);
    out.validate();
    c = std::move(out);
}

// ---------------------------------------------------------------------------------------------

Optimizer::Optimizer(OptimizerConfig config) : config_(std::move(config)) { config_.validate(); }

void Optimizer::set_config(const OptimizerConfig& config) {
    config.validate();
    if (config.kind != config_.kind)
        throw ConfigError("optimizer kind cannot change from '" + config_.kind + "' to '" + config.kind +
                          "' during a run; make a new optimizer");
    config_ = config;
}

void Optimizer::step(std::span<Parameter* const> params, float lr, StepFormats formats) {
    if (!std::isfinite(lr) || lr < 0.0f)
        throw ConfigError("learning rate = " + shortest_text(lr) + " must be finite and >= 0");
    // Check everything before touching anything, so a bad list leaves the weights as they were.
    for (size_t i = 0; i < params.size(); ++i) {
        const Parameter* p = params[i];
        if (!p) throw Error("optimizer step: parameter " + std::to_string(i) + " is null");
        if (p->grad.empty()) continue;
        if (p->grad.numel() != p->value.numel())
            throw Error("optimizer step: parameter " + std::to_string(i) + " ('" + p->name + "') has " +
                        std::to_string(p->value.numel()) + " values but its gradient has " +
                        std::to_string(p->grad.numel()));
        if (i < state_.size()) {
            const std::string problem = size_problem(state_[i], p->value.numel());
            if (!problem.empty())
                throw Error("optimizer state for parameter " + std::to_string(i) + " ('" + p->name + "') " +
                            problem + "; call reset() after changing the network");
        }
    }
    if (state_.size() < params.size()) state_.resize(params.size());

    // Chunks of whole blocks: each block is updated, then rounded and copied while it is still
    // in cache, which is the CPU form of the fused update-and-copy kernel.
    constexpr int64_t kGrain = int64_t{1} << 14;
    constexpr int64_t kBlock = 2048;
    for (size_t i = 0; i < params.size(); ++i) {
        Parameter& p = *params[i];
        if (p.grad.empty()) continue;
        const int64_t n = p.value.numel();
        State& s = state_[i];
        const bool fresh = prepare_state(s, n);
        ++s.step;
        const bool write_copy = formats.copy != Format::FP32;
        if (write_copy) {
            p.compute.resize(p.value.shape());
        } else if (!p.compute.empty()) {
            // A stale copy would be read by forward instead of the updated value.
            p.compute = Tensor();
        }
        const Update u{p.value.data(),
                       p.grad.data(),
                       s.a.empty() ? nullptr : s.a.data(),
                       s.b.empty() ? nullptr : s.b.data(),
                       p.weight_decay,
                       fresh,
                       lr,
                       s.step};
        float* value = p.value.data();
        float* copy = write_copy ? p.compute.data() : nullptr;
        const Format master = formats.master;
        const Format copy_format = formats.copy;
        parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
            for (int64_t b = begin; b < end; b += kBlock) {
                const int64_t e = std::min(end, b + kBlock);
                update_range(u, b, e);
                const auto count = static_cast<size_t>(e - b);
                if (master != Format::FP32) round_to_format(master, value + b, value + b, count);
                if (copy) round_to_format(copy_format, value + b, copy + b, count);
            }
        });
    }
}

// ---------------------------------------------------------------------------------------------
// State checkpoint

namespace {

constexpr char kMagic[8] = {'M', 'P', 'W', 'B', 'O', 'P', 'T', '1'};

void put_floats(std::vector<uint8_t>& out, const std::vector<float>& v) {
    put_value(out, static_cast<uint64_t>(v.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(float));
}

std::vector<float> get_floats(BlobReader& r) {
    const auto n = r.get<uint64_t>();
    if (n > r.remaining() / sizeof(float))
        throw DataError("optimizer state blob is corrupt: a buffer of " + std::to_string(n) +
                        " values is longer than the rest of the blob");
    std::vector<float> v(static_cast<size_t>(n));
    r.read(v.data(), v.size() * sizeof(float));
    return v;
}

}  // namespace

std::string Optimizer::buffer_text(const std::vector<float>& buffer, const char* name) {
    return buffer.empty() ? std::string("no ") + name
                          : std::string("a ") + name + " of " + std::to_string(buffer.size()) + " values";
}

std::string Optimizer::first_bad_value(const std::vector<float>& buffer, bool (*bad)(float)) {
    for (size_t i = 0; i < buffer.size(); ++i)
        if (bad(buffer[i]))
            return shortest_text(buffer[i]) + " at element " + std::to_string(i) + " of " +
                   std::to_string(buffer.size());
    return {};
}

std::vector<uint8_t> Optimizer::save_state() const {
    std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
    put_value(out, static_cast<uint32_t>(config_.kind.size()));
    out.insert(out.end(), config_.kind.begin(), config_.kind.end());
    put_value(out, static_cast<uint64_t>(state_.size()));
    for (const State& s : state_) {
        put_value(out, s.step);
        put_floats(out, s.a);
        put_floats(out, s.b);
    }
    return out;
}

void Optimizer::load_state(std::span<const uint8_t> blob, std::span<Parameter* const> params,
                           const std::function<std::string(size_t)>& parameter_name) {
    BlobReader r(blob, "optimizer state blob");
    char magic[sizeof kMagic];
    r.read(magic, sizeof magic);
    if (std::memcmp(magic, kMagic, sizeof kMagic) != 0)
        throw DataError("optimizer state blob does not start with the MPWBOPT1 signature");
    const auto kind_len = r.get<uint32_t>();
    if (kind_len > 64) throw DataError("optimizer state blob is corrupt: kind name too long");
    std::string kind(kind_len, '\0');
    r.read(kind.data(), kind_len);
    if (kind != config_.kind)
        throw DataError("optimizer state blob is for '" + kind + "', this optimizer is '" + config_.kind +
                        "'");
    const auto count = r.get<uint64_t>();
    // A state is kept for every parameter from the first step on: none, or one for each.
    if (count != 0 && count != params.size())
        throw DataError("optimizer state blob holds the state of " + std::to_string(count) +
                        " parameters; the network has " + std::to_string(params.size()));
    std::vector<State> states(static_cast<size_t>(count));
    for (size_t i = 0; i < states.size(); ++i) {
        State& s = states[i];
        s.step = r.get<int64_t>();
        s.a = get_floats(r);
        s.b = get_floats(r);
        const std::string problem = state_problem(s, params, i, parameter_name);
        if (!problem.empty()) throw DataError(problem);
    }
    if (r.remaining() != 0)
        throw DataError("optimizer state blob has " + std::to_string(r.remaining()) +
                        " unexpected bytes at the end");
    state_ = std::move(states);
}

std::string Optimizer::state_problem(const State& s, std::span<Parameter* const> params, size_t i,
                                     const std::function<std::string(size_t)>& parameter_name) const {
    const std::string name = parameter_name
                                 ? parameter_name(i)
                                 : "parameter " + std::to_string(i) + " ('" + params[i]->name + "')";
    if (s.step < 0)
        return "optimizer state of " + name + " has a negative step count (" + std::to_string(s.step) + ")";
    std::string problem = size_problem(s, params[i]->value.numel());
    if (problem.empty()) problem = value_problem(s);
    return problem.empty() ? problem : "optimizer state of " + name + " " + problem;
}

void Optimizer::set_states(std::vector<State> states, std::span<Parameter* const> params,
                           const std::function<std::string(size_t)>& parameter_name) {
    if (!states.empty() && states.size() != params.size())
        throw DataError("optimizer state holds the state of " + std::to_string(states.size()) +
                        " parameters; the network has " + std::to_string(params.size()));
    for (size_t i = 0; i < states.size(); ++i) {
        const std::string problem = state_problem(states[i], params, i, parameter_name);
        if (!problem.empty()) throw DataError(problem);
    }
    state_ = std::move(states);
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config) {
    config.validate();
    return optimizer_named(config.kind).make(config);
}

}  // namespace mpwb
