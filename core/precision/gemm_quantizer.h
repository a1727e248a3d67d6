// GemmQuantizer: the operands of one layer's GEMMs under a scaled recipe (fp8-delayed,
// fp8-current, fp8-block, mxfp8, nvfp4, mxfp4), quantized and dequantized on the CPU exactly as the
// recipe stores them, with the statistics of what the quantization did.
//
// A layer's three GEMMs (Transformer Engine's Linear):
//   forward   y  = x · wᵀ   sums along x's and w's columns (in_features)
//   data grad dx = dy · w   sums along dy's columns and w's rows (out_features)
//   wgrad     dw = dyᵀ · x  sums along dy's and x's rows (the batch)
// Block scales run along the summed dimension, so block recipes quantize an operand used in two
// GEMMs twice (row-wise and column-wise copies differ, as on the hardware). Per-tensor recipes
// quantize each tensor once per step and serve both uses from that copy.
//
// The dequantized operand is returned as FP32 (q × the inverse scale), which feeds an FP32 GEMM:
// the products of FP8/FP4 values are exact in FP32, so this is the tensor-core product up to the
// order of the FP32 sum. The accumulator emulation (limited_accumulator_gemm) narrows that sum.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/numeric/format.h"
#include "core/precision/scaled_recipe_config.h"
#include "core/precision/scaling_stats.h"

namespace mpwb {

enum class GemmOperand : uint8_t { Input, Weight, OutputGrad };  // x, w, dy
enum class GemmPass : uint8_t { Forward, DataGrad, WeightGrad };
// The dimension of a row-major rows x cols operand that its GEMM sums over.
enum class SumAlong : uint8_t { Cols, Rows };

// How statistics name an operand: "x", "w", "dy"; block recipes, which quantize an operand again
// for its second GEMM, name that copy after it ("x (wgrad)", "w (dgrad)", "dy (wgrad)").
std::string gemm_operand_name(GemmOperand which, GemmPass pass, bool per_tensor);

class GemmQuantizer {
public:
    // seed: the run's seed; layer: the layer's index (both seed stochastic rounding and the
    // Hadamard signs, so a run repeats exactly).
    GemmQuantizer(const ScaledRecipeConfig& config, uint64_t seed, size_t layer);
    ~GemmQuantizer();
    GemmQuantizer(GemmQuantizer&&) noexcept;
    GemmQuantizer& operator=(GemmQuantizer&&) noexcept;

    // A live change, applied from the next begin_step. Histories survive a change of their
    // length (truncated to the newest entries).
    void set_config(const ScaledRecipeConfig& config);
    const ScaledRecipeConfig& config() const;

    // Starts step `step` (1-based). take_stats: record ScalingStats for each quantization.
    // Forgets every cached operand and the amaxes seen since the last begin_step; changes no
    // history and no scale. Evaluation calls it before each test batch and never calls end_step,
    // so evaluating leaves the recipe's state as training left it.
    void begin_step(int64_t step, bool take_stats);
    // The dequantized copy of values (rows x cols, row-major) for `pass`, which sums along
    // `along`. The pointer stays valid until the next begin_step. The weight-gradient pass of
    // nvfp4 and mxfp4 with hadamard returns the transformed values (the transform cancels in
    // dyᵀ · x).
    const float* operand(GemmOperand which, GemmPass pass, SumAlong along, const float* values, int64_t rows,
                         int64_t cols);
    // Ends the step: fp8-delayed appends this step's amax of each tensor to its history.
    void end_step();

    // The statistics taken since begin_step (empty unless take_stats).
    const std::vector<ScalingStats>& stats() const;
    // The scale each per-tensor operand will use next step (fp8-delayed), for tests and the GUI.
    float next_scale(GemmOperand which) const;
    // The amax history of a per-tensor operand, oldest first.
    std::vector<float> amax_history(GemmOperand which) const;

    // What carries from one step to the next, for checkpoints: each per-tensor operand's amax
    // history and the scale of the last step that ended. Block recipes keep nothing between
    // steps, and stochastic rounding draws from (seed, layer, step), so nothing else is needed.
    struct SavedState {
        std::array<std::vector<float>, 3> histories;  // x, w, dy (GemmOperand order); oldest first
        std::array<float, 3> scales{1.0f, 1.0f, 1.0f};
    };
    SavedState save_state() const;
    // Between steps, after set_config with the settings the saved run had reached. Throws
    // DataError naming the operand and the value, and keeps the state it had, for a state these
    // settings cannot have left: a scale that is not positive and finite, a negative amax, an
    // amax history under a block recipe.
    void load_state(const SavedState& state);

private:
    struct State;
    std::unique_ptr<State> state_;
};

// C[m,n] = op(A)[m,k] · op(B)[k,n] (row-major, as Backend::gemm with alpha 1, beta 0) with each
// run of `interval` products summed in a partial sum that keeps `mantissa_bits` bits
// (truncated, as the tensor core does) and then added into an FP32 accumulator.
void limited_accumulator_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                              int mantissa_bits, int64_t interval);

}  // namespace mpwb
