// mpwb-cli train: one run, with progress on stderr and an optional JSON summary on stdout.
#include <cstdio>
#include <memory>

#include "app/cli/commands.h"
#include "app/cli/progress_printer.h"
#include "app/cli/run_context.h"
#include "app/cli/training_options.h"
#include "core/train/dataset_source.h"

namespace mpwb::cli {
namespace {

struct TrainArgs {
    TrainingOptions training;
    std::string backend = "auto";
    bool json = false;
    bool quiet = false;
    std::string save_network;
};

int run_train(const TrainArgs& args) {
    Preset preset = args.training.resolve();
    Dataset data = load_dataset(preset.training.dataset);
    Network net = Network::from_json(preset.network);
    auto backend = make_backend(args.backend);
    Trainer trainer(net, data, preset.training, *backend);
    ProgressPrinter progress(preset.name + " " + trainer.policy().name(), args.quiet);
    trainer.add_observer(&progress);
    RunSummary summary;
    {
        InterruptGuard guard(trainer);
        summary = trainer.run();
    }
    if (!args.save_network.empty()) net.save_file(args.save_network);
    if (args.json) {
        nlohmann::json out = summary.to_json();
        out["preset"] = preset.name;
        out["precision"] = trainer.policy().name();
        out["dataset"] = data.name;
        out["backend"] = backend->name();
        out["device"] = backend->device_name();
        out["parameters"] = net.parameter_count();
        out["config"] = to_json(trainer.config());
        std::printf("%s\n", out.dump(2).c_str());
    }
    if (summary.status == RunStatus::Failed) {
        std::fprintf(stderr, "mpwb-cli: error: training failed: %s\n", summary.error.c_str());
        return 1;
    }
    return 0;
}

}  // namespace

void add_train_command(CLI::App& app) {
    auto args = std::make_shared<TrainArgs>();
    auto* cmd = app.add_subcommand("train", "Train a network (a preset, or a network file) and print a summary");
    args->training.add_to(*cmd);
    cmd->add_option("--backend", args->backend, "cpu, cuda or auto");
    cmd->add_flag("--json", args->json, "Print the summary as one JSON object on stdout");
    cmd->add_flag("--quiet", args->quiet, "No progress output");
    cmd->add_option("--save-network", args->save_network, "Write the network description to this JSON file");
    cmd->callback([args] {
        const int code = run_train(*args);
        if (code != 0) throw CLI::RuntimeError(code);
    });
}

}  // namespace mpwb::cli
