// Adam (weight decay as L2, added to the gradient: torch.optim.Adam) and AdamW (decoupled weight
// decay, the weight shrunk by lr * weight_decay before the update: torch.optim.AdamW), with
// PyTorch's bias corrections. Their entries in the optimizer registry (optimizer_registry.cpp)
// make them through make_adam and make_adamw.
#pragma once
#include <memory>

#include "core/optim/optimizer.h"

namespace mpwb {

std::unique_ptr<Optimizer> make_adam(const OptimizerConfig& config);
std::unique_ptr<Optimizer> make_adamw(const OptimizerConfig& config);

}  // namespace mpwb
