// NetworkWeights: a trained network's values as plain named tensors (FP32, our layouts), taken
// from a Network and put back into one. The trainer hands them to its observers when a run ends
// (TrainingObserver::on_final_weights), the run store keeps them (schema 8, final_weights), and
// the exporters (safetensors_file.h, pytorch_script.h) read them, so no piece past the trainer
// needs a live Network to see what a run learnt.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/network.h"

namespace mpwb {

struct NamedTensor {
    int64_t layer = 0;  // index of the layer that owns it
    std::string name;   // the layer's own name: "weight", "bias", "gamma", "beta", "running_mean", ...
    Shape shape;        // our layout (Linear [out, in], Conv2d [out, in, k, k])
    std::vector<float> values;  // shape_numel(shape) values, row-major
};

struct NetworkWeights {
    int64_t step = 0;   // steps the run had completed when they were taken
    Shape input_shape;  // the per-sample input the network was built for
    // Every parameter's FP32 master (under fp16-pure the FP16-rounded value itself), then the
    // layer's buffers, layer by layer, in the network's order.
    std::vector<NamedTensor> tensors;
};

// The names a layer kind gives its buffers (BatchNorm: running_mean, running_var); "buffer<i>"
// for a kind that has not named them.
std::string buffer_name(const std::string& layer_kind, size_t index);

// The built network's values, in the order above.
NetworkWeights network_weights(Network& network, int64_t step);

// Writes `weights` into a network built for the same input: every tensor must name a parameter
// or buffer of the layer it says, with the same shape, and every parameter and buffer must be
// given. NetworkError naming the layer and the tensor otherwise. Leaves reduced copies alone: the
// caller applies its precision policy (Network::prepare_weights) when it needs them.
void load_network_weights(Network& network, const NetworkWeights& weights);

}  // namespace mpwb
