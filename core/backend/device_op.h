// DeviceOp: what a layer runs as on a device engine (the CUDA step), as plain values: the op and
// the sizes and settings its launches need. Each layer kind gives its own (Layer::device_op), or
// says it has none (NoDeviceOp); the CUDA plan reads it and never looks at the layer's class, so
// a new kind that maps onto an existing op needs nothing in core/backend/cuda. Geometries come
// with batch 0: the engine fills in each call's batch. No CUDA types.
#pragma once
#include <cstdint>
#include <variant>

#include "core/backend/backend.h"

namespace mpwb {

// No device engine runs this kind: a network holding it trains on the host engine.
struct NoDeviceOp {};

// y = x Wᵀ (+ b) with the layer's parameters [weight, bias]; the sizes are its shapes'.
struct LinearOp {
    bool bias = true;
};

// Convolution with the layer's parameters [weight, bias].
struct Conv2dOp {
    ConvGeometry geometry;
};

struct PoolOp {
    enum class Mode : uint8_t { Max, Average };
    Mode mode = Mode::Max;
    PoolGeometry geometry;
};

// An entry of the activation table (core/backend/activations.h).
struct ActivationOp {
    Activation activation = Activation::ReLU;
    float slope = 0;  // for an entry with has_slope
};

// The output is the input's memory under another shape (Flatten): nothing runs.
struct ReshapeOp {};

struct DropoutOp {
    float p = 0;  // drop probability
};

// Batch normalisation with the layer's parameters [gamma, beta] and buffers [running mean,
// running variance].
struct BatchNormOp {
    float momentum = 0;
    float eps = 0;
};

using DeviceOp =
    std::variant<NoDeviceOp, LinearOp, Conv2dOp, PoolOp, ActivationOp, ReshapeOp, DropoutOp, BatchNormOp>;

}  // namespace mpwb
