// Causal multi-head self-attention's inner part, on heads laid out one after another
// ([sample · head, T, head size], row-major): the two attention products (scores = Q·Kᵀ and
// out = P·V) as batched GEMMs through the LayerContext, the causal softmax in FP32, attention
// dropout, and their backward passes. The transformer block (transformer_block.h) owns the
// projections, norms and residuals around it; this file is separate so each stays short.
//
// Numerics (DESIGN.md, "Sequences and transformers"): scores are scaled by 1/sqrt(head size), the
// causal mask and the softmax run in FP32 with the row maximum subtracted; the probabilities are
// stored in the context's storage format. Each product's operands go through its own quantizer
// (the context's quantizers_of the GEMM's index) when the recipe quantizes attention.
#pragma once
#include <cstdint>

#include "core/nn/layer.h"

namespace mpwb {

// Selects the quantizer of one of the layer's GEMMs for the operands and products run while it
// lives, and restores the one before.
class SelectGemm {
public:
    SelectGemm(LayerContext& ctx, size_t gemm) : ctx_(ctx), before_(ctx.quantizers) {
        ctx.quantizers = ctx.quantizers_of(gemm);
    }
    ~SelectGemm() { ctx_.quantizers = before_; }
    SelectGemm(const SelectGemm&) = delete;
    SelectGemm& operator=(const SelectGemm&) = delete;

private:
    LayerContext& ctx_;
    GemmQuantizers* before_;
};

struct AttentionShape {
    int64_t sequences = 0;  // samples × heads
    int64_t tokens = 0;     // T
    int64_t head_size = 0;  // d / heads
};

// Which of the layer's GEMMs (indices into Layer::gemms()) are the two products.
struct AttentionGemms {
    size_t scores = 0;
    size_t values = 0;
};

// What the forward pass keeps for backward; sized by attention_forward.
struct AttentionSaved {
    Tensor probabilities;  // P [sequences, T, T], masked entries 0, in the storage format
    Tensor dropped;        // P · mask when attention dropout is active (else empty)
    Tensor mask;           // the dropout mask: 0 or 1 / (1 - p)
    Tensor scratch;        // dP and dS in backward
};

// The instability indicators of the attention core (stability_indicators.h), asked for on a
// statistics step: heads is given, the rest is written.
struct AttentionStability {
    int64_t heads = 1;  // sequence i is head i % heads
    double logit_max = 0;
    double entropy_mean = 0, entropy_min = 0;
};

// out = dropout(softmax(mask(Q·Kᵀ / sqrt(head size)))) · V; q, k, v and out are
// [sequences, T, head size]. stability (may be null) receives the indicators.
void attention_forward(LayerContext& ctx, const AttentionGemms& gemms, const AttentionShape& shape,
                       float dropout, const float* q, const float* k, const float* v, float* out,
                       AttentionSaved& saved, AttentionStability* stability = nullptr);

// Given dout, writes dq, dk and dv (each [sequences, T, head size]). q, k, v are the forward's.
void attention_backward(LayerContext& ctx, const AttentionGemms& gemms, const AttentionShape& shape,
                        const float* q, const float* k, const float* v, const float* dout, float* dq,
                        float* dk, float* dv, AttentionSaved& saved);

// Head layout: rows [samples · T, ld] hold head h of a sample in columns [col0 + h · head size,
// col0 + (h + 1) · head size); heads is [samples · heads, T, head size].
struct HeadLayout {
    int64_t samples = 0, tokens = 0, heads = 0, head_size = 0;
    int64_t ld = 0;    // row stride of the row-major array
    int64_t col0 = 0;  // first column of head 0
};
void split_heads(const HeadLayout& layout, const float* rows, float* heads);
void merge_heads(const HeadLayout& layout, const float* heads, float* rows);

}  // namespace mpwb
