// What a trained language model predicts at every position of one window of token ids: the most
// likely next token, in FP32 on the CPU. The report shows a text run's test windows with these
// beside the true next tokens (where an image run's report would show its inputs); the report
// layer has no backend of its own, so the forward pass is set up here.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/nn/network.h"

namespace mpwb {

// One id per position of `window` (at most the network's context positions): the argmax of the
// logits there (the lower id on a tie). ConfigError for a network that is not a language model
// ([T] ids in, [T, V] logits out), an empty or too long window, or an id outside the vocabulary.
std::vector<int32_t> predict_next_tokens(Network& network, std::span<const int32_t> window);

}  // namespace mpwb
