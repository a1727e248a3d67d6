// RunStatus: how a training run stands or ended. One type for the engine (RunSummary) and the
// run store (sessions/run_types.h), so code that both trains and records (the run recorder, the
// GUI controller) can include both layers. INTERRUPTED is never produced by the trainer: the
// store sets it for runs whose process died.
#pragma once

namespace mpwb {

enum class RunStatus { Running, Finished, Stopped, Failed, Interrupted };

// "RUNNING", "FINISHED", "STOPPED", "FAILED", "INTERRUPTED".
const char* run_status_name(RunStatus status);

}  // namespace mpwb
