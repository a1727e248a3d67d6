// The CUDA step's plan of a network's layers, worked out on the host from what each layer says
// it runs as (Layer::device_op): per-sample shapes and sizes, which layers compute in the
// policy's reduced precision, and the ReLUs that run in the epilogue of the Linear before them.
// A network with a layer that has no device op is refused here, with Network::missing_device_op's
// one line. No CUDA types: the engine (cuda_step_engine.h) adds the device buffers, and
// tests/backend/test_device_plan builds this unit on its own and runs it without a GPU.
#pragma once
#include <string>
#include <vector>

#include "core/backend/device_op.h"
#include "core/nn/network.h"

namespace mpwb::cuda {

struct PlannedLayer {
    DeviceOp op;
    std::string label;          // "3 Linear"
    bool reduced = false;       // computes in the reduced format (Layer::runs_in_reduced_precision)
    Shape in_shape, out_shape;  // per sample
    int64_t in_features = 0, out_features = 0;
    bool fused_relu = false;  // Linear whose ReLU (the next layer) runs in its GEMM epilogue
    bool folded = false;      // ReLU folded into the previous Linear: nothing to run
};

// One PlannedLayer per layer of the built network; NetworkError when a layer has no device op.
std::vector<PlannedLayer> plan_device_layers(Network& network);

}  // namespace mpwb::cuda
