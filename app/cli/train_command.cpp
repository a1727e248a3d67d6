// mpwb-cli train: one run, with progress on stderr and an optional JSON summary on stdout.
// The run is recorded in the run store (default: the XDG data folder) unless --no-store; the
// database is opened and write-checked before the dataset loads, so a store problem costs no
// training time.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "app/cli/commands.h"
#include "app/cli/progress_printer.h"
#include "app/cli/run_context.h"
#include "app/cli/store_options.h"
#include "app/cli/training_options.h"
#include "core/common/error.h"
#include "core/train/dataset_source.h"
#include "sessions/file_identity.h"
#include "sessions/recorded_run.h"

namespace mpwb::cli {
namespace {

struct TrainArgs {
    TrainingOptions training;
    std::string backend = "auto";
    bool json = false;
    bool quiet = false;
    std::string save_network;
    StoreOptions store;
};

int run_train(const TrainArgs& args) {
    Preset preset = args.training.resolve();
    // Checked before training: the network file written at the end must not be the database.
    if (!args.save_network.empty() && !args.store.no_store)
        refuse_output_onto_database(args.save_network, args.store.database_path(),
                                    "the network (--save-network)");
    Trainer* trainer_ptr = nullptr;  // set below; the recorder's callbacks run inside run()
    auto recorder = args.store.open_recorder(preset.name + " " + precision_name(preset.training.precision),
                                             preset.name, std::nullopt, &trainer_ptr);
    const Dataset data = load_dataset(preset.training.dataset);
    auto backend = make_backend(args.backend);
    RecordedRun run(preset.network, data, preset.training, *backend, std::move(recorder));
    Trainer& trainer = run.trainer();
    trainer_ptr = &trainer;
    ProgressPrinter progress(preset.name + " " + trainer.policy().name(), args.quiet);
    run.add_observer(&progress);
    run.add_observer(run.recorder());
    RunSummary summary;
    {
        InterruptGuard guard(trainer);
        summary = trainer.run();
    }
    warn_if_boundary_not_stored(run.store_final_boundary(summary));
    if (!args.save_network.empty()) run.network().save_file(args.save_network);
    if (args.json) {
        nlohmann::json out = summary.to_json();
        out["preset"] = preset.name;
        out["precision"] = trainer.policy().name();
        out["dataset"] = data.name;
        out["backend"] = backend->name();
        out["device"] = backend->device_name();
        out["parameters"] = run.network().parameter_count();
        out["config"] = to_json(trainer.config());
        if (const RunRecorder* recorder = run.recorder()) {
            out["run_id"] = recorder->run_id();
            out["db"] = recorder->db_path();
        }
        std::printf("%s\n", out.dump(2).c_str());
    }
    if (summary.status == RunStatus::Failed) {
        std::fprintf(stderr, "mpwb-cli: error: training failed: %s\n", summary.error.c_str());
        return 1;
    }
    if (run.recorder() && !run.recorder()->complete()) {
        std::fprintf(stderr, "mpwb-cli: error: the run was not fully recorded: %s\n",
                     run.recorder()->error().c_str());
        return 1;
    }
    return 0;
}

}  // namespace

void add_train_command(CLI::App& app) {
    auto args = std::make_shared<TrainArgs>();
    auto* cmd =
        app.add_subcommand("train", "Train a network (a preset, or a network file) and print a summary");
    args->training.add_to(*cmd);
    cmd->add_option("--backend", args->backend, "cpu, cuda or auto");
    cmd->add_flag("--json", args->json, "Print the summary as one JSON object on stdout");
    cmd->add_flag("--quiet", args->quiet, "No progress output");
    cmd->add_option("--save-network", args->save_network, "Write the network description to this JSON file");
    args->store.add_to(*cmd);
    cmd->callback([args] {
        const int code = run_train(*args);
        if (code != 0) throw CLI::RuntimeError(code);
    });
}

}  // namespace mpwb::cli
