// Precision policies, like Apex's opt levels: which format each stored value has.
// The autocast rule: GEMM and convolution read and write the reduced format; softmax, losses,
// reductions and normalisation statistics are FP32; mixed policies keep FP32 master weights and
// update in FP32. fp16-pure keeps no master copy, the failure the mixed-precision paper shows.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/numeric/format.h"
#include "core/precision/scaled_recipe_config.h"

namespace mpwb {

// The scaled recipes (Fp8Delayed ... MxFp4) follow bf16-mixed for every value a layer stores and
// quantize the operands of each GEMM and convolution by their recipe (scaled_recipe_config.h).
enum class PrecisionKind {
    FP32,
    TF32,
    FP16Mixed,
    BF16Mixed,
    FP16Pure,
    Fp8Delayed,
    Fp8Current,
    Fp8Block,
    MxFp8,
    NvFp4,
    MxFp4  // last, so that the kinds before it keep their values
};

struct PrecisionPolicy {
    PrecisionKind kind = PrecisionKind::FP32;
    Format gemm_operands = Format::FP32;       // rounding applied inside GEMM/conv (TF32 only)
    Format activations = Format::FP32;         // activations and activation gradients as stored
    Format weight_copy = Format::FP32;         // the weight copy forward reads (FP32 = none)
    Format weight_grads = Format::FP32;        // weight gradients as stored
    Format master = Format::FP32;              // master weights (FP16 under fp16-pure)
    bool loss_scaling_by_default = false;      // FP16 policies need a loss scale; BF16 has FP32's range
    ScaledRecipe recipe = ScaledRecipe::None;  // quantized GEMM operands, per scaled_recipe_config.h
    // A transformer's residual stream (a block's output and its gradient) stays FP32 instead of
    // the activation format (Megatron's fp32_residual_connection). Not part of the policy's
    // kind: TrainConfig::fp32_residual sets it.
    bool fp32_residual = false;

    bool reduced() const { return activations != Format::FP32; }
    bool scaled() const { return recipe != ScaledRecipe::None; }
    std::string name() const;

    // weight_grads defaults to the activation format, as PyTorch AMP stores them; FP32 is the
    // option that trades memory for range.
    static PrecisionPolicy make(PrecisionKind kind);
    static PrecisionPolicy make(PrecisionKind kind, Format weight_grads);
};

// "fp32", "tf32", "fp16-mixed", "bf16-mixed", "fp16-pure", "fp8-delayed", "fp8-current",
// "fp8-block", "mxfp8", "nvfp4", "mxfp4"; ConfigError names a bad value.
PrecisionKind parse_precision(std::string_view name);
std::string precision_name(PrecisionKind kind);
std::vector<std::string> precision_names();
// Every kind, in the order of precision_names().
std::vector<PrecisionKind> precision_kinds();

}  // namespace mpwb
