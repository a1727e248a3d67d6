// Training a recorded run that can be interrupted and continued: the one path `mpwb-cli train`,
// `train --resume` and `sweep task` share. Checkpoints go into the run store with the run
// (Trainer::set_checkpoint_policy). SIGINT stops between steps (STOPPED); SIGTERM, which Slurm
// sends on preemption and before a time limit, takes a checkpoint and ends the run INTERRUPTED
// with exit status kExitResumable, so a job script can requeue the task and the next start
// continues the same run, bit for bit on the CPU.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/train/trainer.h"
#include "resources/presets.h"
#include "sessions/run_store.h"

namespace mpwb::cli {

// EX_TEMPFAIL from sysexits.h: the run was checkpointed and can be resumed.
inline constexpr int kExitResumable = 75;

struct ResumableTrainingOptions {
    std::string db;  // empty: default_database_path()
    std::string backend = "auto";
    bool quiet = false;  // no progress on stderr
    bool json = false;   // the summary as one JSON object on stdout
    Trainer::CheckpointPolicy checkpoints;
    std::string run_name;           // new runs only; empty: "<preset> <precision>"
    std::vector<std::string> tags;  // new runs only; key or key=value
    // Added for `train`: train without recording (new runs only; no checkpoints are kept), and
    // write the network description to this file at the end.
    bool no_store = false;
    std::string save_network;
    // Resumes only: continue on data whose digest differs from the data the run trained on
    // (ResumeOptions::allow_changed_data), with a warning and a "data_changed" event, instead of
    // refusing.
    bool allow_changed_data = false;
    // Test hook (Trainer::hold_after_step): the run holds after this many steps (0 = never) until
    // a signal stops it, so a test can interrupt a run that is certainly still going.
    std::int64_t hold_after_step = 0;
    // How long a write waits for another process's commit before it counts as failed: the
    // store's 2 s, longer for a sweep's tasks, which share one database.
    int busy_timeout_ms = RunStore::Options{}.busy_timeout_ms;
};

// --checkpoint-every, --checkpoint-minutes and the hidden --hold-after-step, shared by `train` and
// `sweep task`.
void add_checkpoint_options(CLI::App& cmd, ResumableTrainingOptions& options);

struct ResumableTrainingResult {
    int exit_code = 0;  // 0, 1 (failed or not fully recorded) or kExitResumable
    std::int64_t run_id = 0;
    RunSummary summary;
};

// A new run of the preset. on_created is called with the run's id as soon as the store has it
// (before the first step), e.g. to add it to a sweep.
ResumableTrainingResult train_new_run(const Preset& preset, const ResumableTrainingOptions& options,
                                      const std::function<void(std::int64_t run_id)>& on_created = {});
// Continues an INTERRUPTED or STOPPED run of an existing store (never one it creates) from its
// newest checkpoint, with the network, dataset and settings the run recorded; when that
// checkpoint is damaged (DataError from Trainer::resume_from) it says so and goes on from the one
// before. Error naming the run when it has no checkpoint, none that restores, or cannot be
// resumed (FINISHED, FAILED, still running in another process, which it names), and the run is
// left as it was. Without a checkpoint policy in `options`, the run keeps the one it was started
// with (its tags checkpoint_every and checkpoint_seconds), so it still ends with a final
// checkpoint.
ResumableTrainingResult resume_run(std::int64_t run_id, const ResumableTrainingOptions& options);

}  // namespace mpwb::cli
