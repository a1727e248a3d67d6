// Precision policy table.
#include "core/precision/precision_policy.h"

#include "core/common/error.h"

namespace mpwb {

std::string PrecisionPolicy::name() const { return precision_name(kind); }

PrecisionPolicy PrecisionPolicy::make(PrecisionKind kind) {
    PrecisionPolicy p;
    p.kind = kind;
    switch (kind) {
        case PrecisionKind::FP32:
            break;
        case PrecisionKind::TF32:
            p.gemm_operands = Format::TF32;
            break;
        case PrecisionKind::FP16Mixed:
            p.activations = p.weight_copy = p.weight_grads = Format::FP16;
            p.loss_scaling_by_default = true;
            break;
        case PrecisionKind::BF16Mixed:
            p.activations = p.weight_copy = p.weight_grads = Format::BF16;
            break;
        case PrecisionKind::FP16Pure:
            p.activations = p.weight_grads = p.master = Format::FP16;
            p.loss_scaling_by_default = true;
            break;
    }
    return p;
}

PrecisionPolicy PrecisionPolicy::make(PrecisionKind kind, Format weight_grads) {
    PrecisionPolicy p = make(kind);
    if (!p.reduced() && weight_grads != Format::FP32)
        throw ConfigError("weight gradient format " + format_name(weight_grads) +
                          " needs a reduced-precision policy, not " + p.name());
    p.weight_grads = weight_grads;
    return p;
}

std::string precision_name(PrecisionKind kind) {
    switch (kind) {
        case PrecisionKind::FP32:
            return "fp32";
        case PrecisionKind::TF32:
            return "tf32";
        case PrecisionKind::FP16Mixed:
            return "fp16-mixed";
        case PrecisionKind::BF16Mixed:
            return "bf16-mixed";
        case PrecisionKind::FP16Pure:
            return "fp16-pure";
    }
    return "?";
}

std::vector<std::string> precision_names() {
    return {"fp32", "tf32", "fp16-mixed", "bf16-mixed", "fp16-pure"};
}

PrecisionKind parse_precision(std::string_view name) {
    for (auto kind : {PrecisionKind::FP32, PrecisionKind::TF32, PrecisionKind::FP16Mixed,
                      PrecisionKind::BF16Mixed, PrecisionKind::FP16Pure})
        if (precision_name(kind) == name) return kind;
    throw ConfigError("unknown precision '" + std::string(name) +
                      "'; choose fp32, tf32, fp16-mixed, bf16-mixed or fp16-pure");
}

}  // namespace mpwb
