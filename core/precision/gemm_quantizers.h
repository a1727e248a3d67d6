// GemmQuantizers: everything that quantizes the operands of one GEMM — a GemmQuantizer per
// distinct recipe among its forward, data-gradient and weight-gradient passes (precision rules,
// precision_rules.h), nothing for a pass that runs unquantized in BF16, and on statistics steps
// the what-if quantizers, which quantize every operand by another recipe without the GEMM using
// the result (DESIGN.md, "Precision per layer and what-if statistics").
//
// Passes that share a recipe share its quantizer, so a per-tensor operand that two passes read is
// quantized once per step, exactly as when the run's recipe applies to the whole GEMM. A recipe's
// state (amax histories, scales) thus belongs to the passes that use it. A what-if quantizer has
// the seed and key a run in its recipe would give this GEMM, so a recipe without history records
// the statistics that run would record for the same operands, bit for bit; a what-if delayed
// recipe keeps a history of the operands it sees, on statistics steps only.
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "core/precision/gemm_quantizer.h"
#include "core/precision/scaled_recipe_config.h"
#include "core/precision/scaling_stats.h"

namespace mpwb {

// The settings each pass quantizes with, by GemmPass; empty: that pass's operands are not quantized.
using PassRecipes = std::array<std::optional<ScaledRecipeConfig>, 3>;

// The settings of each quantizer a GEMM with these pass recipes has, in slot order: one per
// distinct recipe, in the order of the first pass that uses it.
std::vector<ScaledRecipeConfig> slot_settings(const PassRecipes& passes);

// One what-if recipe at one GEMM: the recipe the user ticked and the settings its quantizer has
// at this GEMM (recipe_for_gemm: an attention product is quantized per tensor, or not at all).
struct WhatIfRecipe {
    ScaledRecipe ticked = ScaledRecipe::None;
    std::optional<ScaledRecipeConfig> settings;
};

class GemmQuantizers {
public:
    // seed and key seed stochastic rounding and Hadamard signs (the first quantizer takes key
    // itself, so a GEMM under one recipe draws as before passes had their own). bf16_passes: an
    // unquantized pass reads its operands rounded to BF16 (a scaled run's weights are FP32
    // masters and the loss gradient is FP32; a BF16 GEMM reads BF16) and a statistics step
    // records their BF16 statistics, so a run that quantizes other GEMMs shows which ones it
    // kept in BF16. Off (attention products, runs that quantize nothing): operands as stored.
    GemmQuantizers(const PassRecipes& passes, uint64_t seed, uint64_t key, bool bf16_passes);
    ~GemmQuantizers();

    // A live change: each pass's settings from the next begin_step. A quantizer whose recipe
    // some pass still uses keeps its state; one no pass uses any more is dropped.
    void set_passes(const PassRecipes& passes);
    void set_what_if(const std::vector<WhatIfRecipe>& what_if);
    // True when some pass quantizes or some what-if recipe watches.
    bool active() const;
    bool quantizes(GemmPass pass) const { return slot_of_pass_[static_cast<size_t>(pass)] >= 0; }
    // True when both passes read their operands through the same quantizer (or neither quantizes).
    bool shares(GemmPass a, GemmPass b) const {
        return slot_of_pass_[static_cast<size_t>(a)] == slot_of_pass_[static_cast<size_t>(b)];
    }

    void begin_step(int64_t step, bool take_stats);
    void end_step();
    // The operand as pass `pass` reads it (GemmQuantizer::operand), or `values` for an
    // unquantized pass; on a statistics step the what-if quantizers see it too.
    const float* operand(GemmOperand which, GemmPass pass, SumAlong along, const float* values, int64_t rows,
                         int64_t cols);
    // The settings of the pass whose operands were served last (the GEMM that follows them runs
    // with that recipe's accumulator); null when that pass is unquantized.
    const ScaledRecipeConfig* serving() const;

    // This step's statistics: each row names its recipe ("mxfp8", "bf16") and whether it is a
    // what-if row.
    std::vector<ScalingStats> stats() const;

    // The quantizers in slot order (the order of the first pass that uses each), for checkpoints.
    size_t slot_count() const { return slots_.size(); }
    GemmQuantizer& slot(size_t i) { return *slots_.at(i).quantizer; }
    const GemmQuantizer& slot(size_t i) const { return *slots_.at(i).quantizer; }
    // The quantizer pass `pass` uses; null when it is unquantized.
    GemmQuantizer* quantizer_of(GemmPass pass);
    // The quantizer of a what-if recipe at this GEMM; null when it has none here.
    const GemmQuantizer* what_if_quantizer(ScaledRecipe ticked) const;

private:
    struct Slot {
        ScaledRecipe recipe;
        std::unique_ptr<GemmQuantizer> quantizer;
    };
    struct WhatIf {
        ScaledRecipe ticked;
        std::unique_ptr<GemmQuantizer> quantizer;  // null: the recipe leaves this GEMM alone
    };
    uint64_t seed_, key_;
    bool bf16_passes_;
    std::vector<Slot> slots_;
    std::array<int, 3> slot_of_pass_{-1, -1, -1};
    std::vector<WhatIf> what_if_;
    bool take_stats_ = false;
    GemmPass last_pass_ = GemmPass::Forward;
    std::vector<ScalingStats> bf16_stats_;
    std::vector<std::pair<GemmOperand, GemmPass>> bf16_seen_;
    // This step's BF16 copies of unquantized passes' operands, by source; reused between steps.
    struct Bf16Copy {
        const float* source;
        int64_t count;
        std::vector<float> values;
    };
    std::vector<Bf16Copy> bf16_copies_;
    size_t bf16_used_ = 0;

    const float* bf16_operand(const float* values, int64_t n);
    uint64_t slot_key(size_t slot) const;
    void record_bf16(GemmOperand which, GemmPass pass, const float* values, int64_t n);
};

// What a BF16 GEMM operand is: amax, the fraction of non-zero values BF16 flushes to zero, of
// values beyond its range, and the SQNR of rounding to it (999 when lossless, as the values a
// BF16 run stores are).
ScalingStats bf16_operand_stats(const float* values, int64_t n);

}  // namespace mpwb
