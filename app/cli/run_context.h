// What one run from the command line needs around its RecordedRun: the backend by name, the
// warning for a boundary the store refused, SIGINT turned into a clean stop between steps and
// SIGTERM into a checkpoint.
#pragma once
#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "core/train/trainer.h"

namespace mpwb::cli {

// The backend by name ("cpu", "cuda", "auto"); "auto" and "cuda" fall back to the CPU with one
// line on stderr saying why, when no GPU can be used.
std::unique_ptr<Backend> make_backend(const std::string& name);

// `why` is RecordedRun::store_final_boundary's answer: a store that refused the decision boundary
// is a warning on stderr, not a failed run. Nothing when `why` is empty.
void warn_if_boundary_not_stored(const std::string& why);

// While it lives: Ctrl-C (SIGINT) stops the trainer between steps (STOPPED), and a second Ctrl-C
// kills the process; SIGTERM (Slurm's preemption, `kill`) has it checkpoint and end INTERRUPTED
// (Trainer::checkpoint_and_stop, which a signal handler may call).
class InterruptGuard {
public:
    explicit InterruptGuard(Trainer& trainer);
    ~InterruptGuard();
};

}  // namespace mpwb::cli
