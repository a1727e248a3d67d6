// ScalingStats: what a scaled recipe's quantization of one GEMM operand did, on a statistics step
// (GemmQuantizer takes them; the trainer hands them to observers, the run store keeps them). A
// plain value header of its own, so that the run records (core/train/run_records.h) carry it
// without the quantizer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/numeric/format.h"

namespace mpwb {

// What one quantization of one operand did (DESIGN.md, "Statistics of the scaling").
struct ScalingStats {
    // "x", "w", "dy" for the forward / data-grad copies; block recipes add the second copy as
    // "x (wgrad)", "w (dgrad)", "dy (wgrad)".
    std::string operand;
    Format element = Format::E4M3;
    float amax = 0;  // of the values before quantization
    // Per-tensor recipes: the scale used (q = x · scale); nvfp4: s_tensor; other block recipes: 0.
    float scale = 1;
    int64_t values = 0;
    double underflow_fraction = 0;  // of the non-zero values, those that quantize to zero
    double saturate_fraction = 0;   // of all values, those clamped at the element maximum
    double sqnr_db = 0;             // 10 log10(Σx² / Σ(x − deq(q(x)))²); +inf stored as 999
    // Block recipes: blocks, blocks whose maximum clips, and the histogram of the block scales'
    // exponents (floor(log2 scale)), one bin per power of two starting at block_exponent_min.
    int64_t blocks = 0;
    int64_t clipped_blocks = 0;
    int block_exponent_min = 0;
    std::vector<int64_t> block_exponent_counts;
    // nvfp4 with 4 over 6: the blocks that kept the candidate with their maximum mapped to 4.
    int64_t blocks_scaled_to_4 = 0;
    // The recipe that took them ("mxfp8"; "bf16" for an operand a precision rule keeps
    // unquantized in a run that quantizes other GEMMs), and whether the GEMM did not use them:
    // a what-if recipe's view of the same operand. Empty recipe: recorded before recipes were
    // named per row (the run's own).
    std::string recipe = {};
    bool what_if = false;
};

// The statistics of one quantization, with the index of the layer whose GEMM it fed and that
// GEMM's name within the layer ("attn.qkv"; empty for a layer's one unnamed GEMM).
struct LayerScalingStats {
    size_t layer = 0;
    ScalingStats stats;
    std::string gemm = {};
};

}  // namespace mpwb
