// The registry of optimizers: for each its name (OptimizerConfig::kind), the settings it reads,
// how each engine runs it and its PyTorch text. It is the one place a kind is described:
// OptimizerConfig::validate and make_optimizer (the CPU engine) read it, the CUDA engine takes its
// fused rule from it, mpwb-cli's flags, the training panel and the sweeps' axis checks offer and
// check its names, and the PyTorch export writes its constructor. Adding an optimizer: its class
// (<kind>.h, <kind>.cpp, like sgd.cpp), one entry in optimizer_registry.cpp, and its rule in
// core/backend/cuda/step_math.h or none (the CUDA engine then refuses the run in one line and it
// trains on the CPU).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/cuda/step_math.h"  // cuda::OptimizerKind, the device rules: plain C++
#include "core/optim/optimizer.h"

namespace mpwb {

struct OptimizerDefinition {
    std::string name;  // OptimizerConfig::kind
    std::string help;  // one line for lists of choices
    // The OptimizerConfig settings it reads ("momentum", "nesterov", "weight_decay", "beta1",
    // "beta2", "eps"); the others are kept but have no effect on it.
    std::vector<std::string> settings;
    // The CPU engine's optimizer.
    std::function<std::unique_ptr<Optimizer>(const OptimizerConfig&)> make;
    // The CUDA engine's fused rule (cuda::optimizer_rule in step_math.h); nullopt: it has none.
    std::optional<cuda::OptimizerKind> device;
    // The torch.optim constructor with the same rule and settings at learning rate lr, over the
    // Python expression `groups`: a list of parameter groups, each with its own weight_decay.
    std::function<std::string(const OptimizerConfig&, float lr, const std::string& groups)> pytorch;

    bool reads(std::string_view setting) const;
};

// Every optimizer, in the order choices are offered.
const std::vector<OptimizerDefinition>& optimizer_registry();
// nullptr when there is no such optimizer.
const OptimizerDefinition* find_optimizer(std::string_view name);
// The names, in the registry's order.
std::vector<std::string> optimizer_names();
// The optimizer `name` names; ConfigError "optimizer kind '...' is unknown" listing them otherwise.
const OptimizerDefinition& optimizer_named(std::string_view name);
// "adam, adamw": the optimizers that read `setting`, for the help of its flag or field.
std::string optimizers_reading(std::string_view setting);

}  // namespace mpwb
