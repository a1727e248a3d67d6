// ScaledRecipeConfig: the table of the scaled recipes' settings (names, kinds, ranges, help,
// which recipe each belongs to), validation as a list of issues, JSON, and the recipes' names
// and one-line summaries.
#include "core/precision/scaled_recipe_config.h"

#include <cmath>
#include <limits>

#include "core/common/text_format.h"

namespace mpwb {

namespace {

constexpr double kNoLimit = std::numeric_limits<double>::infinity();

constexpr SettingChoice kAmaxAlgorithms[] = {{int(AmaxAlgorithm::Max), "max", "max of the history"},
                                             {int(AmaxAlgorithm::MostRecent), "most_recent", "most recent"}};
constexpr SettingChoice kFp8Formats[] = {{int(Fp8Format::Hybrid), "hybrid", "HYBRID (E4M3 fwd, E5M2 grads)"},
                                         {int(Fp8Format::E4M3), "e4m3", "E4M3 everywhere"}};
constexpr SettingChoice kMxElements[] = {{int(MxElement::E4M3), "e4m3", "E4M3"},
                                         {int(MxElement::E5M2), "e5m2", "E5M2"}};
constexpr SettingChoice kMxRoundings[] = {{int(MxScaleRounding::Floor), "floor", "FLOOR (OCP spec)"},
                                          {int(MxScaleRounding::RCeil), "rceil", "RCEIL (cuBLAS, TE)"}};
constexpr SettingChoice kHadamardSigns[] = {{int(HadamardSigns::Random), "random", "random (seeded)"},
                                            {int(HadamardSigns::Fixed), "fixed", "fixed (all +1)"}};
constexpr SettingChoice kFourOverSixErrors[] = {{int(FourOverSixError::Mse), "mse", "squared error"},
                                                {int(FourOverSixError::Mae), "mae", "absolute error"}};

bool per_tensor(const ScaledRecipeConfig& c) {
    return c.recipe == ScaledRecipe::Fp8Delayed || c.recipe == ScaledRecipe::Fp8Current;
}
bool delayed(const ScaledRecipeConfig& c) { return c.recipe == ScaledRecipe::Fp8Delayed; }
bool block(const ScaledRecipeConfig& c) { return c.recipe == ScaledRecipe::Fp8Block; }
bool mxfp8(const ScaledRecipeConfig& c) { return c.recipe == ScaledRecipe::MxFp8; }
bool mx(const ScaledRecipeConfig& c) { return mxfp8(c) || c.recipe == ScaledRecipe::MxFp4; }
bool nvfp4(const ScaledRecipeConfig& c) { return c.recipe == ScaledRecipe::NvFp4; }
bool fp4(const ScaledRecipeConfig& c) { return nvfp4(c) || c.recipe == ScaledRecipe::MxFp4; }
bool hadamard_on(const ScaledRecipeConfig& c) { return fp4(c) && c.hadamard; }
bool four_over_six(const ScaledRecipeConfig& c) { return nvfp4(c) && c.nvfp4_4over6; }
bool any_recipe(const ScaledRecipeConfig& c) { return c.recipe != ScaledRecipe::None; }
bool accumulating(const ScaledRecipeConfig& c) { return any_recipe(c) && c.accumulator_bits > 0; }

#define MPWB_RECIPE_MEMBER(m)                                       \
    get_setting_member<&ScaledRecipeConfig::m, ScaledRecipeConfig>, \
        set_setting_member<&ScaledRecipeConfig::m, ScaledRecipeConfig>

using K = SettingKind;
const RecipeField kFields[] = {
    {"amax_history_len",
     "Amax history length",
     K::Integer,
     "Steps of amax each tensor remembers; the scale comes from the history before this step",
     1,
     65536,
     false,
     false,
     1,
     {},
     delayed,
     MPWB_RECIPE_MEMBER(amax_history_len)},
    {"amax_algorithm", "Amax from history", K::Choice,
     "max: the largest amax in the history. most_recent: the previous step's amax", 0, 0, false, false, 1,
     kAmaxAlgorithms, delayed, MPWB_RECIPE_MEMBER(amax_algorithm)},
    {"margin",
     "Margin",
     K::Integer,
     "scale = FP8 max / amax / 2^margin: headroom in powers of two",
     0,
     64,
     false,
     false,
     1,
     {},
     per_tensor,
     MPWB_RECIPE_MEMBER(margin)},
    {"fp8_format", "FP8 format", K::Choice,
     "HYBRID: E4M3 for activations and weights, E5M2 for gradients. E4M3: E4M3 for all", 0, 0, false, false,
     1, kFp8Formats, per_tensor, MPWB_RECIPE_MEMBER(fp8_format)},
    {"fixed_scale",
     "Fixed scale",
     K::Real,
     "Above 0: every tensor uses this scale instead of one from its amax (1 = no scaling)",
     0,
     3.0e38,
     false,
     false,
     1,
     {},
     per_tensor,
     MPWB_RECIPE_MEMBER(fixed_scale)},
    {"power_of_two_scales",
     "Power-of-two scales",
     K::Flag,
     "Round every block scale down to a power of two, so scaling is exact",
     0,
     0,
     false,
     false,
     1,
     {},
     block,
     MPWB_RECIPE_MEMBER(power_of_two_scales)},
    {"mx_element", "MX element", K::Choice, "Element format of the 32-value blocks", 0, 0, false, false, 1,
     kMxElements, mxfp8, MPWB_RECIPE_MEMBER(mx_element)},
    {"mx_scale_rounding", "MX scale rounding", K::Choice,
     "FLOOR: 2^(floor(log2 amax) - emax), block maxima can clip. RCEIL: the smallest power of two that holds "
     "the block maximum",
     0, 0, false, false, 1, kMxRoundings, mx, MPWB_RECIPE_MEMBER(mx_scale_rounding)},
    {"stochastic_rounding",
     "Stochastic rounding",
     K::Flag,
     "Round gradients up or down at random in proportion to the distance (seeded: runs repeat)",
     0,
     0,
     false,
     false,
     1,
     {},
     fp4,
     MPWB_RECIPE_MEMBER(stochastic_rounding)},
    {"hadamard",
     "Hadamard transform",
     K::Flag,
     "Spread outliers over 16 values before quantizing the weight-gradient GEMM's inputs",
     0,
     0,
     false,
     false,
     1,
     {},
     fp4,
     MPWB_RECIPE_MEMBER(hadamard)},
    {"hadamard_signs", "Hadamard signs", K::Choice,
     "random: 16 signs drawn from the run's seed per layer. fixed: all +1, the plain normalised H16", 0, 0,
     false, false, 1, kHadamardSigns, hadamard_on, MPWB_RECIPE_MEMBER(hadamard_signs)},
    {"nvfp4_4over6",
     "4 over 6",
     K::Flag,
     "Scale each block so its maximum maps to 4 or to 6, whichever quantizes the block with less error",
     0,
     0,
     false,
     false,
     1,
     {},
     nvfp4,
     MPWB_RECIPE_MEMBER(nvfp4_4over6)},
    {"nvfp4_4over6_error", "4 over 6 error", K::Choice,
     "How a block's two candidates are compared: mse (sum of squared errors) or mae (sum of absolute errors)",
     0, 0, false, false, 1, kFourOverSixErrors, four_over_six, MPWB_RECIPE_MEMBER(nvfp4_4over6_error)},
    {"accumulator_bits",
     "Accumulator mantissa bits",
     K::Integer,
     "0: exact FP32 sums. Else partial sums keep this many mantissa bits until promoted to FP32",
     0,
     23,
     false,
     false,
     1,
     {},
     any_recipe,
     MPWB_RECIPE_MEMBER(accumulator_bits)},
    {"accumulator_interval",
     "Promote every",
     K::Integer,
     "Products summed in the narrow accumulator before it is added to the FP32 sum",
     1,
     1 << 20,
     false,
     false,
     1,
     {},
     accumulating,
     MPWB_RECIPE_MEMBER(accumulator_interval)},
    {"fp8_attention",
     "FP8 attention",
     K::Flag,
     "Quantize a transformer's attention products (Q, K, V, P and their gradients) to FP8 per tensor; "
     "off: BF16",
     0,
     0,
     false,
     false,
     1,
     {},
     any_recipe,
     MPWB_RECIPE_MEMBER(fp8_attention)},
};

#undef MPWB_RECIPE_MEMBER

struct RecipeText {
    ScaledRecipe recipe;
    const char* name;
    const char* summary;
};

constexpr RecipeText kRecipes[] = {
    {ScaledRecipe::None, "", ""},
    {ScaledRecipe::Fp8Delayed, "fp8-delayed",
     "FP8 GEMM operands, one scale per tensor from its amax history (Transformer Engine DelayedScaling)"},
    {ScaledRecipe::Fp8Current, "fp8-current",
     "FP8 GEMM operands, one scale per tensor from this step's amax (Float8CurrentScaling)"},
    {ScaledRecipe::Fp8Block, "fp8-block",
     "E4M3 operands, a scale per 1x128 tile of activations and gradients, per 128x128 weight block "
     "(DeepSeek-V3)"},
    {ScaledRecipe::MxFp8, "mxfp8", "OCP MX: a power-of-two E8M0 scale per 32 values, FP8 elements"},
    {ScaledRecipe::NvFp4, "nvfp4",
     "FP4 E2M1 values, an E4M3 scale per 16 values and one FP32 scale per tensor (NVIDIA NVFP4)"},
    {ScaledRecipe::MxFp4, "mxfp4", "OCP MX: a power-of-two E8M0 scale per 32 values, FP4 E2M1 elements"},
};

const RecipeText& text_of(ScaledRecipe recipe) {
    for (const auto& r : kRecipes)
        if (r.recipe == recipe) return r;
    return kRecipes[0];
}

}  // namespace

template <>
std::span<const SettingChoice> setting_choices<AmaxAlgorithm>() {
    return kAmaxAlgorithms;
}
template <>
std::span<const SettingChoice> setting_choices<Fp8Format>() {
    return kFp8Formats;
}
template <>
std::span<const SettingChoice> setting_choices<MxElement>() {
    return kMxElements;
}
template <>
std::span<const SettingChoice> setting_choices<MxScaleRounding>() {
    return kMxRoundings;
}
template <>
std::span<const SettingChoice> setting_choices<HadamardSigns>() {
    return kHadamardSigns;
}
template <>
std::span<const SettingChoice> setting_choices<FourOverSixError>() {
    return kFourOverSixErrors;
}
template <>
const char* enum_setting_name<AmaxAlgorithm>() {
    return "amax_algorithm";
}
template <>
const char* enum_setting_name<Fp8Format>() {
    return "fp8_format";
}
template <>
const char* enum_setting_name<MxElement>() {
    return "mx_element";
}
template <>
const char* enum_setting_name<MxScaleRounding>() {
    return "mx_scale_rounding";
}
template <>
const char* enum_setting_name<HadamardSigns>() {
    return "hadamard_signs";
}
template <>
const char* enum_setting_name<FourOverSixError>() {
    return "nvfp4_4over6_error";
}

RecipeConfigError::RecipeConfigError(ConfigIssue issue)
    : ConfigError("recipe: " + issue.message), issue_(std::move(issue)) {}

std::span<const RecipeField> scaled_recipe_fields() { return kFields; }

std::vector<ConfigIssue> ScaledRecipeConfig::issues() const {
    std::vector<ConfigIssue> out;
    for (const auto& f : kFields)
        if (std::string problem = setting_range_problem(f, *this); !problem.empty())
            out.push_back({f.name, std::move(problem)});
    return out;
}

void ScaledRecipeConfig::validate() const {
    auto found = issues();
    if (!found.empty()) throw RecipeConfigError(std::move(found.front()));
}

const char* scaled_recipe_name(ScaledRecipe recipe) { return text_of(recipe).name; }
const char* scaled_recipe_summary(ScaledRecipe recipe) { return text_of(recipe).summary; }

nlohmann::json scaled_recipe_config_to_json(const ScaledRecipeConfig& c) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& f : kFields)
        if (f.applies(c)) j[f.name] = f.get(c);
    return j;
}

ScaledRecipeConfig scaled_recipe_config_from_json(const nlohmann::json& j, ScaledRecipeConfig base,
                                                  std::string_view where) {
    read_setting_fields(scaled_recipe_fields(), j, where, "recipe settings", base);
    if (auto found = base.issues(); !found.empty()) {
        ConfigIssue first = std::move(found.front());
        first.message = "setting '" + setting_path(where, first.field) + "': " + first.message;
        throw RecipeConfigError(std::move(first));
    }
    return base;
}

nlohmann::json scaled_recipe_changes(const ScaledRecipeConfig& from, const ScaledRecipeConfig& to) {
    nlohmann::json changes = nlohmann::json::object();
    for (const auto& f : kFields)
        if (f.get(from) != f.get(to)) changes[f.name] = {{"from", f.get(from)}, {"to", f.get(to)}};
    return changes;
}

}  // namespace mpwb
