// mpwb-cli train: one run, with progress on stderr and an optional JSON summary on stdout, or
// with --resume, a stored run continued from its newest checkpoint. The run is recorded in the
// run store (default: the XDG data folder) unless --no-store; the database is opened and
// write-checked before the dataset loads, so a store problem costs no training time. Training
// itself is resumable_training.cpp's, which `sweep task` shares.
#include <memory>
#include <set>
#include <string>

#include "app/cli/commands.h"
#include "app/cli/option_checks.h"
#include "app/cli/resumable_training.h"
#include "app/cli/store_options.h"
#include "app/cli/training_options.h"
#include "core/common/error.h"

namespace mpwb::cli {
namespace {

struct TrainArgs {
    TrainingOptions training;
    ResumableTrainingOptions run;
    StoreOptions store;
    std::int64_t resume = 0;
};

// A resumed run keeps the settings it was started with: every option that would define another
// run is refused by name, only where and how it trains may be given again.
void refuse_run_settings_with_resume(const CLI::App& cmd) {
    static const std::set<std::string> allowed = {"--resume",
                                                  "--db",
                                                  "--backend",
                                                  "--quiet",
                                                  "--json",
                                                  "--help",
                                                  "--checkpoint-every",
                                                  "--save-network",
                                                  "--checkpoint-minutes",
                                                  "--allow-changed-data",
                                                  "--hold-after-step"};
    for (const CLI::Option* option : cmd.get_options()) {
        if (option->count() == 0) continue;
        // The long name: get_name() is empty for a hidden option (--hold-after-step).
        const auto& long_names = option->get_lnames();
        const std::string shown = long_names.empty() ? option->get_name() : "--" + long_names.front();
        if (!allowed.count(shown))
            throw ConfigError(
                shown +
                " cannot be used with --resume: a resumed run keeps the network and settings it "
                "was started with (only --db, --backend, --quiet, --json, --save-network, "
                "--allow-changed-data and --checkpoint-* may be given)");
    }
}

int run_train(const CLI::App& cmd, TrainArgs& args) {
    ResumableTrainingOptions& options = args.run;
    options.db = args.store.db;
    options.no_store = args.store.no_store;
    options.run_name = args.store.run_name;
    options.tags = args.store.tags;
    if (args.resume > 0) {
        refuse_run_settings_with_resume(cmd);
        return resume_run(args.resume, options).exit_code;
    }
    if (options.allow_changed_data)
        throw ConfigError("--allow-changed-data applies to --resume: a new run trains on the data as it is");
    return train_new_run(args.training.resolve(), options).exit_code;
}

}  // namespace

void add_train_command(CLI::App& app) {
    auto args = std::make_shared<TrainArgs>();
    auto* cmd =
        app.add_subcommand("train", "Train a network (a preset, or a network file) and print a summary");
    args->training.add_to(*cmd);
    cmd->add_option("--backend", args->run.backend, "cpu, cuda or auto");
    cmd->add_flag("--json", args->run.json, "Print the summary as one JSON object on stdout");
    cmd->add_flag("--quiet", args->run.quiet, "No progress output");
    cmd->add_option("--save-network", args->run.save_network,
                    "Write the network description to this JSON file");
    args->store.add_to(*cmd);
    add_checkpoint_options(*cmd, args->run);
    cmd->add_option("--resume", args->resume,
                    "Continue this INTERRUPTED or STOPPED run from its newest checkpoint, with the settings "
                    "it was started with")
        ->check(whole_number(1));
    cmd->add_flag("--allow-changed-data", args->run.allow_changed_data,
                  "With --resume: continue although the data differs from the data the run trained on "
                  "(same size, other values), with a warning; without it such a resume is refused");
    cmd->callback([args, cmd] {
        const int code = run_train(*cmd, *args);
        if (code != 0) throw CLI::RuntimeError(code);
    });
}

}  // namespace mpwb::cli
