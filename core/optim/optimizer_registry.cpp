// The optimizers (see optimizer_registry.h): the table and its lookups.
#include "core/optim/optimizer_registry.h"

#include <algorithm>

#include "core/common/error.h"
#include "core/common/text_format.h"
#include "core/optim/adam.h"
#include "core/optim/sgd.h"

namespace mpwb {

namespace {

// A setting's value as Python reads it back (settings are finite: OptimizerConfig::validate).
std::string py(float v) { return shortest_text(v); }

std::string torch_sgd(const OptimizerConfig& c, float lr, const std::string& groups) {
    return "torch.optim.SGD(" + groups + ", lr=" + py(lr) + ", momentum=" + py(c.momentum) +
           ", nesterov=" + (c.nesterov ? "True" : "False") + ")";
}

// torch.optim.Adam or torch.optim.AdamW (`name`): the same arguments, another weight decay rule.
std::string torch_adam(const char* name, const OptimizerConfig& c, float lr, const std::string& groups) {
    return std::string("torch.optim.") + name + "(" + groups + ", lr=" + py(lr) + ", betas=(" + py(c.beta1) +
           ", " + py(c.beta2) + "), eps=" + py(c.eps) + ")";
}

std::vector<OptimizerDefinition> make_registry() {
    return {
        {.name = "sgd",
         .help = "SGD with momentum (0: plain), Nesterov and weight decay added to the gradient",
         .settings = {"momentum", "nesterov", "weight_decay"},
         .make = make_sgd,
         .device = cuda::OptimizerKind::SGD,
         .pytorch = torch_sgd},
        {.name = "adam",
         .help = "Adam, weight decay added to the gradient (L2)",
         .settings = {"weight_decay", "beta1", "beta2", "eps"},
         .make = make_adam,
         .device = cuda::OptimizerKind::Adam,
         .pytorch = [](const OptimizerConfig& c, float lr,
                       const std::string& groups) { return torch_adam("Adam", c, lr, groups); }},
        {.name = "adamw",
         .help = "Adam with decoupled weight decay (the weight shrinks by lr * weight_decay)",
         .settings = {"weight_decay", "beta1", "beta2", "eps"},
         .make = make_adamw,
         .device = cuda::OptimizerKind::AdamW,
         .pytorch = [](const OptimizerConfig& c, float lr,
                       const std::string& groups) { return torch_adam("AdamW", c, lr, groups); }},
    };
}

}  // namespace

bool OptimizerDefinition::reads(std::string_view setting) const {
    return std::find(settings.begin(), settings.end(), setting) != settings.end();
}

const std::vector<OptimizerDefinition>& optimizer_registry() {
    static const std::vector<OptimizerDefinition> registry = make_registry();
    return registry;
}

const OptimizerDefinition* find_optimizer(std::string_view name) {
    for (const OptimizerDefinition& definition : optimizer_registry())
        if (definition.name == name) return &definition;
    return nullptr;
}

std::vector<std::string> optimizer_names() {
    std::vector<std::string> names;
    for (const OptimizerDefinition& definition : optimizer_registry()) names.push_back(definition.name);
    return names;
}

const OptimizerDefinition& optimizer_named(std::string_view name) {
    if (const OptimizerDefinition* definition = find_optimizer(name)) return *definition;
    std::string valid;
    for (const std::string& known : optimizer_names()) valid += (valid.empty() ? "" : ", ") + known;
    throw ConfigError("optimizer kind '" + std::string(name) + "' is unknown (valid kinds: " + valid + ")");
}

std::string optimizers_reading(std::string_view setting) {
    std::string names;
    for (const OptimizerDefinition& definition : optimizer_registry())
        if (definition.reads(setting)) names += (names.empty() ? "" : ", ") + definition.name;
    return names;
}

}  // namespace mpwb
