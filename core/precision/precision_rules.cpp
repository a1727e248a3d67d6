// Precision rules: their JSON and command-line forms and the glob that matches GEMM labels.
#include "core/precision/precision_rules.h"

#include <algorithm>

#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/precision/precision_policy.h"

namespace mpwb {
namespace {

constexpr std::array<GemmPass, 3> kPasses{GemmPass::Forward, GemmPass::DataGrad, GemmPass::WeightGrad};

std::string choices_text() {
    std::string text = "bf16";
    for (ScaledRecipe r : scaled_recipes()) text += std::string(", ") + scaled_recipe_name(r);
    return text;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

void check_match(const std::string& match, std::string_view where) {
    if (match.empty())
        throw ConfigError(std::string(where) + ".match is empty: name GEMMs by a glob such as \"*.attn.*\"");
    if (match.size() > kMaxRuleMatchLength)
        throw ConfigError(std::string(where) + ".match has " + std::to_string(match.size()) +
                          " characters; at most " + std::to_string(kMaxRuleMatchLength));
}

// "fprop:mxfp8,wgrad:bf16" after the '='.
void read_pass_list(std::string_view list, PrecisionRule& rule, std::string_view where) {
    while (!list.empty()) {
        const size_t comma = list.find(',');
        const std::string_view item = trim(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        const size_t colon = item.find(':');
        if (colon == std::string_view::npos)
            throw ConfigError(std::string(where) + ": '" + std::string(item) +
                              "' is not PASS:RECIPE (passes: fprop, dgrad, wgrad, all)");
        const std::string_view pass = trim(item.substr(0, colon));
        const PassRecipe recipe = parse_pass_recipe(trim(item.substr(colon + 1)), where);
        bool known = pass == "all";
        for (GemmPass p : kPasses)
            if (pass == "all" || pass == gemm_pass_name(p)) {
                rule.passes[static_cast<size_t>(p)] = recipe;
                known = true;
            }
        if (!known)
            throw ConfigError(std::string(where) + ": pass '" + std::string(pass) +
                              "' is unknown; choose fprop, dgrad, wgrad or all");
    }
}

}  // namespace

const char* gemm_pass_name(GemmPass pass) {
    switch (pass) {
        case GemmPass::Forward:
            return "fprop";
        case GemmPass::DataGrad:
            return "dgrad";
        case GemmPass::WeightGrad:
            return "wgrad";
    }
    return "?";
}

std::vector<ScaledRecipe> scaled_recipes() {
    std::vector<ScaledRecipe> all;
    for (PrecisionKind k : precision_kinds())
        if (const ScaledRecipe r = PrecisionPolicy::make(k).recipe; r != ScaledRecipe::None) all.push_back(r);
    return all;
}

std::string pass_recipe_name(PassRecipe recipe) {
    return recipe == ScaledRecipe::None ? "bf16" : scaled_recipe_name(recipe);
}

PassRecipe parse_pass_recipe(std::string_view name, std::string_view where) {
    if (name == "bf16") return ScaledRecipe::None;
    for (ScaledRecipe r : scaled_recipes())
        if (name == scaled_recipe_name(r)) return r;
    throw ConfigError(std::string(where) + ": '" + std::string(name) + "' is not a GEMM precision; choose " +
                      choices_text());
}

bool glob_match(std::string_view pattern, std::string_view text) {
    // Iterative wildcard match with one backtrack point: linear in practice, never exponential.
    size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
    while (t < text.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = t;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            t = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

PrecisionRule precision_rule_from_json(const nlohmann::json& j, std::string_view where) {
    check_setting_keys(j, where, {"match", "fprop", "dgrad", "wgrad", "all"});
    PrecisionRule rule;
    if (!j.contains("match")) throw ConfigError(std::string(where) + " has no \"match\"");
    rule.match = setting_value<std::string>(j["match"], setting_path(where, "match"));
    check_match(rule.match, where);
    if (j.contains("all")) {
        const PassRecipe r = parse_pass_recipe(
            setting_value<std::string>(j["all"], setting_path(where, "all")), setting_path(where, "all"));
        rule.passes.fill(r);
    }
    for (GemmPass p : kPasses) {
        const char* key = gemm_pass_name(p);
        if (j.contains(key))
            rule.passes[static_cast<size_t>(p)] = parse_pass_recipe(
                setting_value<std::string>(j[key], setting_path(where, key)), setting_path(where, key));
    }
    if (std::none_of(rule.passes.begin(), rule.passes.end(), [](const auto& p) { return p.has_value(); }))
        throw ConfigError(std::string(where) + " names no pass: give fprop, dgrad, wgrad or all");
    return rule;
}

nlohmann::json to_json(const PrecisionRule& rule) {
    nlohmann::json j{{"match", rule.match}};
    for (GemmPass p : kPasses)
        if (const auto& r = rule.passes[static_cast<size_t>(p)]) j[gemm_pass_name(p)] = pass_recipe_name(*r);
    return j;
}

PrecisionRule parse_precision_rule(std::string_view text) {
    const std::string where = "--precision-rule '" + std::string(text) + "'";
    text = trim(text);
    if (!text.empty() && text.front() == '{')
        return precision_rule_from_json(parse_json_text(std::string(text), where), where);
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos)
        throw ConfigError(where + " is not GLOB=RECIPE, GLOB=PASS:RECIPE,... or a JSON object");
    PrecisionRule rule;
    rule.match = std::string(trim(text.substr(0, eq)));
    check_match(rule.match, where);
    const std::string_view rest = trim(text.substr(eq + 1));
    if (rest.find(':') == std::string_view::npos)
        rule.passes.fill(parse_pass_recipe(rest, where));
    else
        read_pass_list(rest, rule, where);
    return rule;
}

void read_precision_rules(const nlohmann::json& settings, PrecisionRules& out) {
    PrecisionRules rules = out;
    if (settings.contains("precision_rules")) {
        const nlohmann::json& list = settings["precision_rules"];
        if (!list.is_array()) throw_bad_setting("precision_rules", list, "an array of rules");
        if (list.size() > kMaxPrecisionRules)
            throw ConfigError("precision_rules has " + std::to_string(list.size()) + " rules; at most " +
                              std::to_string(kMaxPrecisionRules));
        rules.rules.clear();
        for (size_t i = 0; i < list.size(); ++i)
            rules.rules.push_back(
                precision_rule_from_json(list[i], "precision_rules[" + std::to_string(i) + "]"));
    }
    read_setting(settings, "", "keep_ends_bf16", rules.keep_ends_bf16);
    read_setting(settings, "", "backward_bf16", rules.backward_bf16);
    out = std::move(rules);
}

void write_precision_rules(const PrecisionRules& rules, nlohmann::json& settings) {
    if (!rules.rules.empty()) {
        nlohmann::json list = nlohmann::json::array();
        for (const PrecisionRule& r : rules.rules) list.push_back(to_json(r));
        settings["precision_rules"] = list;
    }
    if (rules.keep_ends_bf16) settings["keep_ends_bf16"] = true;
    if (rules.backward_bf16) settings["backward_bf16"] = true;
}

std::vector<ScaledRecipe> what_if_from_json(const nlohmann::json& j, std::string_view where) {
    if (!j.is_array()) throw_bad_setting(where, j, "an array of recipe names");
    std::vector<ScaledRecipe> recipes;
    for (size_t i = 0; i < j.size(); ++i) {
        const std::string path = std::string(where) + "[" + std::to_string(i) + "]";
        const PassRecipe r = parse_pass_recipe(setting_value<std::string>(j[i], path), path);
        if (r == ScaledRecipe::None)
            throw ConfigError(path + ": bf16 is not a what-if recipe; choose a scaled recipe (" +
                              choices_text() + " without bf16)");
        if (std::find(recipes.begin(), recipes.end(), r) != recipes.end())
            throw ConfigError(path + ": " + scaled_recipe_name(r) + " is listed twice");
        recipes.push_back(r);
    }
    return recipes;
}

nlohmann::json what_if_to_json(const std::vector<ScaledRecipe>& recipes) {
    nlohmann::json list = nlohmann::json::array();
    for (ScaledRecipe r : recipes) list.push_back(scaled_recipe_name(r));
    return list;
}

std::vector<ScaledRecipe> parse_what_if_list(std::string_view text) {
    nlohmann::json list = nlohmann::json::array();
    while (!text.empty()) {
        const size_t comma = text.find(',');
        list.push_back(std::string(trim(text.substr(0, comma))));
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    }
    return what_if_from_json(list, "--what-if");
}

}  // namespace mpwb
