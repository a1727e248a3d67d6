// GemmQuantizer: which operand gets which block shape, scale rule and element format under each
// recipe, the per-tensor amax histories of fp8-delayed, the per-step copies (served again to an
// operand's second use), and the statistics. The arithmetic itself is in block_quantize.cpp.
#include "core/precision/gemm_quantizer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <deque>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/text_format.h"
#include "core/numeric/element_formats.h"
#include "core/precision/block_quantize.h"

namespace mpwb {
namespace {

constexpr int64_t kFp8BlockTile = 128;  // DeepSeek-V3: 1x128 tiles, 128x128 weight blocks
constexpr int64_t kMxBlock = 32;
constexpr int64_t kNvFp4Block = 16;

bool is_per_tensor(ScaledRecipe r) { return r == ScaledRecipe::Fp8Delayed || r == ScaledRecipe::Fp8Current; }
bool is_mx(ScaledRecipe r) { return r == ScaledRecipe::MxFp8 || r == ScaledRecipe::MxFp4; }
// The recipes with E2M1 elements, stochastic rounding of dy and the Hadamard option.
bool is_fp4(ScaledRecipe r) { return r == ScaledRecipe::NvFp4 || r == ScaledRecipe::MxFp4; }

size_t index_of(GemmOperand which) { return static_cast<size_t>(which); }

// The element format of a per-tensor recipe's operand: HYBRID is E4M3 forward, E5M2 for dy.
Format per_tensor_element(const ScaledRecipeConfig& c, GemmOperand which) {
    return c.fp8_format == Fp8Format::Hybrid && which == GemmOperand::OutputGrad ? Format::E5M2
                                                                                 : Format::E4M3;
}

// The amax a delayed scale is computed from: the history's maximum (NaN entries skipped, inf
// kept, so an overflowed step holds the scale for the length of the history) or its newest entry.
float history_amax(const std::deque<float>& history, AmaxAlgorithm algorithm) {
    if (algorithm == AmaxAlgorithm::MostRecent) return history.back();
    float m = 0.0f;
    for (float a : history) m = a > m ? a : m;
    return m;
}

float delayed_scale(const std::deque<float>& history, const ScaledRecipeConfig& c, Format element,
                    float previous) {
    if (c.fixed_scale > 0) return static_cast<float>(c.fixed_scale);
    if (history.empty()) return previous;
    return per_tensor_scale(history_amax(history, c.amax_algorithm), element_max(element), c.margin,
                            previous);
}

uint64_t mix(uint64_t key, uint64_t value) {
    return splitmix64_finalise(key ^ (value + 0x9e3779b97f4a7c15ull));
}

// Truncates a finite float toward zero to `mantissa_bits` stored mantissa bits.
inline float truncate_mantissa(float v, uint32_t keep_mask) {
    const float t = std::bit_cast<float>(std::bit_cast<uint32_t>(v) & keep_mask);
    return std::isnan(v) ? v : t;
}

}  // namespace

std::string gemm_operand_name(GemmOperand which, GemmPass pass, bool per_tensor) {
    switch (which) {
        case GemmOperand::Input:
            return !per_tensor && pass == GemmPass::WeightGrad ? "x (wgrad)" : "x";
        case GemmOperand::Weight:
            return !per_tensor && pass == GemmPass::DataGrad ? "w (dgrad)" : "w";
        case GemmOperand::OutputGrad:
            return !per_tensor && pass == GemmPass::WeightGrad ? "dy (wgrad)" : "dy";
    }
    return "?";
}

struct GemmQuantizer::State {
    struct PerTensor {
        std::deque<float> history;  // oldest first
        // The scale of the last step that ended (the fallback when an amax is 0 or non-finite),
        // and the one used in this step, which end_step makes the former; evaluation's steps,
        // which never end, change nothing.
        float scale = 1.0f;
        float step_scale = 1.0f;
        float step_amax = 0.0f;
        bool used = false;
    };
    // One quantized copy made this step.
    struct Copy {
        GemmOperand which;
        SumAlong along;
        bool hadamard;
        const float* source;
        int64_t rows, cols;
        size_t buffer;
        int stats_index;  // into stats, -1 without statistics
    };

    ScaledRecipeConfig config;   // in force this step
    ScaledRecipeConfig pending;  // applied at the next begin_step
    uint64_t seed;
    size_t layer;
    int64_t step = 0;
    bool take_stats = false;
    std::array<PerTensor, 3> tensors;
    std::vector<std::vector<float>> pool;  // buffers reused from step to step
    size_t pool_used = 0;
    std::vector<Copy> copies;
    std::vector<ScalingStats> stats;
    std::array<float, 16> signs{};

    float* take_buffer(int64_t n) {
        if (pool_used == pool.size()) pool.emplace_back();
        std::vector<float>& b = pool[pool_used++];
        b.resize(static_cast<size_t>(n));
        return b.data();
    }

    const Copy* find_copy(GemmOperand which, SumAlong along, bool hadamard, const float* values, int64_t rows,
                          int64_t cols) const {
        for (const Copy& c : copies)
            if (c.which == which && c.along == along && c.hadamard == hadamard && c.source == values &&
                c.rows == rows && c.cols == cols)
                return &c;
        return nullptr;
    }

    uint64_t random_key(GemmOperand which, GemmPass pass) const {
        return mix(mix(mix(mix(seed, layer), static_cast<uint64_t>(step)), index_of(which)),
                   static_cast<uint64_t>(pass));
    }

    float* quantize_per_tensor_operand(GemmOperand which, const float* values, int64_t n, ScalingStats* st);
    float* quantize_block_operand(GemmOperand which, GemmPass pass, SumAlong along, bool hadamard,
                                  const float* values, int64_t rows, int64_t cols, ScalingStats* st);
};

float* GemmQuantizer::State::quantize_per_tensor_operand(GemmOperand which, const float* values, int64_t n,
                                                         ScalingStats* st) {
    PerTensor& t = tensors[index_of(which)];
    const float amax = amax_of(values, n);
    // A NaN amax wins, as in amax_of, so a step that saw NaN records it.
    t.step_amax = t.used ? std::bit_cast<float>(
                               std::max(std::bit_cast<uint32_t>(t.step_amax), std::bit_cast<uint32_t>(amax)))
                         : amax;
    t.used = true;
    const Format element = per_tensor_element(config, which);
    if (config.fixed_scale > 0)
        t.step_scale = static_cast<float>(config.fixed_scale);
    else if (config.recipe == ScaledRecipe::Fp8Current)
        t.step_scale = per_tensor_scale(amax, element_max(element), config.margin, t.scale);
    float* out = take_buffer(n);
    QuantizeOptions opt;
    opt.element = element;
    opt.stats = st;
    quantize_per_tensor(values, out, n, t.step_scale, amax, opt);
    return out;
}

float* GemmQuantizer::State::quantize_block_operand(GemmOperand which, GemmPass pass, SumAlong along,
                                                    bool hadamard, const float* values, int64_t rows,
                                                    int64_t cols, ScalingStats* st) {
    const bool weight = which == GemmOperand::Weight;
    QuantizeOptions opt;
    opt.stats = st;
    BlockShape shape;
    BlockScaleRule rule;
    switch (config.recipe) {
        case ScaledRecipe::Fp8Block:
            shape = weight ? BlockShape{kFp8BlockTile, kFp8BlockTile} : tile_along(along, kFp8BlockTile);
            rule = config.power_of_two_scales ? BlockScaleRule::Fp32PowerOfTwo : BlockScaleRule::Fp32;
            opt.element = Format::E4M3;
            break;
        case ScaledRecipe::MxFp8:
        case ScaledRecipe::MxFp4:
            shape = tile_along(along, kMxBlock);
            rule = config.mx_scale_rounding == MxScaleRounding::Floor ? BlockScaleRule::E8M0Floor
                                                                      : BlockScaleRule::E8M0RCeil;
            opt.element = config.recipe == ScaledRecipe::MxFp4   ? Format::E2M1
                          : config.mx_element == MxElement::E5M2 ? Format::E5M2
                                                                 : Format::E4M3;
            break;
        default:  // NvFp4
            shape = weight ? BlockShape{kNvFp4Block, kNvFp4Block} : tile_along(along, kNvFp4Block);
            rule = config.nvfp4_4over6 ? BlockScaleRule::NvFp4FourOverSix : BlockScaleRule::NvFp4;
            opt.element = Format::E2M1;
            opt.four_over_six_error = config.nvfp4_4over6_error;
            break;
    }
    // The FP4 recipes round dy stochastically when asked (both of its GEMMs).
    if (is_fp4(config.recipe)) {
        opt.stochastic = config.stochastic_rounding && which == GemmOperand::OutputGrad;
        opt.random_key = random_key(which, pass);
    }
    float* out = take_buffer(rows * cols);
    const float* source = values;
    if (hadamard) {
        hadamard16_along_rows(values, out, rows, cols,
                              config.hadamard_signs == HadamardSigns::Fixed ? fixed_hadamard_signs() : signs);
        source = out;  // quantized in place
    }
    if (config.recipe == ScaledRecipe::NvFp4)
        opt.tensor_scale = nvfp4_tensor_scale(amax_of(source, rows * cols), config.nvfp4_4over6);
    quantize_blocks(source, out, rows, cols, shape, rule, opt);
    return out;
}

GemmQuantizer::GemmQuantizer(const ScaledRecipeConfig& config, uint64_t seed, size_t layer)
    : state_(std::make_unique<State>()) {
    state_->config = config;
    state_->pending = config;
    state_->seed = seed;
    state_->layer = layer;
    // Drawn once for the run; HadamardSigns::Fixed uses all +1 instead.
    state_->signs = hadamard_signs(mix(mix(seed, layer), 0x48414441u));
}

GemmQuantizer::~GemmQuantizer() = default;
GemmQuantizer::GemmQuantizer(GemmQuantizer&&) noexcept = default;
GemmQuantizer& GemmQuantizer::operator=(GemmQuantizer&&) noexcept = default;

void GemmQuantizer::set_config(const ScaledRecipeConfig& config) { state_->pending = config; }
// The newest configuration set (in force from the next begin_step).
const ScaledRecipeConfig& GemmQuantizer::config() const { return state_->pending; }

void GemmQuantizer::begin_step(int64_t step, bool take_stats) {
    State& s = *state_;
    s.config = s.pending;
    s.step = step;
    s.take_stats = take_stats;
    s.pool_used = 0;
    s.copies.clear();
    s.stats.clear();
    const size_t len = static_cast<size_t>(std::max<int64_t>(1, s.config.amax_history_len));
    for (size_t i = 0; i < s.tensors.size(); ++i) {
        State::PerTensor& t = s.tensors[i];
        while (t.history.size() > len) t.history.pop_front();
        t.used = false;
        t.step_amax = 0.0f;
        t.step_scale = s.config.recipe == ScaledRecipe::Fp8Delayed
                           ? delayed_scale(t.history, s.config,
                                           per_tensor_element(s.config, static_cast<GemmOperand>(i)), t.scale)
                           : t.scale;
    }
}

const float* GemmQuantizer::operand(GemmOperand which, GemmPass pass, SumAlong along, const float* values,
                                    int64_t rows, int64_t cols) {
    State& s = *state_;
    const ScaledRecipe recipe = s.config.recipe;
    if (recipe == ScaledRecipe::None) return values;
    const bool per_tensor = is_per_tensor(recipe);
    // Per-tensor recipes keep one copy per tensor; square weight blocks give the same copy
    // whichever dimension is summed (MX has none: 1x32 tiles for weights too); the wgrad copy of
    // nvfp4 and mxfp4 carries the Hadamard transform.
    const bool square_weight = which == GemmOperand::Weight && !is_mx(recipe);
    const SumAlong key_along = per_tensor || square_weight ? SumAlong::Cols : along;
    const bool hadamard = is_fp4(recipe) && s.config.hadamard && pass == GemmPass::WeightGrad &&
                          which != GemmOperand::Weight && along == SumAlong::Rows;
    const std::string name = gemm_operand_name(which, pass, per_tensor);
    if (const State::Copy* c = s.find_copy(which, key_along, hadamard, values, rows, cols)) {
        // A block recipe's weight copy serving its second GEMM still reports under that GEMM's name.
        if (c->stats_index >= 0) {
            const bool named = std::any_of(s.stats.begin(), s.stats.end(),
                                           [&](const ScalingStats& st) { return st.operand == name; });
            if (!named && !per_tensor) {
                ScalingStats again = s.stats[static_cast<size_t>(c->stats_index)];
                again.operand = name;
                s.stats.push_back(std::move(again));
            }
        }
        return s.pool[c->buffer].data();
    }
    ScalingStats st;
    ScalingStats* stp = s.take_stats ? &st : nullptr;
    const float* out = per_tensor
                           ? s.quantize_per_tensor_operand(which, values, rows * cols, stp)
                           : s.quantize_block_operand(which, pass, along, hadamard, values, rows, cols, stp);
    int stats_index = -1;
    if (stp) {
        st.operand = name;
        stats_index = static_cast<int>(s.stats.size());
        s.stats.push_back(std::move(st));
    }
    s.copies.push_back({which, key_along, hadamard, values, rows, cols, s.pool_used - 1, stats_index});
    return out;
}

void GemmQuantizer::end_step() {
    State& s = *state_;
    if (!is_per_tensor(s.config.recipe)) return;
    const size_t len = static_cast<size_t>(std::max<int64_t>(1, s.config.amax_history_len));
    for (State::PerTensor& t : s.tensors) {
        if (!t.used) continue;
        t.scale = t.step_scale;
        t.history.push_back(t.step_amax);
        while (t.history.size() > len) t.history.pop_front();
    }
}

const std::vector<ScalingStats>& GemmQuantizer::stats() const { return state_->stats; }

float GemmQuantizer::next_scale(GemmOperand which) const {
    const State& s = *state_;
    const State::PerTensor& t = s.tensors[index_of(which)];
    const ScaledRecipeConfig& c = s.pending;
    if (c.recipe == ScaledRecipe::Fp8Delayed) {
        std::deque<float> history = t.history;
        const size_t len = static_cast<size_t>(std::max<int64_t>(1, c.amax_history_len));
        while (history.size() > len) history.pop_front();
        return delayed_scale(history, c, per_tensor_element(c, which), t.scale);
    }
    if (c.recipe == ScaledRecipe::Fp8Current)
        return c.fixed_scale > 0 ? static_cast<float>(c.fixed_scale) : t.scale;
    return 0.0f;
}

std::vector<float> GemmQuantizer::amax_history(GemmOperand which) const {
    const auto& h = state_->tensors[index_of(which)].history;
    return {h.begin(), h.end()};
}

GemmQuantizer::SavedState GemmQuantizer::save_state() const {
    SavedState saved;
    for (size_t i = 0; i < saved.histories.size(); ++i) {
        const State::PerTensor& t = state_->tensors[i];
        saved.histories[i].assign(t.history.begin(), t.history.end());
        saved.scales[i] = t.scale;
    }
    return saved;
}

namespace {

// Why `saved` cannot be the state of a quantizer with these settings; empty when it can. A scale
// is what per_tensor_scale gives (positive, finite: the clamp stops at FLT_MAX) or the initial 1;
// an amax is a maximum of magnitudes (never negative; +inf and NaN record an overflowed step);
// block recipes keep no history.
std::string saved_state_problem(const GemmQuantizer::SavedState& saved, const ScaledRecipeConfig& config) {
    constexpr std::array<const char*, 3> kOperands = {"x", "w", "dy"};
    for (size_t i = 0; i < saved.histories.size(); ++i) {
        const std::string operand = kOperands[i];
        const float scale = saved.scales[i];
        if (!(scale > 0.0f) || !std::isfinite(scale))
            return "the scale of " + operand + " is " + shortest_text(scale) +
                   "; a scale is positive and finite";
        const std::vector<float>& history = saved.histories[i];
        if (!is_per_tensor(config.recipe) && !history.empty())
            return std::string(scaled_recipe_name(config.recipe)) +
                   " keeps no amax history, the state holds " + std::to_string(history.size()) +
                   " entries for " + operand;
        for (size_t k = 0; k < history.size(); ++k)
            if (history[k] < 0.0f)
                return "the amax history of " + operand + " holds " + shortest_text(history[k]) +
                       " at entry " + std::to_string(k) + " of " + std::to_string(history.size()) +
                       "; an amax is never negative";
    }
    return {};
}

}  // namespace

void GemmQuantizer::load_state(const SavedState& saved) {
    const std::string problem = saved_state_problem(saved, state_->pending);
    if (!problem.empty()) throw DataError("recipe state: " + problem);
    for (size_t i = 0; i < saved.histories.size(); ++i) {
        State::PerTensor& t = state_->tensors[i];
        t.history.assign(saved.histories[i].begin(), saved.histories[i].end());
        t.scale = saved.scales[i];
    }
}

void limited_accumulator_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                              int mantissa_bits, int64_t interval) {
    // op(B) as a row-major k x n panel, so the inner loop runs along contiguous rows of B and C.
    std::vector<float> packed;
    const float* bk = b;
    int64_t ldbk = ldb;
    if (trans_b) {
        packed.resize(static_cast<size_t>(k * n));
        for (int64_t j = 0; j < n; ++j)
            for (int64_t p = 0; p < k; ++p) packed[static_cast<size_t>(p * n + j)] = b[j * ldb + p];
        bk = packed.data();
        ldbk = n;
    }
    const int bits = std::clamp(mantissa_bits, 0, 23);
    const uint32_t keep_mask = ~((1u << (23 - bits)) - 1u);
    const int64_t run = std::max<int64_t>(1, interval);
    parallel_for(m, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * k)), [&](int64_t i0, int64_t i1) {
        std::vector<float> acc(static_cast<size_t>(n)), partial(static_cast<size_t>(n));
        for (int64_t i = i0; i < i1; ++i) {
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (int64_t p0 = 0; p0 < k; p0 += run) {
                std::fill(partial.begin(), partial.end(), 0.0f);
                for (int64_t p = p0; p < std::min(k, p0 + run); ++p) {
                    const float aip = trans_a ? a[p * lda + i] : a[i * lda + p];
                    const float* row = bk + p * ldbk;
                    for (int64_t j = 0; j < n; ++j) partial[j] += aip * row[j];
                }
                for (int64_t j = 0; j < n; ++j) acc[j] += truncate_mantissa(partial[j], keep_mask);
            }
            std::copy(acc.begin(), acc.end(), c + i * ldc);
        }
    });
}

}  // namespace mpwb
