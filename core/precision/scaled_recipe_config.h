// ScaledRecipeConfig: the settings of the scaled low-precision recipes (FP8 with per-tensor
// delayed or current scaling, DeepSeek-V3's block scaling, OCP MXFP8 and MXFP4, NVFP4), and the one table
// of them (scaled_recipe_fields()) that the JSON reader and writer, validation, the GUI's recipe
// form and mpwb-cli's flags all read. The rules themselves are in ../shared/DESIGN.md, "Scaled
// low-precision formats"; the quantizers that apply them are in gemm_quantizer.h.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/precision/setting_field.h"

namespace mpwb {

// Which recipe a policy runs; None for the policies without scaled operands (fp32 ... fp16-pure).
// MxFp4 comes last so that the values of the others stay what they were.
enum class ScaledRecipe : uint8_t { None, Fp8Delayed, Fp8Current, Fp8Block, MxFp8, NvFp4, MxFp4 };

// How fp8-delayed reduces its amax history to the amax a scale is computed from.
enum class AmaxAlgorithm : uint8_t { Max, MostRecent };
// FP8 element formats of the per-tensor recipes: HYBRID is E4M3 for x and w, E5M2 for dy.
enum class Fp8Format : uint8_t { Hybrid, E4M3 };
// MXFP8 elements.
enum class MxElement : uint8_t { E4M3, E5M2 };
// How MXFP8 turns a block's amax into its E8M0 scale. Floor: the OCP spec,
// 2^(floor(log2 amax) - emax_elem), so a block maximum can clip. RCeil: the smallest power of two
// with amax / scale <= the element maximum (cuBLAS, Transformer Engine).
enum class MxScaleRounding : uint8_t { Floor, RCeil };
// The signs of the 16-point Hadamard transform (nvfp4, mxfp4). Random: 16 signs drawn once per
// run and layer from the run's seed (Transformer Engine's random Hadamard transform). Fixed: all
// +1, the plain normalised H16, the same for every layer and run.
enum class HadamardSigns : uint8_t { Random, Fixed };
// How nvfp4's 4-over-6 block scaling measures a candidate's error over its block: the sum of
// squared errors (the paper's default) or of absolute errors (Transformer Engine's default).
enum class FourOverSixError : uint8_t { Mse, Mae };

template <>
std::span<const SettingChoice> setting_choices<AmaxAlgorithm>();
template <>
std::span<const SettingChoice> setting_choices<Fp8Format>();
template <>
std::span<const SettingChoice> setting_choices<MxElement>();
template <>
std::span<const SettingChoice> setting_choices<MxScaleRounding>();
template <>
std::span<const SettingChoice> setting_choices<HadamardSigns>();
template <>
std::span<const SettingChoice> setting_choices<FourOverSixError>();

struct ScaledRecipeConfig {
    // Set from the precision policy, not a setting of its own (never in JSON).
    ScaledRecipe recipe = ScaledRecipe::None;

    // fp8-delayed
    int64_t amax_history_len = 1024;
    AmaxAlgorithm amax_algorithm = AmaxAlgorithm::Max;
    // fp8-delayed and fp8-current
    int margin = 0;  // scale = FP8_MAX / amax / 2^margin
    Fp8Format fp8_format = Fp8Format::Hybrid;
    // fp8-delayed and fp8-current: > 0 replaces every per-tensor scale by this constant (1 shows
    // what FP8 does with no scaling at all: E4M3 gradients underflow).
    double fixed_scale = 0.0;
    // fp8-block: round every block scale down to a power of two (DeepSeek-V3 option).
    bool power_of_two_scales = false;
    // mxfp8 (the element format of mxfp4 is E2M1, always)
    MxElement mx_element = MxElement::E4M3;
    // mxfp8 and mxfp4
    MxScaleRounding mx_scale_rounding = MxScaleRounding::RCeil;
    // nvfp4 and mxfp4: stochastic rounding of the output gradient dy (both of its GEMMs), seeded
    // by the run's seed, the step, the layer and the element's index, so a run repeats exactly.
    bool stochastic_rounding = true;
    // nvfp4 and mxfp4: a 16x16 Hadamard transform on both inputs of the weight-gradient GEMM,
    // along the summed (batch) dimension, with random (seeded) or fixed signs.
    bool hadamard = true;
    HadamardSigns hadamard_signs = HadamardSigns::Random;
    // nvfp4: "4 over 6" (arXiv 2512.02010): each block is quantized twice, its maximum mapped to 6
    // and to 4 (block scale 1.5 times larger), and keeps the one with the lower error; the
    // per-tensor scale leaves room for that with 256 in place of E4M3's 448.
    bool nvfp4_4over6 = false;
    FourOverSixError nvfp4_4over6_error = FourOverSixError::Mse;
    // Every scaled recipe: the GEMM's partial sums keep this many mantissa bits and are promoted
    // into an FP32 accumulator every accumulator_interval products (Hopper FP8 tensor cores,
    // DeepSeek-V3 §3.3.2). 0: exact FP32 accumulation.
    int accumulator_bits = 0;
    int64_t accumulator_interval = 128;
    // Every scaled recipe: a transformer block's attention products (Q·Kᵀ and P·V) quantize Q,
    // K, V, P and the gradients dS and dO per tensor with current scaling (FP8), as Transformer
    // Engine's FP8 attention does; off, they stay BF16 (DESIGN.md, "Sequences and transformers").
    bool fp8_attention = false;

    // Every setting of this recipe out of range, each naming its field. Empty when valid.
    std::vector<ConfigIssue> issues() const;
    // Throws RecipeConfigError carrying the first issue.
    void validate() const;
    bool operator==(const ScaledRecipeConfig&) const = default;
};

// The ConfigError of a refused recipe configuration; what() is "recipe: " + the message.
class RecipeConfigError : public ConfigError {
public:
    explicit RecipeConfigError(ConfigIssue issue);
    const ConfigIssue& issue() const { return issue_; }

private:
    ConfigIssue issue_;
};

using RecipeField = SettingField<ScaledRecipeConfig>;
// Every setting, in the order the form shows them; applies() says which recipe uses it.
std::span<const RecipeField> scaled_recipe_fields();

// "fp8-delayed" ...; "" for None.
const char* scaled_recipe_name(ScaledRecipe recipe);
// One line for the precision panel: what the recipe scales and with what.
const char* scaled_recipe_summary(ScaledRecipe recipe);

// JSON with the fields that apply to config.recipe. Reading accepts a partial object (missing
// keys keep base's values), rejects unknown keys and wrong types with a ConfigError naming the key
// path ("recipe.margin"), and validates the result. A key of a field that does not apply to the
// recipe is accepted and kept (a configuration can be switched between recipes).
nlohmann::json scaled_recipe_config_to_json(const ScaledRecipeConfig& config);
ScaledRecipeConfig scaled_recipe_config_from_json(const nlohmann::json& json, ScaledRecipeConfig base = {},
                                                  std::string_view where = "recipe");

// The fields whose values differ, as {"field": {"from": a, "to": b}} (the live-change event).
nlohmann::json scaled_recipe_changes(const ScaledRecipeConfig& from, const ScaledRecipeConfig& to);

}  // namespace mpwb
