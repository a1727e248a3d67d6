// NetworkWeights out of and back into a Network (see network_weights.h).
#include "core/nn/network_weights.h"

#include <algorithm>

#include "core/common/error.h"

namespace mpwb {

namespace {

// One layer's tensors as the store names them, pointing into the layer.
struct LayerSlot {
    std::string name;
    Tensor* tensor = nullptr;
};

std::vector<LayerSlot> layer_slots(Layer& layer) {
    std::vector<LayerSlot> slots;
    for (Parameter* p : layer.parameters()) slots.push_back({p->name, &p->value});
    const auto buffers = layer.buffers();
    for (size_t i = 0; i < buffers.size(); ++i) slots.push_back({buffer_name(layer.kind(), i), buffers[i]});
    return slots;
}

}  // namespace

std::string buffer_name(const std::string& layer_kind, size_t index) {
    if (layer_kind == "BatchNorm" && index < 2) return index == 0 ? "running_mean" : "running_var";
    return "buffer" + std::to_string(index);
}

NetworkWeights network_weights(Network& network, int64_t step) {
    NetworkWeights w;
    w.step = step;
    w.input_shape = network.input_shape();
    for (size_t i = 0; i < network.size(); ++i)
        for (const LayerSlot& slot : layer_slots(network.layer(i))) {
            const auto values = slot.tensor->span();
            w.tensors.push_back({static_cast<int64_t>(i), slot.name, slot.tensor->shape(),
                                 std::vector<float>(values.begin(), values.end())});
        }
    return w;
}

void load_network_weights(Network& network, const NetworkWeights& weights) {
    size_t next = 0;
    for (size_t i = 0; i < network.size(); ++i) {
        for (const LayerSlot& slot : layer_slots(network.layer(i))) {
            const std::string where = network.layer_label(i) + " " + slot.name;
            if (next >= weights.tensors.size()) throw NetworkError("the weights end before layer " + where);
            const NamedTensor& t = weights.tensors[next++];
            if (t.layer != static_cast<int64_t>(i) || t.name != slot.name)
                throw NetworkError("the weights give layer " + std::to_string(t.layer) + " " + t.name +
                                   " where the network has layer " + where);
            if (t.shape != slot.tensor->shape() ||
                static_cast<int64_t>(t.values.size()) != slot.tensor->numel())
                throw NetworkError("layer " + where + ": the weights have shape " + shape_to_string(t.shape) +
                                   ", the network " + shape_to_string(slot.tensor->shape()));
            std::copy(t.values.begin(), t.values.end(), slot.tensor->span().begin());
        }
    }
    if (next != weights.tensors.size())
        throw NetworkError("the weights have " + std::to_string(weights.tensors.size() - next) +
                           " tensors more than the network (the first is layer " +
                           std::to_string(weights.tensors[next].layer) + " " + weights.tensors[next].name +
                           ")");
}

}  // namespace mpwb
