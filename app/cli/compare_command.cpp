// mpwb-cli compare: the same preset/network, seed, initial weights and batch order trained once
// per precision policy, one run after the other so the throughput figures never compete for the
// cores, then a side-by-side table (final and best test accuracy, wall time, samples/s, speed-up
// over FP32 (run_figures' figure: none without an FP32 run), skipped steps, loss-scale range,
// activation-gradient underflow) or JSON with --json.
//
// Same initial weights: Trainer initialises the network from config.seed before it applies the
// policy, and every run here gets the same TrainConfig except the precision. That is checked, not
// assumed: each run's master weights, right after the Trainer is built and before the first step,
// are compared bit for bit with an independently built network initialised from the same seed
// (rounded to the policy's master format, which is FP32 for every policy but fp16-pure). A
// mismatch is an engine bug and aborts the comparison.
//
// A precision may carry a loss-scaling mode, "fp16-mixed@none" or "fp16-mixed@dynamic", so one
// command shows a failure next to its cure (docs/FAILURES.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/progress_printer.h"
#include "app/cli/run_context.h"
#include "app/cli/store_options.h"
#include "app/cli/training_options.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/numeric/format.h"
#include "core/train/dataset_source.h"
#include "sessions/recorded_run.h"
#include "sessions/run_figures.h"

namespace mpwb::cli {
namespace {

// Gradient statistics every this many steps unless --stats-every says otherwise, so the
// underflow column measures something; the cost is one histogram pass per 50 steps.
constexpr int64_t kDefaultCompareStatsEvery = 50;

struct CompareArgs {
    TrainingOptions training;
    std::string precisions = "fp32,fp16-mixed,bf16-mixed";
    std::string backend = "auto";
    bool json = false;
    bool quiet = false;
    StoreOptions store;
};

struct RunSpec {
    std::string label;  // as the user wrote it: "fp16-mixed@dynamic"
    PrecisionKind precision = PrecisionKind::FP32;
    std::optional<ScalerMode> scaler_mode;
};

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<RunSpec> parse_run_specs(const std::string& text) {
    std::vector<RunSpec> specs;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
        part = trim(part);
        if (part.empty()) continue;
        RunSpec spec;
        spec.label = part;
        const auto at = part.find('@');
        try {
            spec.precision = parse_precision(part.substr(0, at));
            if (at != std::string::npos) spec.scaler_mode = parse_scaler_mode(part.substr(at + 1));
        } catch (const ConfigError& e) {
            throw ConfigError("--precisions: '" + part + "': " + e.what());
        }
        specs.push_back(spec);
    }
    if (specs.empty()) {
        std::string names;
        for (const auto& name : precision_names()) names += (names.empty() ? "" : ", ") + name;
        throw ConfigError("--precisions needs at least one precision (" + names +
                          "), optionally with a loss-scaling mode: fp16-mixed@none");
    }
    return specs;
}

// FNV-1a over the bit patterns of every parameter value: a short name for "these weights".
std::string weights_fingerprint(const Network& net) {
    uint64_t h = 1469598103934665603ull;
    for (const Parameter* p : net.parameters()) {
        for (float v : p->value.span()) {
            uint32_t bits;
            std::memcpy(&bits, &v, sizeof bits);
            for (int b = 0; b < 4; ++b) {
                h ^= (bits >> (8 * b)) & 0xFFu;
                h *= 1099511628211ull;
            }
        }
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

// Index of the first parameter whose start value differs from the reference's (rounded to the
// policy's master format); -1 when all agree bit for bit.
int first_mismatch(const Network& net, const Network& reference, Format master) {
    const auto mine = net.parameters();
    const auto ref = reference.parameters();
    if (mine.size() != ref.size()) return 0;
    std::vector<float> expected;
    for (size_t i = 0; i < mine.size(); ++i) {
        const Tensor& a = mine[i]->value;
        const Tensor& b = ref[i]->value;
        if (a.numel() != b.numel()) return static_cast<int>(i);
        expected.resize(static_cast<size_t>(b.numel()));
        round_to_format(master, b.data(), expected.data(), expected.size());
        if (std::memcmp(a.data(), expected.data(), expected.size() * sizeof(float)) != 0)
            return static_cast<int>(i);
    }
    return -1;
}

// The loss-scale range as every view spells it ("2^15 … 2^17", sessions/run_figures), or "off".
std::string loss_scale_range_text(ScalerMode mode, float lo, float hi) {
    if (mode == ScalerMode::None) return "off";
    return scale_range_text(ScaleRange{lo, hi});
}

// `text` padded with spaces to `width` characters (UTF-8: "…" is one character, three bytes,
// where printf's %-14s would count three).
std::string pad_right(const std::string& text, size_t width) {
    const auto characters = static_cast<size_t>(std::count_if(
        text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
    return characters >= width ? text : text + std::string(width - characters, ' ');
}

// Records what the table needs beyond RunSummary.
class RunProbe final : public TrainingObserver {
public:
    void on_step(const StepMetrics& m) override {
        if (m.step == 1) first_step_loss = m.loss;
    }
    void on_gradient_stats(const GradientStatsRecord&) override { ++stats_records; }
    double first_step_loss = NAN;
    int64_t stats_records = 0;
};

struct RunResult {
    RunSpec spec;
    std::string policy_name;
    LossScalerConfig scaler;
    RunSummary summary;
    double first_step_loss = NAN;
    int64_t stats_records = 0;
    std::string fingerprint;
    std::optional<double> speedup;  // over the FP32 run (run_figures); none without one
    std::int64_t run_id = 0;        // in the run store; 0 with --no-store
};

// What every run of the comparison shares: the settings, the data, the backend and the start
// every run is checked against.
struct Comparison {
    const CompareArgs& args;
    std::vector<RunSpec> specs;  // parsed first: a bad --precisions is said before anything loads
    Preset preset;
    std::vector<TrainConfig> configs;  // one per spec
    Dataset data;
    std::unique_ptr<Backend> backend;
    Network reference;
    std::optional<std::int64_t> group;  // in the run store; none with --no-store
};

nlohmann::json json_number(double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json json_number(const std::optional<double>& v) {
    return v ? json_number(*v) : nlohmann::json(nullptr);
}

// Every run's configuration is settled before any trains, so a bad combination (say a
// weight-gradient format with fp32) stops the command before minutes of training.
std::vector<TrainConfig> run_configs(const std::vector<RunSpec>& specs, const TrainConfig& shared) {
    std::vector<TrainConfig> configs;
    for (const auto& spec : specs) {
        TrainConfig c = shared;
        c.precision = spec.precision;
        if (spec.scaler_mode) {
            LossScalerConfig s = c.effective_scaler();
            s.mode = *spec.scaler_mode;
            c.scaler = s;
        }
        try {
            c.validate();
            (void)c.policy();
        } catch (const ConfigError& e) {
            throw ConfigError("--precisions: '" + spec.label + "': " + e.what());
        }
        configs.push_back(c);
    }
    return configs;
}

Comparison prepare_comparison(const CompareArgs& args) {
    Comparison c{args, parse_run_specs(args.precisions), args.training.resolve(), {}, {}, {}, {}, {}};
    if (!args.training.stats_every) c.preset.training.stats_every = kDefaultCompareStatsEvery;
    c.configs = run_configs(c.specs, c.preset.training);
    c.data = load_dataset(c.preset.training.dataset);
    c.backend = make_backend(args.backend);
    // The reference start: built and initialised exactly as the Trainer says it does, from the
    // network description and the seed only.
    c.reference = Network::from_json(c.preset.network);
    c.reference.build(c.data.sample_shape);
    c.reference.init(c.preset.training.seed);
    // The runs of one comparison form a group in the run store, so they can be reopened together.
    if (!args.store.no_store)
        c.group =
            RunRecorder::create_group(args.store.database_path(), c.preset.name + ": " + args.precisions);
    return c;
}

// Trains run i of the comparison, after checking that it starts from the reference weights.
RunResult train_run(Comparison& c, size_t i) {
    const RunSpec& spec = c.specs[i];
    // --run-name is a prefix here: the runs of a comparison differ by their precision.
    StoreOptions store = c.args.store;
    store.run_name.clear();
    const std::string name =
        (c.args.store.run_name.empty() ? c.preset.name : c.args.store.run_name) + " " + spec.label;
    Trainer* trainer_ptr = nullptr;  // set below; the recorder's callbacks run inside run()
    RecordedRun run(c.preset.network, c.data, c.configs[i], *c.backend,
                    store.open_recorder(name, c.preset.name, c.group, &trainer_ptr));
    Trainer& trainer = run.trainer();
    trainer_ptr = &trainer;
    Network& net = run.network();
    const int bad = first_mismatch(net, c.reference, trainer.policy().master);
    if (bad >= 0)
        throw Error("run '" + spec.label + "' does not start from the seed's initial weights (parameter " +
                    std::to_string(bad) + ", " + net.parameter_owner(static_cast<size_t>(bad)) +
                    "): the comparison would not be fair; this is an engine bug");
    RunResult r;
    r.spec = spec;
    r.policy_name = trainer.policy().name();
    r.scaler = trainer.config().effective_scaler();
    r.fingerprint = weights_fingerprint(net);
    char label[128];
    std::snprintf(label, sizeof label, "[%zu/%zu] %s", i + 1, c.specs.size(), spec.label.c_str());
    ProgressPrinter progress(label, c.args.quiet);
    RunProbe probe;
    run.add_observer(&progress);
    run.add_observer(&probe);
    run.add_observer(run.recorder());
    {
        InterruptGuard guard(trainer);
        r.summary = trainer.run();
    }
    warn_if_boundary_not_stored(run.store_final_boundary(r.summary));
    r.run_id = run.run_id();
    r.first_step_loss = probe.first_step_loss;
    r.stats_records = probe.stats_records;
    return r;
}

// The speed-up of each run, as run_figures defines it; returns the index of the FP32 run it is
// over (none without one).
std::optional<size_t> set_speedups(std::vector<RunResult>& results) {
    std::vector<RunThroughput> throughputs;
    for (const auto& r : results) {
        const double sps = r.summary.samples_per_second;
        throughputs.push_back(
            {precision_name(r.spec.precision), sps > 0 ? std::optional(sps) : std::nullopt});
    }
    const auto speedups = speedups_over_fp32(throughputs);
    for (size_t i = 0; i < results.size(); ++i) results[i].speedup = speedups[i];
    return fp32_reference(throughputs);
}

nlohmann::json table_row(const RunResult& r) {
    const bool stats = r.stats_records > 0;
    return {
        {"run", r.spec.label},
        {"precision", r.policy_name},
        {"status", run_status_name(r.summary.status)},
        {"final_test_accuracy", r.summary.test_accuracy},
        {"best_test_accuracy", r.summary.best_test_accuracy},
        {"wall_seconds", r.summary.wall_seconds},
        {"samples_per_second", r.summary.samples_per_second},
        {"speedup", json_number(r.speedup)},
        {"skipped_steps", r.summary.skipped_steps},
        {"loss_scale_range", loss_scale_range_text(r.scaler.mode, r.summary.min_scale, r.summary.max_scale)},
        {"min_scale", r.summary.min_scale},
        {"max_scale", r.summary.max_scale},
        {"mean_activation_underflow",
         stats ? nlohmann::json(r.summary.mean_activation_underflow) : nlohmann::json(nullptr)}};
}

nlohmann::json run_json(const RunResult& r) {
    return {{"run_id", r.run_id},
            {"label", r.spec.label},
            {"precision", r.policy_name},
            {"scaler", loss_scaler_config_to_json(r.scaler)},
            {"initial_weights_fingerprint", r.fingerprint},
            {"initial_weights_match_seed", true},
            {"first_step_loss", json_number(r.first_step_loss)},
            {"speedup", json_number(r.speedup)},
            {"summary", r.summary.to_json()}};
}

void print_json(const Comparison& c, const std::vector<RunResult>& results,
                const std::optional<size_t>& base) {
    nlohmann::json table = nlohmann::json::array();
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& r : results) {
        table.push_back(table_row(r));
        runs.push_back(run_json(r));
    }
    const Preset& preset = c.preset;
    nlohmann::json out{
        {"preset", preset.name},
        {"dataset", c.data.name},
        {"backend", c.backend->name()},
        {"device", c.backend->device_name()},
        {"threads", thread_count()},
        {"seed", preset.training.seed},
        {"parameters", c.reference.parameter_count()},
        {"stats_every", preset.training.stats_every},
        {"initial_weights_fingerprint", weights_fingerprint(c.reference)},
        {"config", to_json(preset.training)},
        {"network", preset.network},
        {"baseline", base ? nlohmann::json(results[*base].spec.label) : nlohmann::json(nullptr)},
        {"runs", runs},
        {"table", table}};
    std::printf("%s\n", out.dump(2).c_str());
}

void print_table_row(const RunResult& r) {
    char underflow[32];
    if (r.stats_records > 0)
        std::snprintf(underflow, sizeof underflow, "%.3f%%", 100.0 * r.summary.mean_activation_underflow);
    else
        std::snprintf(underflow, sizeof underflow, "-");
    char speedup[32];
    if (r.speedup)
        std::snprintf(speedup, sizeof speedup, "%.2fx", *r.speedup);
    else
        std::snprintf(speedup, sizeof speedup, "-");
    std::string name = r.spec.label;
    if (r.summary.status != RunStatus::Finished)
        name += std::string(" (") + run_status_name(r.summary.status) + ")";
    const std::string scale = loss_scale_range_text(r.scaler.mode, r.summary.min_scale, r.summary.max_scale);
    std::printf("%-22s %8.2f%% %8.2f%% %8.1f %11.0f %8s %8lld %s %10s\n", name.c_str(),
                100.0 * r.summary.test_accuracy, 100.0 * r.summary.best_test_accuracy, r.summary.wall_seconds,
                r.summary.samples_per_second, speedup, static_cast<long long>(r.summary.skipped_steps),
                pad_right(scale, 14).c_str(), underflow);
}

void print_table(const Comparison& c, const std::vector<RunResult>& results,
                 const std::optional<size_t>& base) {
    const Preset& preset = c.preset;
    // Reaching this line means every run passed the bit-for-bit check of train_run.
    std::printf(
        "\n%s on %s, seed %llu, backend %s (%s), %d threads; every run started from the seed's initial "
        "weights (checked bit for bit, fingerprint %s)\n",
        preset.name.c_str(), c.data.name.c_str(), static_cast<unsigned long long>(preset.training.seed),
        c.backend->name().c_str(), c.backend->device_name().c_str(), thread_count(),
        weights_fingerprint(c.reference).c_str());
    std::printf("%-22s %9s %9s %8s %11s %8s %8s %-14s %10s\n", "precision", "final acc", "best acc", "wall s",
                "samples/s", "speed-up", "skipped", "loss scale", "underflow");
    for (const auto& r : results) print_table_row(r);
    const std::string speedup_note =
        base ? "speed-up relative to " + results[*base].spec.label : std::string("speed-up: no FP32 run");
    std::printf(
        "%s; underflow: mean fraction of activation-gradient values below the smallest subnormal of the "
        "run's format (FP16 for FP32 runs), every %lld steps\n",
        speedup_note.c_str(), static_cast<long long>(preset.training.stats_every));
}

// 1 when a run failed (each named on stderr), else 130 when the comparison was stopped, else 0.
int exit_code(const std::vector<RunResult>& results, bool stopped, size_t planned) {
    int code = 0;
    for (const auto& r : results)
        if (r.summary.status == RunStatus::Failed) {
            std::fprintf(stderr, "mpwb-cli: error: run '%s' failed: %s\n", r.spec.label.c_str(),
                         r.summary.error.c_str());
            code = 1;
        }
    if (stopped) {
        std::fprintf(stderr, "mpwb-cli: compare stopped after %zu of %zu runs\n", results.size(), planned);
        code = code ? code : 130;
    }
    return code;
}

int run_compare(const CompareArgs& args) {
    Comparison c = prepare_comparison(args);
    std::vector<RunResult> results;
    bool stopped = false;
    for (size_t i = 0; i < c.specs.size() && !stopped; ++i) {
        results.push_back(train_run(c, i));
        stopped = results.back().summary.status == RunStatus::Stopped;
    }
    const std::optional<size_t> base = set_speedups(results);
    if (args.json)
        print_json(c, results, base);
    else
        print_table(c, results, base);
    std::fflush(stdout);
    return exit_code(results, stopped, c.specs.size());
}

}  // namespace

void add_compare_command(CLI::App& app) {
    auto args = std::make_shared<CompareArgs>();
    auto* cmd = app.add_subcommand("compare",
                                   "Train the same network, seed, initial weights and batch order once per "
                                   "precision, one after the other, "
                                   "and print a side-by-side table");
    args->training.add_to(*cmd);
    args->training.one_precision = false;  // a recipe flag is for the runs whose recipe has it
    // One precision per run comes from --precisions; a single --precision would be ambiguous.
    cmd->remove_option(cmd->get_option("--precision"));
    cmd->add_option("--precisions", args->precisions,
                    "Comma-separated precisions, each optionally with a loss-scaling mode for that run: "
                    "fp32,fp16-mixed@none,fp16-mixed@dynamic (default fp32,fp16-mixed,bf16-mixed)");
    cmd->add_option("--backend", args->backend, "cpu, cuda or auto");
    cmd->add_flag("--json", args->json, "Print one JSON object (runs and table) on stdout");
    cmd->add_flag("--quiet", args->quiet, "No progress output");
    args->store.add_to(*cmd);
    cmd->callback([args] {
        const int code = run_compare(*args);
        if (code != 0) throw CLI::RuntimeError(code);
    });
}

}  // namespace mpwb::cli
