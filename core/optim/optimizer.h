// Optimizers over mpwb::Parameter: the base every kind shares and its settings. The kinds (SGD,
// Adam, AdamW: sgd.h, adam.h) follow PyTorch's update rules, so a run here can be checked against
// a PyTorch run step for step; the optimizer registry (optimizer_registry.h) lists them.
//
// One step does, per element and in one pass over each tensor, what the design's fused CUDA step
// does: update the FP32 master weight, round it to the master format when the policy keeps no
// FP32 master (fp16-pure, where small updates vanish on purpose), and write the reduced-precision
// copy the layers compute with. The gradient the optimizer sees is already unscaled; skipping a
// step after an overflow is the trainer's business (it simply does not call step()).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/numeric/format.h"
#include "core/tensor/parameter.h"

namespace mpwb {

struct OptimizerConfig {
    std::string kind = "sgd";   // a name in the optimizer registry (optimizer_registry.h)
    float momentum = 0.9f;      // sgd only; 0 is plain SGD
    bool nesterov = false;      // sgd only; needs momentum > 0
    float weight_decay = 0.0f;  // L2 added to the gradient (sgd, adam); decoupled (adamw)
    float beta1 = 0.9f;         // adam, adamw
    float beta2 = 0.999f;
    float eps = 1e-8f;

    // Throws ConfigError naming the setting and its value (an unknown kind: listing the kinds).
    void validate() const;
    bool operator==(const OptimizerConfig&) const = default;
};

// JSON with the field names above; missing keys keep their defaults, unknown keys and values of
// the wrong type throw ConfigError naming the key. from_json validates the result.
void to_json(nlohmann::json& j, const OptimizerConfig& c);
void from_json(const nlohmann::json& j, OptimizerConfig& c);

// Where the updated value goes. master: the format the master weight is kept in (FP32 in every
// mixed policy, FP16 under fp16-pure). copy: the format of Parameter::compute; FP32 means the
// layers read `value` directly and `compute` is left empty.
struct StepFormats {
    Format master = Format::FP32;
    Format copy = Format::FP32;
};

class Optimizer {
public:
    explicit Optimizer(OptimizerConfig config);
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    const OptimizerConfig& config() const { return config_; }
    // Live tuning between steps: new hyper-parameters, state kept. The kind cannot change
    // (make a new optimizer for that); throws ConfigError.
    void set_config(const OptimizerConfig& config);

    // One update of every parameter with a gradient. Parameters with an empty grad are skipped
    // (PyTorch skips grad == None) and keep their state. State is keyed by position in `params`,
    // so pass the same list in the same order every step; a parameter whose state does not fit
    // it (size_problem) throws Error naming the buffer (call reset() after rebuilding the network).
    // lr must be finite and >= 0 (ConfigError).
    void step(std::span<Parameter* const> params, float lr, StepFormats formats = {});

    // Forget momentum buffers, moments and step counts.
    void reset() { state_.clear(); }

    // Number of updates applied to the parameter at `index` (0 before its first).
    int64_t step_count(size_t index) const { return index < state_.size() ? state_[index].step : 0; }

    // Checkpoint of the state as a binary blob (little-endian, host layout).
    std::vector<uint8_t> save_state() const;
    // Takes a saved state for `params`, the list step() will be given. Throws DataError, and
    // keeps the state it had, for a blob that is truncated, corrupt or of another kind, or that
    // does not fit `params`: state for another number of parameters, a negative step count, a
    // buffer of another size than its parameter's, one the kind does not keep or one it lacks
    // (Adam's moments after an update), a non-finite first moment or momentum, a negative or NaN
    // second moment. The message names the parameter with `parameter_name(i)` (default: its
    // index and name) and gives the numbers.
    void load_state(std::span<const uint8_t> blob, std::span<Parameter* const> params,
                    const std::function<std::string(size_t)>& parameter_name = {});

    // Per-parameter state. SGD: a = momentum buffer (empty until momentum is first used).
    // Adam: a = first moment, b = second moment.
    struct State {
        int64_t step = 0;
        std::vector<float> a, b;
    };
    // The state as it stands (empty before the first step), and a replacement for it checked as
    // load_state checks a blob's (same DataErrors; the state it had is kept on refusal): for an
    // engine that keeps the buffers elsewhere (a device) and converts them to and from
    // save_state's format through an optimizer of the run's kind.
    const std::vector<State>& states() const { return state_; }
    void set_states(std::vector<State> states, std::span<Parameter* const> params,
                    const std::function<std::string(size_t)>& parameter_name = {});

protected:
    // What one parameter's update reads and writes. a/b point into its State buffers.
    struct Update {
        float* value;
        const float* grad;
        float* a;
        float* b;
        bool decay;  // Parameter::weight_decay
        bool fresh;  // the buffers were allocated for this step (SGD: buf = d)
        float lr;
        int64_t step;  // this update's number, from 1
    };
    // Update elements [begin, end); called from worker threads on disjoint ranges, so it must
    // touch only those elements.
    virtual void update_range(const Update& u, int64_t begin, int64_t end) const = 0;
    // Allocates the buffers the kind needs (zeroed); returns true when it allocated them now.
    virtual bool prepare_state(State& state, int64_t numel) const = 0;
    // Why `state` cannot be this kind's state of a parameter of `numel` values (a buffer of
    // another size, one it does not keep or lacks), with the numbers; empty when it can. step()
    // and load_state share it, so no update ever runs over a buffer that does not fit.
    virtual std::string size_problem(const State& state, int64_t numel) const = 0;
    // Why the buffers' values cannot come from this kind's updates; empty when they can.
    virtual std::string value_problem(const State& state) const = 0;

    // For the two above: "a first moment of 6 values", "no first moment".
    static std::string buffer_text(const std::vector<float>& buffer, const char* name);
    // The first value `bad` says no update could have left, as "nan at element 3 of 6"; empty if none.
    static std::string first_bad_value(const std::vector<float>& buffer, bool (*bad)(float));

    OptimizerConfig config_;

private:
    // Why `s` cannot be the state of parameter `i` of `params` (negative step count, buffers that
    // do not fit it or no update could have left), as a DataError message; empty when it can.
    std::string state_problem(const State& s, std::span<Parameter* const> params, size_t i,
                              const std::function<std::string(size_t)>& parameter_name) const;

    std::vector<State> state_;
};

// The optimizer of config.kind (its registry entry's make). Throws ConfigError for an invalid
// config (see OptimizerConfig::validate).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config);

}  // namespace mpwb
