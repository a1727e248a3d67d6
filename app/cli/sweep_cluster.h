// mpwb-cli sweep slurm and sweep status: a sweep as one Slurm job array. `sweep slurm` writes a
// folder with a copy of the spec, a fixed sweep uuid and an sbatch script (one array task per
// planned run, each into its own database, requeued after a checkpoint on SIGTERM) and can submit
// it; `sweep status` reports each array task through sacct, or squeue where accounting is off,
// and the task databases. docs/SLURM.md describes the workflow.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpwb::cli {

// Adds `slurm` and `status` to the `sweep` subcommand.
void add_sweep_cluster_commands(CLI::App& sweep);

// What the job-array script needs; the Slurm options are left out of the script when empty.
struct SlurmArraySettings {
    std::string mpwb_cli;    // absolute path of the program the tasks run
    std::string out_dir;     // absolute; holds spec.json, the task databases and the logs
    std::string sweep_uuid;  // the same in every task database, so they collect into one sweep
    std::int64_t run_count = 0;
    std::string partition, gres, time;
    std::optional<int> cpus_per_task;
    std::optional<std::int64_t> checkpoint_every;  // passed on to `sweep task`
    // Tests only: array task hold_index pauses after step hold_step of its first attempt until
    // SIGTERM (`sweep task --hold-after-step`), so it is certainly running when preempted.
    std::optional<std::int64_t> hold_index, hold_step;
};

// The sbatch script of the array (docs/SLURM.md explains each line). Values on shell lines are
// single-quoted; values on #SBATCH lines, which sbatch reads itself, are escaped for sbatch, and
// '%' of the folder doubled in the --output file name pattern. Throws Error naming the option
// when a value cannot be written safely: a control character anywhere, a backslash in the
// folder (it turns off Slurm's %a), "hetjob" or "packjob" on an #SBATCH line (sbatch starts
// another job there), a sweep uuid that is not one.
std::string slurm_array_script(const SlurmArraySettings& settings);

// The array task indices of a Slurm job id as sacct prints it: "12_3" -> {3}, "12_[0-2,5%2]" ->
// {0,1,2,5}; empty for an id of another job or one without an array index.
std::vector<std::int64_t> array_indices_of(const std::string& slurm_job_id, const std::string& array_job_id);

}  // namespace mpwb::cli
