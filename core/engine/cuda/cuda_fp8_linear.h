// The CUDA engine's per-tensor FP8 state (fp8-delayed, fp8-current; DESIGN.md, "Scaled
// low-precision formats"), used by CudaStepEngine's Linear launches in cuda_fp8_linear.cpp.
//
// As the CPU's GemmQuantizer: each Linear quantizes x and w once in its forward pass and dy once
// in its backward pass, each with one FP32 scale per tensor (E4M3 for x and w, E5M2 for dy under
// HYBRID); x's copy serves the weight gradient again and w's the data gradient. The scale of each
// tensor, its amax history and the step's amax live on the device (Fp8TensorState, one ring of
// history_len floats each): a step's graph begins every state (the delayed scale from the
// history), merges each tensor's amax as it is quantized (the current scale from it), and ends
// every state after the backward pass, on every attempt as GemmQuantizer::end_step does.
//
// The three GEMMs run on the FP8 tensor cores (Fp8Gemm, TN: the forward pass also writes x's and
// w's transposed bytes, the backward pass dy's) when every one of a layer's shapes at that batch
// size is one Hopper's FP8 kernels take; otherwise that layer runs the same quantized values in
// BF16 on the BF16 tensor cores into FP32 and dequantizes after (re-quantizing x and w in the
// backward pass with the step's scales, which gives the same bytes).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/backend/cuda/fp8_gemm.h"
#include "core/backend/cuda/fp8_math.h"
#include "core/precision/scaled_recipe_config.h"

namespace mpwb::cuda {

// One Linear's part.
struct Fp8LinearState {
    bool active = false;
    int32_t first_state = 0;         // its x; w and dy follow
    uint8_t* x_t = nullptr;          // x's bytes transposed, [in, batch]: the weight gradient's operand
    uint8_t* w_t = nullptr;          // w's bytes transposed, [in, out]: the data gradient's operand
    std::map<int64_t, bool> on_fp8;  // by batch size: all three GEMMs on the FP8 tensor cores
};

// The engine's part: the rule, every tensor's state and ring, the GEMM, shared scratch.
struct Fp8EngineState {
    bool enabled = false;
    Fp8Rule rule;
    Fp8Rule* rule_device = nullptr;
    Fp8TensorState* states = nullptr;
    float* rings = nullptr;
    uint32_t* amax = nullptr;  // one per state: the amax kernels' target
    int count = 0;
    std::unique_ptr<Fp8Gemm> gemm;
    Fp8Element dy_element = Fp8Element::E5M2;
    // Within one layer's pass: the row-major bytes of x, w, dy and dy's transpose; the quantized
    // values in BF16 and the FP32 product for the BF16 path.
    uint8_t* x_q = nullptr;
    uint8_t* w_q = nullptr;
    uint8_t* dy_q = nullptr;
    uint8_t* dy_t = nullptr;
    uint16_t* x_v = nullptr;
    uint16_t* w_v = nullptr;
    uint16_t* dy_v = nullptr;
    float* acc = nullptr;
    // The layers whose shapes at the training batch size Hopper's FP8 GEMMs refuse, and why, for
    // the engine's description; empty when every Linear runs on the FP8 tensor cores.
    std::string bf16_layers;
};

// The device rule of a per-tensor recipe.
Fp8Rule fp8_rule(const ScaledRecipeConfig& recipe);

}  // namespace mpwb::cuda
