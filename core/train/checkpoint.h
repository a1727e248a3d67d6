// TrainingCheckpoint: everything a run needs to continue after its process ends (a SIGTERM from
// Slurm's preemption, a crash after the last checkpoint, a user's stop) so that the continued
// run is bit-identical, on the CPU, to one never interrupted. The position sits in plain fields
// (the store keeps them in columns); the rest is one versioned binary state written and read
// only by the Trainer (checkpoint.cpp): the master weights and every reduced copy, layer buffers
// (BatchNorm's running statistics), the optimizer's state, the loss scaler's state, a scaled
// recipe's amax histories and scales, the dropout generator, the live settings the run had
// reached (config after live changes, the learning-rate factor), the summary's running sums and
// the digest of the data the run trained on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/network_weights.h"

namespace mpwb {

struct TrainingCheckpoint {
    int64_t step = 0;            // steps completed; the resumed run's first step is step + 1
    int64_t epoch = 0;           // the epoch the next step belongs to
    int64_t batch = 0;           // the next step's batch index within that epoch
    double wall_seconds = 0;     // the run's time so far; the resumed run's wall time goes on from it
    std::vector<uint8_t> state;  // see above; checked on load (magic, version, sizes, checksum)
    // Where it was read from ("database runs.sqlite, run 3, checkpoint at step 75"), for the
    // messages of a restore that refuses it; empty for one a trainer has just handed over.
    std::string source;
};

// A digest of the master weights (and layer buffers) in a checkpoint's state, as hex text: two
// runs whose final checkpoints have the same digest ended with bit-identical weights, whatever
// their wall times. Throws Error for a damaged state.
std::string weights_digest(const TrainingCheckpoint& checkpoint);
// The same digest of the weights a run ended with (TrainingObserver::on_final_weights), so a run
// that kept no checkpoint has one too, equal to the one its final checkpoint would have had.
std::string weights_digest(const NetworkWeights& weights);

}  // namespace mpwb
