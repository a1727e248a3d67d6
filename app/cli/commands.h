// The subcommands of mpwb-cli. Each returns the process exit code and reports errors on stderr.
#pragma once
#include <CLI/CLI.hpp>

namespace mpwb::cli {

void add_train_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_runs_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_selftest_command(CLI::App& app);
void add_generate_command(CLI::App& app);
// plan, run, task, collect (sweep_command.cpp); slurm and status (sweep_cluster.cpp)
void add_sweep_command(CLI::App& app);

}  // namespace mpwb::cli
