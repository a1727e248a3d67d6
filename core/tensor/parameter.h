// A trainable parameter as the optimizer and the precision policy see it.
#pragma once
#include <string>

#include "core/tensor/tensor.h"

namespace mpwb {

struct Parameter {
    std::string name;  // "<layer index>.<kind>", e.g. "3.weight"
    // FP32 master weight. Under fp16-pure there is no master: the value itself is kept rounded
    // to FP16 after every update, which is how small updates vanish.
    Tensor value;
    // The gradient as backward stores it: scaled by the loss scale, in the gradient format.
    Tensor grad;
    // The copy forward and backward read, rounded to the compute format each step.
    // Empty under FP32/TF32, where the layers read `value` directly.
    Tensor compute;
    bool weight_decay = true;  // false for biases and normalisation parameters
    // A normalisation gain or bias inside a layer that runs in reduced precision (a transformer
    // block's norms): keeps FP32 like a norm layer's parameters, following the autocast rule.
    bool keeps_fp32 = false;

    const Tensor& forward_value() const { return compute.empty() ? value : compute; }
};

}  // namespace mpwb
