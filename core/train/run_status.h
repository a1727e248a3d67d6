// RunStatus: how a training run stands or ended. One type for the engine (RunSummary) and the
// run store (sessions/run_types.h), so code that both trains and records (the run recorder, the
// GUI controller) can include both layers. INTERRUPTED means resumable from a checkpoint or
// cut short: the trainer ends a run so after Trainer::checkpoint_and_stop (SIGTERM), and the
// store marks so the runs whose process died.
#pragma once

namespace mpwb {

enum class RunStatus { Running, Finished, Stopped, Failed, Interrupted };

// "RUNNING", "FINISHED", "STOPPED", "FAILED", "INTERRUPTED".
const char* run_status_name(RunStatus status);

}  // namespace mpwb
