// SGD with momentum, Nesterov momentum and weight decay (L2, added to the gradient): PyTorch's
// torch.optim.SGD rule with dampening 0. Its entry in the optimizer registry
// (optimizer_registry.cpp) makes it through make_sgd.
#pragma once
#include <memory>

#include "core/optim/optimizer.h"

namespace mpwb {

std::unique_ptr<Optimizer> make_sgd(const OptimizerConfig& config);

}  // namespace mpwb
