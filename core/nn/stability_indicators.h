// How the instability indicators (stability_values.h) are computed, from values a training step
// already holds, in double on the host: the transformer block and the attention core call these
// on a statistics step, when the engine has set LayerContext::stability; on every other step the
// context's sink is null and nothing here runs.
//
// Choices (DESIGN.md, "Indicators"; docs/ARCHITECTURE.md, "Instability indicators"):
// - attention logits are the scaled scores as the softmax reads them (the same FP32 product),
//   over the positions the causal mask keeps;
// - the entropy of a head is the mean over its softmax rows (every sample and position, the
//   first position's one-token row, entropy 0, included) of -Σ p log p, from the FP32
//   probabilities before they are rounded to the storage format;
// - the outlier ratio takes each channel's RMS over every sample and position (the per-channel
//   magnitude of the outlier-feature literature: Dettmers et al. 2022, Wortsman et al. 2023),
//   its largest over its median (the mean of the two middle ones for an even width); 0 when the
//   median channel is 0;
// - log Z is log Σ exp over each row the softmax of the loss normalises (each position's
//   vocabulary for a language model).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/nn/stability_values.h"

namespace mpwb {

class Layer;

// Where layers put their indicators on a statistics step (LayerContext::stability). Each entry
// names the layer that wrote it; the engine turns those into layer indices (it knows the order).
struct StabilitySink {
    std::vector<std::pair<const Layer*, BlockStability>> blocks;
};

// The largest scale · scores[i, t, j] over sequences i, rows t and columns j ≤ t of
// [sequences, tokens, tokens] raw scores (before the softmax overwrites them).
double max_causal_logit(const float* scores, int64_t sequences, int64_t tokens, float scale);

struct HeadEntropy {
    double mean = 0, min = 0;  // over heads, of each head's mean row entropy (nats)
};
// probabilities: [samples · heads, tokens, tokens] softmax rows, masked entries 0; sequence i is
// head i % heads of sample i / heads.
HeadEntropy attention_entropy(const float* probabilities, int64_t samples, int64_t heads, int64_t tokens);

struct ResidualStability {
    double rms = 0, outlier_ratio = 0;
};
// values: [rows, channels], a row per sample and position.
ResidualStability residual_stability(const float* values, int64_t rows, int64_t channels);

// logits: [rows, classes], one softmax row each.
OutputStability output_stability(const float* logits, int64_t rows, int64_t classes);

}  // namespace mpwb
