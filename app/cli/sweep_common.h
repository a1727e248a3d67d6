// Helpers shared by the `sweep` subcommands (sweep_command.cpp, sweep_collect.cpp).
#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "sessions/run_store.h"

namespace mpwb::cli {

inline std::string database_or_default(const std::string& db) {
    return db.empty() ? default_database_path() : db;
}

// Runs `run(*args)` as the subcommand's callback; a non-zero result becomes the exit code.
template <class Args, class F>
void on_run(CLI::App* cmd, std::shared_ptr<Args> args, F run) {
    cmd->callback([args, run] {
        const int code = run(*args);
        if (code != 0) throw CLI::RuntimeError(code);
    });
}

}  // namespace mpwb::cli
