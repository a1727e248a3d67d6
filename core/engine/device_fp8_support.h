// Whether a device engine runs a network under a scaled recipe itself: today per-tensor FP8
// (fp8-delayed, fp8-current) on the CUDA engine's FP8 tensor cores, for networks whose every GEMM
// layer is a Linear (core/engine/cuda/cuda_fp8_linear.cpp). The Trainer asks before choosing the
// engine, and the CUDA engine asks again before planning; a refused run trains on the host
// engine, with this reason in its device text. No CUDA types: it reads the network and the
// recipe only. Until the device path has passed its selftest on a GPU it runs only when the
// environment has MPWB_CUDA_FP8=1 (tests/gpu/device_check.sh sets it).
#pragma once
#include <string>

#include "core/nn/network.h"
#include "core/precision/scaled_recipe_config.h"

namespace mpwb {

// Empty when the device runs `recipe` on `network` (built); else one line saying why not, e.g.
// "the device runs fp8-delayed and fp8-current; mxfp8 runs on the host engine".
std::string device_fp8_support(Network& network, const ScaledRecipeConfig& recipe);

}  // namespace mpwb
