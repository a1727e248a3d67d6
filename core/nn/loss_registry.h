// The registry of losses: for each its name (a network's "loss"), the targets it reads, the op
// that computes it on each engine, and its PyTorch text. It is the one place a loss is described:
// Network::from_json checks a network's loss by it, run_loss picks the loss of a run from it for
// the trainer and both step engines, and the PyTorch export writes its text. Adding a loss: its
// CPU op (a Backend member), its CUDA kernel (core/backend/cuda/kernels.h, or DeviceLoss::None)
// and one entry in loss_registry.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/loss_targets.h"
#include "core/tensor/tensor.h"

namespace mpwb {

// The CUDA engine's kernel of a loss (core/backend/cuda/kernels.h, loss.cu). None: the CUDA
// engine has no kernel for it and refuses the run in one line, which then trains on the CPU.
enum class DeviceLoss {
    None,
    SoftmaxCrossEntropy,  // kernels::softmax_cross_entropy
    MeanSquaredError,     // kernels::mse
};

// One call of a loss's host op: outputs [rows, width] (a row is a sample, or a sample's position
// for per-position targets), their targets, and where the gradient goes.
struct LossCall {
    const float* out = nullptr;
    const float* target = nullptr;
    float* dout = nullptr;  // null: the loss only
    int64_t rows = 0, width = 0;
    int64_t rows_per_sample = 1;  // positions per sample for per-position targets
    float grad_scale = 1.0f;      // the loss scale, folded into dout
    float z_loss = 0.0f;          // the network's z-loss coefficient (entries with takes_z_loss)
};

struct LossDefinition {
    // The mean loss over the call's rows; with dout, also its gradient times grad_scale. FP32
    // whatever the policy.
    using HostOp = Backend::LossResult (*)(Backend& backend, const LossCall& call);

    std::string name;  // the network's "loss"
    std::string help;  // one line for lists of choices
    TargetKind targets;
    HostOp host;                  // the CPU engine's op
    DeviceLoss device;            // the CUDA engine's kernel
    std::string pytorch;          // the torch.nn module that computes the same loss
    std::string pytorch_outputs;  // what the trained outputs are, for the exported script's docstring
    bool takes_z_loss = false;    // a network with this loss may set "z_loss"
    // The op normalises each row of outputs with a softmax (logits in): the row's log Z is an
    // instability indicator of the output (core/nn/stability_indicators.h).
    bool softmax_rows = false;

    // The loss of a batch of outputs [n, ...] against its targets through the host op: one row
    // per sample, or per position (rows n x T of the last dimension) for per-position targets.
    // LossResult::correct counts rows (tokens for per-position targets).
    Backend::LossResult on_host(Backend& backend, const Tensor& out, const Tensor& target, float* dout,
                                float grad_scale, float z_loss = 0.0f) const;
};

// Every loss, the default first.
const std::vector<LossDefinition>& loss_registry();
// nullptr when there is no such loss.
const LossDefinition* find_loss(std::string_view name);
// The loss a network has when its description names none.
const LossDefinition& default_loss();
// "cross_entropy or mse".
std::string loss_name_list();
// The losses that take a z-loss, as loss_name_list writes them.
std::string z_loss_losses();
// Rows a batch's targets give the loss: 1 per sample, T per sample for per-position targets
// [n, T]. What accuracy and per-token figures divide by.
int64_t target_rows_per_sample(TargetKind kind, const Tensor& targets);

// The loss `name` names; NetworkError "unknown loss ..." listing the losses otherwise.
const LossDefinition& loss_named(std::string_view name);

// The loss a run trains with, the one choice both step engines and the trainer make: the loss the
// network's setting names, which must read the targets the dataset holds. ConfigError naming the
// loss, the dataset, the targets each needs and the losses that fit, otherwise.
const LossDefinition& run_loss(std::string_view loss, TargetKind targets, std::string_view dataset);

}  // namespace mpwb
