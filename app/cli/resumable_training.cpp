// The one path of a recorded training run on the command line (resumable_training.h): a new run
// of a preset, or a stored run continued from its newest checkpoint with the network, dataset and
// settings it recorded. Both go through train_recorded, so `train`, `train --resume` and
// `sweep task` print, record, checkpoint and exit alike.
#include "app/cli/resumable_training.h"

#include <cstdio>
#include <limits>
#include <optional>
#include <span>

#include "app/cli/option_checks.h"
#include "app/cli/progress_printer.h"
#include "app/cli/run_context.h"
#include "app/cli/store_options.h"
#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/common/text_format.h"
#include "core/train/dataset_source.h"
#include "core/train/event_text.h"
#include "sessions/file_identity.h"
#include "sessions/recorded_run.h"

namespace mpwb::cli {
namespace {

// Tags that keep a run's checkpoint policy, so a resume without --checkpoint-* keeps it.
constexpr char kEveryStepsTag[] = "checkpoint_every";
constexpr char kEverySecondsTag[] = "checkpoint_seconds";

bool has_policy(const Trainer::CheckpointPolicy& p) { return p.every_steps > 0 || p.every_seconds > 0; }

StoreOptions store_options(const ResumableTrainingOptions& options) {
    StoreOptions store;
    store.db = options.db;
    store.no_store = options.no_store;
    store.busy_timeout_ms = options.busy_timeout_ms;
    store.run_name = options.run_name;
    store.tags = options.tags;
    const auto& policy = options.checkpoints;
    if (policy.every_steps > 0)
        store.tags.push_back(kEveryStepsTag + ("=" + std::to_string(policy.every_steps)));
    if (policy.every_seconds > 0)
        store.tags.push_back(kEverySecondsTag + ("=" + shortest_text(policy.every_seconds)));
    return store;
}

void print_json_summary(const RunSummary& summary, const Preset& preset, RecordedRun& run,
                        const Dataset& data, const Backend& backend) {
    nlohmann::json out = summary.to_json();
    out["preset"] = preset.name;
    out["precision"] = run.trainer().policy().name();
    out["dataset"] = data.name;
    out["backend"] = backend.name();
    out["device"] = backend.device_name();
    out["parameters"] = run.network().parameter_count();
    out["config"] = to_json(run.trainer().config());
    if (const RunRecorder* recorder = run.recorder()) {
        out["run_id"] = recorder->run_id();
        out["db"] = recorder->db_path();
    }
    std::printf("%s\n", out.dump(2).c_str());
}

// The exit status of a run that ended, with the line a user needs on stderr.
int exit_code(const RunSummary& summary, const RecordedRun& run) {
    if (summary.status == RunStatus::Failed) {
        std::fprintf(stderr, "mpwb-cli: error: training failed: %s\n", summary.error.c_str());
        return 1;
    }
    if (run.recorder() && !run.recorder()->complete()) {
        // The recorder said why when it failed (on_failure); this says what it means for the run.
        if (run.recorder()->run_id() != 0)
            std::fprintf(stderr, "mpwb-cli: error: run %lld is recorded only up to where recording stopped\n",
                         static_cast<long long>(run.recorder()->run_id()));
        return 1;
    }
    if (summary.status != RunStatus::Interrupted) return 0;
    if (!run.recorder()) {
        std::fprintf(
            stderr, "mpwb-cli: interrupted at step %lld; the run was not recorded, so it cannot be resumed\n",
            static_cast<long long>(summary.steps));
        return 1;
    }
    std::fprintf(stderr,
                 "mpwb-cli: run %lld checkpointed at step %lld; continue it with: mpwb-cli train --resume "
                 "%lld --db %s\n",
                 static_cast<long long>(run.run_id()), static_cast<long long>(summary.steps),
                 static_cast<long long>(run.run_id()), display_path(run.recorder()->db_path()).c_str());
    return kExitResumable;
}

// Says on stderr, even with --quiet, that a resumed run goes on with other data than it trained
// on (--allow-changed-data); the event itself is recorded with the run.
class ChangedDataWarning final : public TrainingObserver {
public:
    void on_event(const TrainingEvent& e) override {
        if (e.kind == "data_changed")
            std::fprintf(stderr, "mpwb-cli: warning: %s\n", event_text(e.kind, e.detail).c_str());
    }
};

// The trainer continues from the newest checkpoint that restores. A damaged one (DataError) is
// reported and the one before it tried; a checkpoint of other settings or data (ConfigError)
// would not fit any older one better, so that refusal stands.
void resume_from_newest_sound(Trainer& trainer, std::span<const TrainingCheckpoint> checkpoints,
                              const ResumeOptions& options) {
    for (size_t i = 0; i < checkpoints.size(); ++i) {
        try {
            trainer.resume_from(checkpoints[i], options);
            return;
        } catch (const DataError& e) {
            if (i + 1 == checkpoints.size()) throw;
            std::fprintf(stderr, "mpwb-cli: warning: %s; going on from the checkpoint at step %lld instead\n",
                         e.what(), static_cast<long long>(checkpoints[i + 1].step));
        }
    }
}

// Trains `preset` (from the newest sound of `checkpoints`, newest first, when given) into
// `recorder`'s run. `stop_target` is the recorder's: the trainer it stops when recording fails.
ResumableTrainingResult train_recorded(const Preset& preset, const ResumableTrainingOptions& options,
                                       std::unique_ptr<RunRecorder> recorder, Trainer*& stop_target,
                                       std::span<const TrainingCheckpoint> checkpoints) {
    const Dataset data = load_dataset(preset.training.dataset);
    auto backend = make_backend(options.backend);
    RecordedRun run(preset.network, data, preset.training, *backend, std::move(recorder));
    Trainer& trainer = run.trainer();
    stop_target = &trainer;
    if (!checkpoints.empty())
        resume_from_newest_sound(trainer, checkpoints, {.allow_changed_data = options.allow_changed_data});
    trainer.set_checkpoint_policy(options.checkpoints);
    if (options.hold_after_step > 0) trainer.hold_after_step(options.hold_after_step);
    ProgressPrinter progress(preset.name + " " + trainer.policy().name(), options.quiet);
    ChangedDataWarning changed_data;
    run.add_observer(&progress);
    run.add_observer(&changed_data);
    run.add_observer(run.recorder());
    ResumableTrainingResult result;
    {
        InterruptGuard guard(trainer);
        result.summary = trainer.run();
    }
    stop_target = nullptr;
    warn_if_boundary_not_stored(run.store_final_boundary(result.summary));
    if (!options.save_network.empty()) run.network().save_file(options.save_network);
    if (options.json) print_json_summary(result.summary, preset, run, data, *backend);
    result.run_id = run.run_id();
    result.exit_code = exit_code(result.summary, run);
    return result;
}

// The stored run, refused early and by name when it cannot be resumed (the store checks again
// when it reopens the run).
Run resumable_run(RunStore& store, std::int64_t run_id) {
    const Run run = store.get_run(run_id);
    const std::string name = "run " + std::to_string(run_id);
    if (run.status == RunStatus::Running)
        throw ConfigError(run_in_use_text(run_id, run.owner_pid.value_or(0), run.owner_host));
    if (run.status != RunStatus::Interrupted && run.status != RunStatus::Stopped)
        throw ConfigError(name + " is " + run_status_name(run.status) +
                          ": only an INTERRUPTED or STOPPED run can be resumed");
    if (run.deleted) throw ConfigError(name + " is in the trash; restore it to resume it");
    return run;
}

// The run's network and settings as it recorded them.
Preset recorded_preset(const Run& run, const std::string& db_path) {
    const std::string source = "database " + db_path + ", run " + std::to_string(run.id) + ", ";
    Preset preset;
    const auto tag = run.tags.find("preset");
    preset.name =
        tag != run.tags.end() && !tag->second.empty() ? tag->second : "run " + std::to_string(run.id);
    preset.network = parse_json_text(run.network_json, source + "network_json");
    const nlohmann::json config = parse_json_text(run.config_json, source + "config_json");
    try {  // a run from a bundle is held to the ranges of every other source
        preset.training =
            with_json_source(source + "config_json", [&] { return train_config_from_json(config); });
        preset.training.validate();
    } catch (const ConfigError& e) {
        throw ConfigError(source + "config_json: " + e.what());
    }
    return preset;
}

// --checkpoint-* given now, else the policy the run was started with.
Trainer::CheckpointPolicy resumed_policy(const Run& run, const Trainer::CheckpointPolicy& given) {
    if (has_policy(given)) return given;
    Trainer::CheckpointPolicy policy;
    try {
        if (auto t = run.tags.find(kEveryStepsTag); t != run.tags.end())
            policy.every_steps = std::stoll(t->second);
        if (auto t = run.tags.find(kEverySecondsTag); t != run.tags.end())
            policy.every_seconds = std::stod(t->second);
    } catch (const std::exception&) {
        throw ConfigError("run " + std::to_string(run.id) +
                          " has a damaged checkpoint tag; give --checkpoint-every");
    }
    return policy;
}

}  // namespace

void add_checkpoint_options(CLI::App& cmd, ResumableTrainingOptions& options) {
    cmd.add_option("--checkpoint-every", options.checkpoints.every_steps,
                   "Store a checkpoint every N steps (0 = off; SIGTERM always checkpoints)")
        ->check(whole_number(0, kMaxSteps));
    cmd.add_option_function<double>(
           "--checkpoint-minutes",
           [&options](double minutes) { options.checkpoints.every_seconds = minutes * 60; },
           "Store a checkpoint every M minutes of training (0 = off)")
        ->check(real_number(0, 1e6));
    // Hidden (no group): a test hook, not a user's option.
    cmd.add_option("--hold-after-step", options.hold_after_step,
                   "Test hook: hold after N steps until a signal ends the run")
        ->check(whole_number(0, kMaxSteps))
        ->group("");
}

ResumableTrainingResult train_new_run(const Preset& preset, const ResumableTrainingOptions& options,
                                      const std::function<void(std::int64_t run_id)>& on_created) {
    const StoreOptions store = store_options(options);
    // Checked before training: the network file written at the end must not be the database.
    if (!options.save_network.empty() && !options.no_store)
        refuse_output_onto_database(options.save_network, store.database_path(),
                                    "the network (--save-network)");
    Trainer* stop_target = nullptr;  // set in train_recorded; the recorder's callbacks run inside run()
    auto recorder = store.open_recorder(preset.name + " " + precision_name(preset.training.precision),
                                        preset.name, std::nullopt, &stop_target, {0, on_created});
    return train_recorded(preset, options, std::move(recorder), stop_target, {});
}

ResumableTrainingResult resume_run(std::int64_t run_id, const ResumableTrainingOptions& options) {
    if (options.no_store)
        throw ConfigError("--resume continues a recorded run; it cannot be used with --no-store");
    const std::string path = options.db.empty() ? default_database_path() : options.db;
    Preset preset;
    std::vector<TrainingCheckpoint> checkpoints;
    ResumableTrainingOptions resumed = options;
    RunStore::Options store_options;
    store_options.busy_timeout_ms = options.busy_timeout_ms;
    store_options.create = false;  // a resume continues a run of an existing store, never makes one
    {
        RunStore store(path, store_options);  // also marks runs whose process died INTERRUPTED
        const Run run = resumable_run(store, run_id);
        checkpoints = store.checkpoints(run_id);
        if (checkpoints.empty())
            throw ConfigError(
                "run " + std::to_string(run_id) + " in " + display_path(path) +
                " has no checkpoint to resume from (train with --checkpoint-every N, or stop it "
                "with SIGTERM, to take one)");
        preset = recorded_preset(run, path);
        resumed.checkpoints = resumed_policy(run, options.checkpoints);
    }
    if (!options.save_network.empty())
        refuse_output_onto_database(options.save_network, path, "the network (--save-network)");
    Trainer* stop_target = nullptr;
    StoreOptions store;
    store.db = path;
    store.busy_timeout_ms = options.busy_timeout_ms;
    auto recorder = store.open_recorder(preset.name, preset.name, std::nullopt, &stop_target, {run_id, {}});
    return train_recorded(preset, resumed, std::move(recorder), stop_target, checkpoints);
}

}  // namespace mpwb::cli
