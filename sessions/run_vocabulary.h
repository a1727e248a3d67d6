// The vocabulary a text run trained with, as the run store keeps it: RunRecorder writes it into
// the run's versions_json (beside its sample counts, so bundles carry it), and `generate`, the
// Samples tab and the PyTorch export read it back here, so every reader maps ids to text as the
// run did.
#pragma once
#include <optional>

#include "core/data/vocabulary.h"
#include "sessions/run_types.h"

namespace mpwb {

// The key of versions_json that holds Vocabulary::to_json().
inline constexpr const char* kRunVocabularyKey = "vocabulary";

// The run's vocabulary; nullopt for a run on a dataset that is not text. ConfigError naming the
// run and the field when versions_json or the vocabulary in it is malformed.
std::optional<Vocabulary> run_vocabulary(const Run& run);

}  // namespace mpwb
