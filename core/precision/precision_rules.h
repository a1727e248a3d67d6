// Precision rules: which policy or recipe each GEMM of a network runs in, separately for its
// forward (fprop), data-gradient (dgrad) and weight-gradient (wgrad) GEMMs, as Transformer
// Engine's CustomRecipe quantizer roles and backward_override do (DESIGN.md, "Precision per layer
// and what-if statistics").
//
// A rule names GEMMs by a glob over their labels — "0" for layer 0's one GEMM, "3.attn.qkv" for a
// named GEMM of a block — and gives any of the three passes "bf16" (operands unquantized, as the
// run stores them) or a scaled recipe ("fp8-delayed" ... "nvfp4"). Each pass is decided by the
// first rule that matches the GEMM and names that pass; then by the shortcuts (keep the first and
// last GEMM layers in BF16; the backward passes in BF16); then by the run's precision. A recipe
// takes its settings from the run's recipe settings (TrainConfig::recipe). The resolution
// against a network is core/nn/gemm_precision_plan.h.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/precision/gemm_quantizer.h"
#include "core/precision/scaled_recipe_config.h"

namespace mpwb {

// A pass's precision as a rule gives it: ScaledRecipe::None is "bf16" (no quantization).
using PassRecipe = ScaledRecipe;

struct PrecisionRule {
    std::string match;  // a glob: '*' any run of characters, '?' one character
    // By GemmPass (Forward, DataGrad, WeightGrad); empty: this rule leaves the pass to the next.
    std::array<std::optional<PassRecipe>, 3> passes;
    bool operator==(const PrecisionRule&) const = default;
};

struct PrecisionRules {
    std::vector<PrecisionRule> rules;
    // Every GEMM of the first and of the last layer that has GEMMs, all passes in BF16 (the
    // NVFP4 pretraining recipe; torchtitan keeps the output layer out of low precision).
    bool keep_ends_bf16 = false;
    // dgrad and wgrad of every GEMM in BF16 (Transformer Engine's backward_override).
    bool backward_bf16 = false;

    bool empty() const { return rules.empty() && !keep_ends_bf16 && !backward_bf16; }
    bool operator==(const PrecisionRules&) const = default;
};

// A rules file or setting may hold at most this many rules (hostile input).
inline constexpr size_t kMaxPrecisionRules = 256;
inline constexpr size_t kMaxRuleMatchLength = 256;

// "fprop", "dgrad", "wgrad".
const char* gemm_pass_name(GemmPass pass);
// "bf16" for None, else the recipe's name.
std::string pass_recipe_name(PassRecipe recipe);
// "bf16" or a scaled recipe's name; ConfigError naming `where` and the choices otherwise.
PassRecipe parse_pass_recipe(std::string_view name, std::string_view where);
// The scaled recipes, in precision_names() order.
std::vector<ScaledRecipe> scaled_recipes();

// Glob match of a whole label: '*' matches any run of characters (dots included), '?' one.
bool glob_match(std::string_view pattern, std::string_view text);

// {"match": "*.attn.*", "fprop": "mxfp8", "dgrad": "mxfp8", "wgrad": "bf16"}; also "all" for
// the three passes at once. ConfigError naming `where` ("precision_rules[2].wgrad").
PrecisionRule precision_rule_from_json(const nlohmann::json& j, std::string_view where);
nlohmann::json to_json(const PrecisionRule& rule);
// The command line's form: a JSON object, or "GLOB=RECIPE" (all passes), or
// "GLOB=fprop:RECIPE,wgrad:RECIPE" (the passes named).
PrecisionRule parse_precision_rule(std::string_view text);

// Reads "precision_rules" (an array), "keep_ends_bf16" and "backward_bf16" of a training
// settings object into rules (keys absent keep their values).
void read_precision_rules(const nlohmann::json& settings, PrecisionRules& rules);
// Writes the same keys, only those that differ from the default.
void write_precision_rules(const PrecisionRules& rules, nlohmann::json& settings);

// The what-if recipes (DESIGN.md): read from "what_if" (an array of recipe names, no repeats).
std::vector<ScaledRecipe> what_if_from_json(const nlohmann::json& j, std::string_view where);
nlohmann::json what_if_to_json(const std::vector<ScaledRecipe>& recipes);
// "mxfp8,nvfp4" from the command line; ConfigError naming the bad name.
std::vector<ScaledRecipe> parse_what_if_list(std::string_view text);

}  // namespace mpwb
