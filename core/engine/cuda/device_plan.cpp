// The CUDA step's layer plan (device_plan.h), on the host.
#include "core/engine/cuda/device_plan.h"

#include "core/common/error.h"

namespace mpwb::cuda {
namespace {

// ReLU straight after a Linear with a bias runs with the bias add: in the GEMM's epilogue where
// cuBLASLt offers it, else in the own bias kernel (the engine decides per batch size).
void fold_relus_into_linears(std::vector<PlannedLayer>& layers) {
    for (size_t i = 0; i + 1 < layers.size(); ++i) {
        const auto* linear = std::get_if<LinearOp>(&layers[i].op);
        const auto* next = std::get_if<ActivationOp>(&layers[i + 1].op);
        if (!linear || !linear->bias || !next || next->activation != Activation::ReLU) continue;
        layers[i].fused_relu = true;
        layers[i + 1].folded = true;
    }
}

}  // namespace

std::vector<PlannedLayer> plan_device_layers(Network& network) {
    if (const std::string missing = network.missing_device_op(); !missing.empty())
        throw NetworkError(missing);
    std::vector<PlannedLayer> layers;
    Shape in = network.input_shape();
    for (size_t i = 0; i < network.size(); ++i) {
        const Layer& layer = network.layer(i);
        PlannedLayer L;
        L.op = layer.device_op();
        L.label = network.layer_label(i);
        L.reduced = layer.runs_in_reduced_precision();
        L.in_shape = in;
        L.out_shape = layer.plan(in).output;
        L.in_features = checked_product(L.in_shape).value_or(kInt64Max);
        L.out_features = checked_product(L.out_shape).value_or(kInt64Max);
        in = L.out_shape;
        layers.push_back(std::move(L));
    }
    fold_relus_into_linears(layers);
    return layers;
}

}  // namespace mpwb::cuda
