// Resolving precision rules against a network's GEMMs: per pass, the first rule that matches
// and names the pass, then the shortcuts, then the run's precision.
#include "core/nn/gemm_precision_plan.h"

#include <algorithm>

#include "core/common/error.h"

namespace mpwb {
namespace {

constexpr std::array<GemmPass, 3> kPasses{GemmPass::Forward, GemmPass::DataGrad, GemmPass::WeightGrad};

bool stores_bf16(const PrecisionPolicy& policy) { return policy.activations == Format::BF16; }

// The layers whose GEMMs keep_ends_bf16 keeps: the first and the last that have a GEMM a rule
// may set.
std::pair<size_t, size_t> end_layers(const std::vector<GemmPrecision>& gemms) {
    size_t first = SIZE_MAX, last = 0;
    for (const GemmPrecision& g : gemms)
        if (!g.attention_product) {
            first = std::min(first, g.layer);
            last = std::max(last, g.layer);
        }
    return {first, last};
}

void check_rules(const PrecisionRules& rules, const std::vector<GemmPrecision>& gemms,
                 const PrecisionPolicy& policy) {
    for (size_t i = 0; i < rules.rules.size(); ++i) {
        const PrecisionRule& rule = rules.rules[i];
        const std::string where = "precision rule " + std::to_string(i + 1) + " (\"" + rule.match + "\")";
        const bool matches = std::any_of(gemms.begin(), gemms.end(), [&](const GemmPrecision& g) {
            return !g.attention_product && glob_match(rule.match, g.label);
        });
        if (!matches)
            throw ConfigError(where + " matches no GEMM of this network; GEMMs are named like \"" +
                              (gemms.empty() ? std::string("0") : gemms.front().label) +
                              "\" (layer index, then the " +
                              "block's GEMM: attn.qkv, attn.out, mlp.fc1, mlp.fc2)");
        for (const auto& pass : rule.passes)
            if (pass && *pass == ScaledRecipe::None && !stores_bf16(policy))
                throw ConfigError(where + " keeps a pass in bf16, but a " + policy.name() +
                                  " run stores its operands in " + format_name(policy.activations) +
                                  "; bf16 applies to bf16-mixed and the scaled recipes");
    }
    if ((rules.keep_ends_bf16 || rules.backward_bf16) && !stores_bf16(policy))
        throw ConfigError(std::string(rules.keep_ends_bf16 ? "keep_ends_bf16" : "backward_bf16") +
                          " keeps GEMMs in bf16, but a " + policy.name() + " run stores its operands in " +
                          format_name(policy.activations));
}

PassRecipe resolve_pass(const GemmPrecision& g, GemmPass pass, const PrecisionRules& rules, bool at_end,
                        ScaledRecipe run) {
    const size_t p = static_cast<size_t>(pass);
    for (const PrecisionRule& rule : rules.rules)
        if (rule.passes[p] && glob_match(rule.match, g.label)) return *rule.passes[p];
    if (at_end) return ScaledRecipe::None;
    if (rules.backward_bf16 && pass != GemmPass::Forward) return ScaledRecipe::None;
    return run;
}

}  // namespace

std::optional<ScaledRecipeConfig> recipe_for_gemm(const ScaledRecipeConfig& run, const NamedGemm& gemm) {
    if (run.recipe == ScaledRecipe::None) return std::nullopt;
    if (!gemm.attention_product) return run;
    if (!run.fp8_attention) return std::nullopt;
    ScaledRecipeConfig attention = run;
    attention.recipe = ScaledRecipe::Fp8Current;
    return attention;
}

std::string gemm_rule_label(size_t layer, const std::string& gemm_name) {
    return gemm_name.empty() ? std::to_string(layer) : std::to_string(layer) + "." + gemm_name;
}

const GemmPrecision* GemmPrecisionPlan::find(size_t layer, size_t gemm) const {
    for (const GemmPrecision& g : gemms)
        if (g.layer == layer && g.gemm == gemm) return &g;
    return nullptr;
}

bool GemmPrecisionPlan::departs_from_run() const {
    return std::any_of(gemms.begin(), gemms.end(), [&](const GemmPrecision& g) {
        return !g.attention_product && std::any_of(g.passes.begin(), g.passes.end(),
                                                   [&](PassRecipe r) { return r != policy.recipe; });
    });
}

bool GemmPrecisionPlan::quantizes() const {
    return std::any_of(gemms.begin(), gemms.end(), [](const GemmPrecision& g) {
        return std::any_of(g.passes.begin(), g.passes.end(),
                           [](PassRecipe r) { return r != ScaledRecipe::None; });
    });
}

std::string GemmPrecisionPlan::pass_label(PassRecipe recipe) const {
    if (recipe != ScaledRecipe::None) return scaled_recipe_name(recipe);
    return stores_bf16(policy) ? "bf16" : policy.name();
}

GemmPrecisionPlan resolve_gemm_precisions(const std::vector<std::vector<NamedGemm>>& gemms,
                                          const PrecisionRules& rules, const PrecisionPolicy& policy,
                                          bool fp8_attention) {
    GemmPrecisionPlan plan;
    plan.policy = policy;
    for (size_t layer = 0; layer < gemms.size(); ++layer)
        for (size_t g = 0; g < gemms[layer].size(); ++g)
            plan.gemms.push_back({layer,
                                  g,
                                  gemm_rule_label(layer, gemms[layer][g].name),
                                  gemms[layer][g].attention_product,
                                  {}});
    check_rules(rules, plan.gemms, policy);
    const auto [first, last] = end_layers(plan.gemms);
    for (GemmPrecision& g : plan.gemms) {
        if (g.attention_product) {
            g.passes.fill(policy.scaled() && fp8_attention ? ScaledRecipe::Fp8Current : ScaledRecipe::None);
            continue;
        }
        const bool at_end = rules.keep_ends_bf16 && (g.layer == first || g.layer == last);
        for (GemmPass pass : kPasses)
            g.passes[static_cast<size_t>(pass)] = resolve_pass(g, pass, rules, at_end, policy.recipe);
    }
    return plan;
}

PassRecipes pass_recipes_of(const GemmPrecision& gemm, const NamedGemm& named,
                            const ScaledRecipeConfig& settings, ScaledRecipe run_recipe) {
    PassRecipes passes;
    if (gemm.attention_product) {
        ScaledRecipeConfig run = settings;
        run.recipe = run_recipe;
        passes.fill(recipe_for_gemm(run, named));
        return passes;
    }
    for (size_t p = 0; p < passes.size(); ++p) {
        if (gemm.passes[p] == ScaledRecipe::None) continue;
        ScaledRecipeConfig c = settings;
        c.recipe = gemm.passes[p];
        passes[p] = c;
    }
    return passes;
}

nlohmann::json to_json(const GemmPrecisionPlan& plan) {
    nlohmann::json list = nlohmann::json::array();
    for (const GemmPrecision& g : plan.gemms) {
        nlohmann::json entry{{"gemm", g.label}};
        for (GemmPass pass : kPasses)
            entry[gemm_pass_name(pass)] = plan.pass_label(g.passes[static_cast<size_t>(pass)]);
        if (g.attention_product) entry["attention_product"] = true;
        list.push_back(entry);
    }
    return list;
}

}  // namespace mpwb
