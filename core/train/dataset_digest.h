// dataset_digest: a 64-bit digest of the data a run trains on (every split's shape and values,
// the class count, a text dataset's vocabulary), which its checkpoints keep, so a resume can
// tell that the file under the same path now holds other values (same row count, other numbers)
// instead of continuing silently. A change detector for our own files, not a cryptographic hash:
// fast enough that a dataset of hundreds of megabytes costs a fraction of a second.
#pragma once
#include <cstdint>
#include <string>

#include "core/data/dataset.h"

namespace mpwb {

uint64_t dataset_digest(const Dataset& data);

// The digest as 16 hex digits, as messages and events show it.
std::string digest_text(uint64_t digest);

}  // namespace mpwb
