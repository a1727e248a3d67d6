// What one run from the command line needs: the resolved preset, the dataset, the network and
// the backend, with SIGINT turned into a clean stop between steps.
#pragma once
#include <memory>

#include "core/backend/backend.h"
#include "core/data/dataset.h"
#include "core/nn/network.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "sessions/run_recorder.h"

namespace mpwb::cli {

// The backend by name ("cpu", "cuda", "auto"); "auto" and "cuda" fall back to the CPU with one
// line on stderr saying why, when no GPU can be used.
std::unique_ptr<Backend> make_backend(const std::string& name);

// After a recorded run on a 2-D classification set: stores the final weights' decision boundary
// with the run, as the workbench does, so the run reopened there shows it. A store that refuses
// is a warning on stderr, not a failed run.
void record_final_boundary(const RunRecorder* recorder, Network& network, Backend& backend, const PrecisionPolicy& policy,
                           const Dataset& data, int64_t step);

// Routes Ctrl-C to trainer->stop() while it lives; a second Ctrl-C kills the process.
class InterruptGuard {
public:
    explicit InterruptGuard(Trainer& trainer);
    ~InterruptGuard();
};

}  // namespace mpwb::cli
