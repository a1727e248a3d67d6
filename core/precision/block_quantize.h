// Block quantization for the scaled recipes (DESIGN.md, "Scaled low-precision formats"): the free
// functions GemmQuantizer composes. Per-tensor FP8 with one FP32 scale; tiles of 1xB along the
// summed dimension of a row-major operand (or Bx1 when it sums along its rows); BxB blocks for
// weights; their scales as FP32 (fp8-block), E8M0 (MX, FLOOR or RCEIL) or the NVFP4 two-level
// scale (an FP32 per-tensor scale times an E4M3 block scale, optionally chosen per block by
// "4 over 6"); and the 16-point Hadamard transform of NVFP4 and MXFP4. Every result is the dequantized value
// (q times the inverse scale, in FP32) that the GEMM consumes. Loops are templates over the element format
// with the rounding inlined, so they vectorise; statistics cost extra work only when asked for.
#pragma once
#include <array>
#include <cstdint>

#include "core/numeric/format.h"
#include "core/precision/gemm_quantizer.h"

namespace mpwb {

// How a block's amax becomes its scale.
enum class BlockScaleRule : uint8_t {
    Fp32,            // fp8-block: scale = 448 / amax (TE's guards: amax 0, inf or NaN -> 1)
    Fp32PowerOfTwo,  // the same rounded down to a power of two
    E8M0Floor,       // MX, OCP: X = 2^(floor(log2 amax) - emax_elem)
    E8M0RCeil,       // MX, cuBLAS: the smallest power of two X with amax / X <= the element max
    NvFp4,           // E4M3(amax / 6 / s_tensor), elements divided by (block scale * s_tensor)
    // NvFp4 with 4 over 6 (arXiv 2512.02010): each block is quantized with the block scale above
    // (its maximum maps to 6) and with E4M3(amax / 6 / s_tensor * 1.5) (maximum to 4), and keeps
    // the one whose dequantized values are closer to x (QuantizeOptions::four_over_six_error,
    // summed in float64 over the block, rows then columns); a tie keeps 6. s_tensor comes from
    // nvfp4_tensor_scale(amax, true).
    NvFp4FourOverSix,
};

// Extent of one block in rows and columns: 1xB along Cols, Bx1 along Rows, BxB for weights.
struct BlockShape {
    int64_t rows = 1;
    int64_t cols = 1;
};
// The 1 x length tile of an operand that sums along `along` (length x 1 when it sums its rows).
BlockShape tile_along(SumAlong along, int64_t length);

struct QuantizeOptions {
    Format element = Format::E4M3;  // E4M3, E5M2 or E2M1
    // Round stochastically with counter_random_bits(random_key, linear element index) instead of
    // to nearest even; the index makes the result independent of the thread count.
    bool stochastic = false;
    uint64_t random_key = 0;
    // NvFp4 only: the FP32 per-tensor scale (nvfp4_tensor_scale).
    float tensor_scale = 1.0f;
    // NvFp4FourOverSix only: how the two candidates of a block are compared.
    FourOverSixError four_over_six_error = FourOverSixError::Mse;
    // When set, filled with everything but `operand` (the caller names it).
    ScalingStats* stats = nullptr;
};

// Largest |x|, as a float; a NaN anywhere gives NaN (then inf beats every finite value).
float amax_of(const float* x, int64_t n);

// fp8-delayed / fp8-current: element_max / amax / 2^margin in FP32; an amax of 0 or a non-finite
// amax keeps `previous`; a scale that overflows FP32 becomes FLT_MAX (as Transformer Engine).
float per_tensor_scale(float amax, float element_max, int margin, float previous);

// q = sat(round(x * scale)); out = q * (1 / scale) with the inverse rounded to FP32 once, as
// Transformer Engine keeps scale_inv. `amax` (of x) only feeds the statistics. in == out allowed.
void quantize_per_tensor(const float* x, float* out, int64_t n, float scale, float amax,
                         const QuantizeOptions& opt);

// rows x cols row-major x quantized in blocks of `block` (tail blocks of a row or column are
// partial blocks of their own), each with its own scale by `rule`. in == out allowed.
void quantize_blocks(const float* x, float* out, int64_t rows, int64_t cols, BlockShape block,
                     BlockScaleRule rule, const QuantizeOptions& opt);

// The scale of one block, as the quantizer uses it: elements are multiplied by `multiplier` (or
// divided by it for NvFp4) and dequantized as q * dequant * post, post being the NvFp4 tensor
// scale and 1 otherwise. NvFp4FourOverSix gives the map-to-6 candidate here (nvfp4_block_scale
// gives either). `dequant` is the block scale the statistics histogram (MX: X; NvFp4:
// the E4M3 block scale; fp8-block: 1 / scale).
struct BlockScale {
    float multiplier;
    float dequant;
};
BlockScale block_scale(BlockScaleRule rule, float amax, Format element, float tensor_scale);
// The E8M0 code of an MX block with amax `amax`: 0xFF for NaN or inf; 0 (2^-127) for amax 0;
// clamped to [-127, 127] otherwise.
uint8_t mx_scale_code(float amax, Format element, bool rceil);
// NVFP4's block scale with the block maximum mapped to 6 (expansion 1) or to 4 (expansion 1.5):
// E4M3(amax / 6 / tensor_scale * expansion), each step in FP32, as Transformer Engine and the
// 4-over-6 paper's code compute it.
BlockScale nvfp4_block_scale(float amax, float tensor_scale, float expansion);
// NVFP4's FP32 per-tensor scale amax / (448 * 6), or amax / (256 * 6) under 4 over 6 (so that a
// block scale 1.5 times the largest still fits E4M3: 1.5 * 256 <= 448); 1 for an amax of 0, a
// non-finite amax, or a quotient below the smallest normal FP32.
float nvfp4_tensor_scale(float amax, bool four_over_six = false);
inline constexpr float kFourOverSixExpansion = 1.5f;
inline constexpr float kFourOverSixScaleBound = 256.0f;
// floor(log2 of the largest finite element) of E4M3 (8), E5M2 (15), E2M1 (2).
int element_emax(Format element);
float element_max(Format element);

// The random Hadamard transform's 16 signs +-1, drawn from seed (HadamardSigns::Random).
std::array<float, 16> hadamard_signs(uint64_t seed);
// All +1: the transform is then the plain normalised H16 / 4 (HadamardSigns::Fixed).
std::array<float, 16> fixed_hadamard_signs();
// out = (H16 · diag(signs) / 4) applied to every run of 16 rows of each column (the summed
// dimension of the weight-gradient GEMM); a tail of fewer than 16 rows is copied unchanged. The
// transform is orthogonal, so (T dy)ᵀ (T x) = dyᵀ x. in == out allowed.
void hadamard16_along_rows(const float* x, float* out, int64_t rows, int64_t cols,
                           const std::array<float, 16>& signs);

}  // namespace mpwb
