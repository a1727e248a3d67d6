// device_fp8_support (device_fp8_support.h): the device FP8 path's refusals, one line each.
#include "core/engine/device_fp8_support.h"

#include <cstdlib>
#include <cstring>
#include <variant>

namespace mpwb {

std::string device_fp8_support(Network& network, const ScaledRecipeConfig& recipe) {
    // Built and checked on the host, but its kernels and cuBLASLt FP8 GEMMs have not yet passed
    // `mpwb-cli selftest --backend cuda` on a GPU: until they have, a person asks for them.
    const char* opt_in = std::getenv("MPWB_CUDA_FP8");
    if (!opt_in || std::strcmp(opt_in, "1") != 0)
        return "the device FP8 path awaits its first selftest on a GPU (MPWB_CUDA_FP8=1 runs it)";
    if (recipe.recipe != ScaledRecipe::Fp8Delayed && recipe.recipe != ScaledRecipe::Fp8Current)
        return "the device engine runs the scaled recipes fp8-delayed and fp8-current only";
    if (recipe.accumulator_bits > 0)
        return "the device has no emulation of a narrow accumulator (accumulator_bits " +
               std::to_string(recipe.accumulator_bits) + ")";
    for (size_t i = 0; i < network.size(); ++i) {
        Layer& layer = network.layer(i);
        if (layer.gemms().empty()) continue;
        if (!std::holds_alternative<LinearOp>(layer.device_op()) || layer.gemms().size() != 1)
            return "layer " + network.layer_label(i) + " has GEMMs the device FP8 path does not quantize " +
                   "(it quantizes Linear layers)";
    }
    return {};
}

}  // namespace mpwb
