// DeviceStep: a training step that lives on an accelerator. The CPU trainer calls the Backend op
// by op on host memory; a GPU would spend its time waiting for those calls, so a backend that
// can keep a whole step on its device offers a DeviceStep instead: the dataset and the weights
// are uploaded once, every step (batch gather, forward, loss, backward, unscale + non-finite
// check, the loss scaler's decision, the fused optimizer) is enqueued without a host
// synchronisation — and can be replayed as a CUDA graph — and what the host needs to know comes
// back as StepRecords, read asynchronously every few steps.
//
// Gradient statistics are not taken on the device: on a statistics step the Trainer runs the
// same batch through the CPU engine with the device's weights (synchronising once every K
// steps), because the histograms must see the scaled FP32 values before they are rounded, which
// a real FP16 GEMM never writes to memory.
//
// The device decides, the host narrates: the Trainer replays each record's overflow flag through
// its own LossScaler, which produces the events and counters the observers see, and checks that
// the device took the same decision (a mismatch is a bug and fails the run loudly).
//
// No CUDA types here: core/train sees only this interface; core/backend/cuda implements it.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/data/dataset.h"
#include "core/nn/network.h"
#include "core/optim/optimizer.h"
#include "core/precision/loss_scaler.h"
#include "core/precision/precision_policy.h"

namespace mpwb {

struct DeviceStepConfig {
    PrecisionPolicy policy;
    OptimizerConfig optimizer;
    float clip_norm = 0.0f;
    // The learning rate of every optimizer iteration (the schedule, sampled once); the device
    // indexes it with its own iteration counter, so skipped steps move the schedule exactly as
    // the scaler's count_skipped_steps says without asking the host.
    std::vector<float> lr_by_iteration;
    int64_t batch_size = 0;
    int64_t eval_batch = 0;
    uint64_t seed = 0;           // dropout masks
    bool use_graphs = true;      // capture each batch size's step once and replay it
};

// One step as the device recorded it.
struct DeviceStepResult {
    int64_t step = 0;
    double loss = 0;
    int64_t correct = 0;
    float scale_used = 1;
    bool nonfinite = false;
    int first_nonfinite_parameter = -1;  // index into Network::parameters(), -1 for none / the loss
    bool applied = true;
    float grad_norm = 0;
    float lr = 0;
    double seconds = 0;  // the step's share of the device time between two read-backs
};

class DeviceStep {
public:
    virtual ~DeviceStep() = default;

    // Once, before the first step: the splits as FP32 (labels as stored in the Dataset), and
    // the network's initial weights (masters, reduced copies, BatchNorm running statistics).
    virtual void upload(const Dataset& data, Network& network) = 0;
    // The current weights back into the network's host tensors (for evaluation elsewhere, the
    // decision boundary, export). Synchronises.
    virtual void download(Network& network) = 0;

    // The sample order of an epoch (indices into the train split), before its first step.
    virtual void set_epoch_order(std::span<const int64_t> order) = 0;
    // The scaler as the host's LossScaler holds it now, after the host applied a live change or
    // took a retry decision. Only called when the host is in step with the device (no step in
    // flight whose record it has not replayed).
    virtual void set_scaler(const LossScalerConfig& config, const LossScaler& state) = 0;

    // Enqueues step `step` on the batch order[batch_offset, batch_offset + batch_size). May
    // block while too many steps are in flight for the record ring.
    virtual void launch(int64_t step, int64_t batch_offset, int64_t batch_size, float lr_scale) = 0;
    // Appends the records that have arrived, oldest first; wait: until every launched step has.
    virtual void collect(std::vector<DeviceStepResult>& out, bool wait) = 0;

    // Test loss and accuracy with the current device weights (synchronises).
    virtual Backend::LossResult evaluate(const Dataset& data) = 0;
    // "cuda graphs, 16-step read-back" and the like, for logs.
    virtual std::string description() const = 0;
};

// What a backend that keeps steps on its device offers (Backend::device_steps()).
class DeviceStepFactory {
public:
    virtual ~DeviceStepFactory() = default;
    // A step for this network, built (shapes fixed) for the config. Throws NetworkError naming a
    // layer the device cannot run, DeviceOutOfMemory naming the size when the plan does not fit.
    virtual std::unique_ptr<DeviceStep> make_device_step(Network& network, const DeviceStepConfig& config) = 0;
};

}  // namespace mpwb
