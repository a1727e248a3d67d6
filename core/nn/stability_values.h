// The instability indicators of a transformer as plain values (DESIGN.md, "Sequences and
// transformers", "Indicators"; Wortsman et al., arXiv 2309.14322): what the host engine measures
// on a statistics step and the run records carry to the store and the views. Separate from
// stability_indicators.h (how they are computed) so run_records.h stays a plain value header.
#pragma once
#include <cstddef>
#include <vector>

namespace mpwb {

// One TransformerBlock's indicators from one forward pass.
struct BlockStability {
    size_t layer = 0;  // the block's index in the network
    // The largest attention logit: the scaled score q·k / sqrt(head size) before the mask and the
    // softmax, over the positions the causal mask keeps.
    double attn_logit_max = 0;
    // The attention entropy -Σ p log p (nats) of each softmax row, averaged over the rows of a
    // head (every sample and position); the mean and the smallest of those head means.
    double attn_entropy_mean = 0, attn_entropy_min = 0;
    // The residual stream at the block's output: its RMS over every element, and its outlier
    // ratio: the largest per-channel RMS (over samples and positions) over the median one.
    double residual_rms = 0, outlier_ratio = 0;
};

// The network's output logits: the largest one and the mean log Z (log-sum-exp of each row the
// softmax of the loss normalises).
struct OutputStability {
    double logit_max = 0, log_z_mean = 0;
};

struct StabilityIndicators {
    std::vector<BlockStability> blocks;  // in layer order
    bool has_output = false;             // a softmax cross-entropy loss
    OutputStability output;
    bool empty() const { return blocks.empty() && !has_output; }
};

}  // namespace mpwb
