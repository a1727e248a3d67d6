// GemmPrecisionPlan: precision rules (core/precision/precision_rules.h) resolved against a
// network's GEMMs — the recipe each GEMM's forward, data-gradient and weight-gradient passes run
// in. The Network builds its quantizers from it, the run stores it (the "gemm_precisions" event),
// and `runs show`, the report and the network editor's Precision column show it.
#pragma once
#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/nn/layer.h"
#include "core/precision/gemm_quantizers.h"
#include "core/precision/precision_policy.h"
#include "core/precision/precision_rules.h"

namespace mpwb {

struct GemmPrecision {
    size_t layer = 0;
    size_t gemm = 0;    // index into the layer's gemms()
    std::string label;  // what rules match: "3" for a layer's one GEMM, "3.attn.qkv" for a named one
    bool attention_product = false;  // Q·Kᵀ or P·V: follows the recipe's fp8_attention, never a rule
    // By GemmPass. ScaledRecipe::None: unquantized, in the run's storage format.
    std::array<PassRecipe, 3> passes{};
};

struct GemmPrecisionPlan {
    std::vector<GemmPrecision> gemms;
    // The run's recipe (None for a policy without one) and storage, for labels.
    PrecisionPolicy policy;

    // The plan's entry for a layer's GEMM; null when there is none.
    const GemmPrecision* find(size_t layer, size_t gemm) const;
    // True when some pass of some GEMM runs in something other than the run's own precision.
    bool departs_from_run() const;
    // True when some pass quantizes its operands.
    bool quantizes() const;
    // "mxfp8"; "bf16" for an unquantized pass of a run that stores BF16 (bf16-mixed, the scaled
    // recipes), else the run's precision ("fp32"): what a pass runs in, as tables show it.
    std::string pass_label(PassRecipe recipe) const;
};

// The settings a GEMM's quantizer runs with under the run's recipe: the run's, except for the
// attention products, which get none (BF16 operands) unless fp8_attention is on, and then
// per-tensor current scaling (fp8-current with the run's FP8 settings).
std::optional<ScaledRecipeConfig> recipe_for_gemm(const ScaledRecipeConfig& run, const NamedGemm& gemm);

// The label rules match for a layer's GEMM.
std::string gemm_rule_label(size_t layer, const std::string& gemm_name);

// The plan of a network whose layers have these GEMMs (Network::gemms of each layer) under the
// policy. ConfigError naming the rule for a rule that matches no GEMM, and for "bf16" in a run
// whose storage is not BF16 (its operands are stored in another format).
GemmPrecisionPlan resolve_gemm_precisions(const std::vector<std::vector<NamedGemm>>& gemms,
                                          const PrecisionRules& rules, const PrecisionPolicy& policy,
                                          bool fp8_attention);

// The settings each pass of the GEMM quantizes with: `settings` with the pass's recipe; an
// attention product follows recipe_for_gemm under the run's recipe (fp8_attention may change live).
PassRecipes pass_recipes_of(const GemmPrecision& gemm, const NamedGemm& named,
                            const ScaledRecipeConfig& settings, ScaledRecipe run_recipe);

// [{"gemm": "3.attn.qkv", "fprop": "mxfp8", "dgrad": "mxfp8", "wgrad": "bf16"}, ...] with
// pass_label's names, and its reader for stored runs (DataError-free: a malformed entry is
// skipped by the reader, which only displays).
nlohmann::json to_json(const GemmPrecisionPlan& plan);

}  // namespace mpwb
