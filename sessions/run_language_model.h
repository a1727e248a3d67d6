// A text run's trained model, ready to sample from: its network built from the stored description,
// loaded with its final weights, and the vocabulary it trained with. `mpwb-cli generate` and the
// workbench's Samples tab (after training) read a run through this one function, so both map ids
// to text as the run did.
#pragma once
#include <cstdint>

#include "core/data/vocabulary.h"
#include "core/nn/network.h"
#include "sessions/run_store.h"

namespace mpwb {

struct RunLanguageModel {
    Network network;
    Vocabulary vocabulary;
    int64_t step = 0;  // the step the weights are from
};

// Error naming the run: no such run, not a text run (no stored vocabulary), no final weights (and
// why), a description or weights that do not fit each other, or a network that is not a language
// model ([T] token ids in, [T, V] logits out with V the vocabulary's size).
RunLanguageModel load_run_language_model(RunStore& store, int64_t run_id);

}  // namespace mpwb
