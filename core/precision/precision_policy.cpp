// Precision policy table: each kind's name and the format of every value it stores.
#include "core/precision/precision_policy.h"

#include "core/common/error.h"

namespace mpwb {

namespace {

struct PolicyName {
    PrecisionKind kind;
    const char* name;
    ScaledRecipe recipe;
};

constexpr PolicyName kPolicies[] = {
    {PrecisionKind::FP32, "fp32", ScaledRecipe::None},
    {PrecisionKind::TF32, "tf32", ScaledRecipe::None},
    {PrecisionKind::FP16Mixed, "fp16-mixed", ScaledRecipe::None},
    {PrecisionKind::BF16Mixed, "bf16-mixed", ScaledRecipe::None},
    {PrecisionKind::FP16Pure, "fp16-pure", ScaledRecipe::None},
    {PrecisionKind::Fp8Delayed, "fp8-delayed", ScaledRecipe::Fp8Delayed},
    {PrecisionKind::Fp8Current, "fp8-current", ScaledRecipe::Fp8Current},
    {PrecisionKind::Fp8Block, "fp8-block", ScaledRecipe::Fp8Block},
    {PrecisionKind::MxFp8, "mxfp8", ScaledRecipe::MxFp8},
    {PrecisionKind::NvFp4, "nvfp4", ScaledRecipe::NvFp4},
    {PrecisionKind::MxFp4, "mxfp4", ScaledRecipe::MxFp4},
};

const PolicyName& entry(PrecisionKind kind) {
    for (const auto& p : kPolicies)
        if (p.kind == kind) return p;
    return kPolicies[0];
}

}  // namespace

std::string PrecisionPolicy::name() const { return precision_name(kind); }

PrecisionPolicy PrecisionPolicy::make(PrecisionKind kind) {
    PrecisionPolicy p;
    p.kind = kind;
    p.recipe = entry(kind).recipe;
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
        case PrecisionKind::Fp8Delayed:
        case PrecisionKind::Fp8Current:
        case PrecisionKind::Fp8Block:
        case PrecisionKind::MxFp8:
        case PrecisionKind::NvFp4:
        case PrecisionKind::MxFp4:
            // bf16-mixed for what layers store; the GEMM operands are quantized from the FP32
            // master weight and the BF16 activations and gradients, as Transformer Engine does.
            p.activations = p.weight_grads = Format::BF16;
            break;
    }
    return p;
}

PrecisionPolicy PrecisionPolicy::make(PrecisionKind kind, Format weight_grads) {
    PrecisionPolicy p = make(kind);
    if (!p.reduced() && weight_grads != Format::FP32)
        throw ConfigError("weight gradient format " + format_name(weight_grads) +
                          " needs a reduced-precision policy, not " + p.name());
    // The MX element formats hold a value only next to a block scale: alone, E2M1 keeps 0..6.
    if (weight_grads == Format::E3M2 || weight_grads == Format::E2M3 || weight_grads == Format::E2M1)
        throw ConfigError(
            "weight gradient format " + format_name(weight_grads) +
            " is an MX element format, which needs a block scale; choose fp32, fp16, bf16, e4m3 "
            "or e5m2");
    p.weight_grads = weight_grads;
    return p;
}

std::string precision_name(PrecisionKind kind) { return entry(kind).name; }

std::vector<std::string> precision_names() {
    std::vector<std::string> names;
    for (const auto& p : kPolicies) names.push_back(p.name);
    return names;
}

std::vector<PrecisionKind> precision_kinds() {
    std::vector<PrecisionKind> kinds;
    for (const auto& p : kPolicies) kinds.push_back(p.kind);
    return kinds;
}

PrecisionKind parse_precision(std::string_view name) {
    for (const auto& p : kPolicies)
        if (p.name == name) return p.kind;
    std::string list;
    for (size_t i = 0; i < std::size(kPolicies); ++i)
        list += (i == 0                          ? ""
                 : i + 1 == std::size(kPolicies) ? " or "
                                                 : ", ") +
                std::string(kPolicies[i].name);
    throw ConfigError("unknown precision '" + std::string(name) + "'; choose " + list);
}

}  // namespace mpwb
