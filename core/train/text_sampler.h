// Sampling text from a language model: a network whose per-sample input is [T] token ids and
// whose output is [T, V] logits. Used by `mpwb-cli generate` on a run's final weights and by the
// trainer's samples after each evaluation. The network's input length is fixed when it is built,
// so a prompt shorter than T sits at positions 0..p-1 with the rest padded: causal attention makes
// the logits at p-1 independent of the padding, which the tests check. Longer text keeps its last
// T tokens, as nanoGPT's sampler crops its context.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/backend/backend.h"
#include "core/nn/network.h"
#include "core/precision/precision_policy.h"
#include "core/train/sampling_settings.h"

namespace mpwb {

// The next-token distribution after `context` (its last T tokens), in FP32 logits.
std::vector<float> next_token_logits(Network& network, Backend& backend, const PrecisionPolicy& policy,
                                     std::span<const int32_t> context);

// Draws one token id from logits under the settings' temperature and top-k.
int32_t draw_token(std::span<const float> logits, const SamplingSettings& settings, Rng& rng);

// The prompt's continuation: settings.tokens ids (the prompt not included). The prompt must be
// non-empty and every id below the network's vocabulary (ConfigError otherwise).
std::vector<int32_t> sample_tokens(Network& network, Backend& backend, const PrecisionPolicy& policy,
                                   std::span<const int32_t> prompt, const SamplingSettings& settings);

}  // namespace mpwb
