// mpwb-cli sweep collect: import the task databases of a cluster sweep (task_*.sqlite in a
// folder) into the user's store as one sweep, and report which planned runs are missing or
// unfinished.
#pragma once
#include <CLI/CLI.hpp>

namespace mpwb::cli {

// Adds `collect` to the `sweep` subcommand.
void add_sweep_collect_command(CLI::App& sweep);

}  // namespace mpwb::cli
