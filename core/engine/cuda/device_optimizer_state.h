// The optimizer state of the CUDA step engine in the checkpoint's format. The device keeps, per
// parameter, the fused rule's buffers as flat FP32 arrays (SGD's momentum, Adam's two moments)
// and counts the updates once for all parameters (the loss scaler's applied steps, which Adam's
// bias corrections and SGD's first momentum step read); a checkpoint holds the CPU optimizer's
// state (Optimizer::save_state: per parameter its update count and buffers). The conversion goes
// through an optimizer of the run's kind, so the bytes are the CPU engine's own and every check of
// Optimizer::load_state applies: a checkpoint of a CUDA run resumes on the CPU and the other way.
// Plain C++ (no CUDA types), so it is tested on the host (tests/backend/test_device_optimizer_state).
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/optim/optimizer.h"

namespace mpwb::cuda {

// Which buffers the device rule of `config` keeps per parameter (CudaStepEngine allocates them):
// SGD with momentum its momentum as `first`, Adam and AdamW their moments as `first` and `second`.
struct DeviceOptimizerBuffers {
    bool first = false;
    bool second = false;
};
DeviceOptimizerBuffers device_optimizer_buffers(const OptimizerConfig& config);

struct DeviceOptimizerState {
    int64_t updates = 0;  // of every parameter: the loss scaler's applied steps
    // Per parameter, in Network::parameters() order: one value per element where the rule keeps
    // the buffer (zeros before the first update), empty where it keeps none.
    std::vector<std::vector<float>> first, second;
};

// Names a parameter by its index for error messages ("parameter 2 (layer 1 weight)").
using ParameterName = std::function<std::string(size_t)>;

// Optimizer::save_state's bytes for the device's state: what a CPU optimizer of the same kind
// holds after `updates` updates of every parameter (no state at all before the first). Throws
// DataError naming the parameter and the numbers for buffers that do not fit `params` or hold
// values no update leaves (a non-finite moment), as Optimizer::load_state would refuse them.
std::vector<uint8_t> encode_device_optimizer_state(const OptimizerConfig& config,
                                                   std::span<Parameter* const> params,
                                                   const DeviceOptimizerState& state,
                                                   const ParameterName& name = {});

// The reverse: the blob is checked by Optimizer::load_state against `params` (signature, kind,
// parameter count before anything is sized, buffer sizes, values), then against what the device
// keeps: every parameter counts the same updates, and the rule's buffers are there after the
// first update (a CPU run's SGD momentum that was switched on after its first update is not).
// Buffers the device rule does not keep are dropped (SGD's momentum under momentum 0, which the
// update never reads). Throws DataError naming the parameter and the numbers.
DeviceOptimizerState decode_device_optimizer_state(const OptimizerConfig& config,
                                                   std::span<const uint8_t> blob,
                                                   std::span<Parameter* const> params,
                                                   const ParameterName& name = {});

}  // namespace mpwb::cuda
