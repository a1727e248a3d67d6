// mpwb-cli bench: step time and samples/s of a preset's network over batch sizes and
// precisions, on random inputs of the preset's shape (no dataset needed). Prints a table, or
// JSON with --json. Warm-up steps are excluded; the figure is the median step time.
// --store measures the run store instead: the step time with a RunRecorder attached against
// without (same runs alternated, so machine load hits both alike), the writer's rows/s and the
// downsampling of a 1M-point series, on a scratch database.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/option_checks.h"
#include "app/cli/run_context.h"
#include "app/cli/training_options.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/engine/device_steps.h"
#include "core/nn/network_weights.h"
#include "core/nn/pytorch_export.h"
#include "core/optim/optimizer_registry.h"
#include "core/train/dataset_source.h"
#include "sessions/run_recorder.h"
#include "sessions/store_bench.h"

#include <filesystem>
#include <time.h>
#include <unistd.h>

namespace mpwb::cli {
namespace {

struct BenchArgs {
    TrainingOptions training;
    std::string backend = "cpu";
    std::string batches = "32,64,128,256,512";
    std::string precisions = "fp32,fp16-mixed,bf16-mixed";
    int64_t steps = 40;
    int64_t warmup = 5;
    bool json = false;
    bool store = false;
    std::string store_db;  // scratch file when empty
    int64_t store_rounds = 5;
    int64_t store_points = 1000000;
    int64_t input = 0;            // features per sample; 0: the preset's data shape
    int64_t classes = 0;          // 0: the preset's
    std::string graphs = "both";  // on a device backend: CUDA graphs on, off or both
    std::string pytorch_script;   // write the preset's PyTorch script here instead of timing
};

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ','))
        if (!part.empty()) parts.push_back(part);
    return parts;
}

// What the bench's random data looks like: the preset's sample shape and classes, and for a text
// preset its vocabulary (token ids in, a class per position out).
struct BenchData {
    Shape sample;
    int classes = 2;
    std::optional<Vocabulary> vocabulary;  // text presets
};

// The preset's data shape: synthetic sets are 2-D points; IDX sets are 1x28x28 images; a text
// preset's windows are `context` token ids over its vocabulary, whose size (the head's width) is
// read from the corpus once. --input and --classes override.
BenchData bench_data(const BenchArgs& args, const Preset& preset) {
    const DatasetSpec& spec = preset.training.dataset;
    const bool images = spec.kind == "fashion-mnist" || spec.kind == "mnist";
    BenchData d;
    d.sample = images ? Shape{1, 28, 28} : Shape{2};
    d.classes = images ? 10 : spec.classes;
    if (spec.is_text()) {
        const TextCorpus corpus = load_text_corpus(spec);
        d.sample = corpus.data.sample_shape;
        d.classes = corpus.data.num_classes;
        d.vocabulary = corpus.data.vocabulary;
    }
    if (args.input > 0) d.sample = Shape{args.input};
    if (args.classes > 0) d.classes = static_cast<int>(args.classes);
    return d;
}

// Inputs of the dataset's shape without reading it: the step time does not depend on values.
// Text: random token ids and a random next token per position.
Dataset random_dataset(const BenchData& shape, int64_t samples, uint64_t seed) {
    Dataset d;
    d.name = "random";
    d.sample_shape = shape.sample;
    d.num_classes = shape.classes;
    d.vocabulary = shape.vocabulary;
    Rng rng(seed);
    const auto token = [&] { return static_cast<float>(rng.below(static_cast<uint64_t>(shape.classes))); };
    const bool text = shape.vocabulary.has_value();
    d.train_x.resize(with_batch(samples, shape.sample));
    d.train_y.resize(text ? with_batch(samples, shape.sample) : Shape{samples});
    for (float& v : d.train_x.span()) v = text ? token() : rng.normal();
    for (float& v : d.train_y.span()) v = token();
    d.test_x.resize(with_batch(1, shape.sample));
    d.test_y.resize(text ? with_batch(1, shape.sample) : Shape{1});
    return d;
}

class StepTimes final : public TrainingObserver {
public:
    explicit StepTimes(int64_t warmup) : warmup_(warmup) {}
    void on_step(const StepMetrics& m) override {
        if (m.step > warmup_) {
            times.push_back(m.wall_time - last_wall_);
            device_seconds += m.step_seconds;
            skipped += m.skipped;
        }
        last_wall_ = m.wall_time;
    }
    std::vector<double> times;
    // A device step's own time: its share of the time between two record read-backs, which
    // arrive in bursts, so the device figure is the mean over the timed window, not a median.
    double device_seconds = 0;
    int64_t skipped = 0;

private:
    int64_t warmup_;
    double last_wall_ = 0;
};

// Forwards to the recorder and adds up the time its callbacks take on the training thread: the
// part of the store's cost that machine load cannot hide in the noise of whole step times.
class TimedObserver final : public TrainingObserver {
public:
    explicit TimedObserver(TrainingObserver& inner) : inner_(inner) {}
    void on_run_start(const RunStartInfo& i) override { inner_.on_run_start(i); }
    void on_step(const StepMetrics& m) override {
        timed([&] { inner_.on_step(m); });
    }
    void on_eval(const EvalMetrics& m) override {
        timed([&] { inner_.on_eval(m); });
    }
    void on_gradient_stats(const GradientStatsRecord& r) override {
        timed([&] { inner_.on_gradient_stats(r); });
    }
    void on_event(const TrainingEvent& e) override {
        timed([&] { inner_.on_event(e); });
    }
    void on_run_end(const RunSummary& s) override { inner_.on_run_end(s); }
    double seconds = 0;

private:
    template <class F>
    void timed(F&& f) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    TrainingObserver& inner_;
};

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// One timed run's settings: the preset's, at this precision and batch, for the untimed and the
// timed steps, with no evaluation, and statistics only where --stats-every asks for them (to
// measure what they cost).
TrainConfig bench_config(const BenchArgs& args, const Preset& preset, const std::string& precision,
                         int64_t batch) {
    TrainConfig c = preset.training;
    c.precision = parse_precision(precision);
    c.batch_size = batch;
    c.max_steps = args.warmup + args.steps;
    c.eval_every = 0;
    c.stats_every = args.training.stats_every.value_or(0);
    // The schedule costs nothing per step, but a warm-up as long as the bench's steps is refused
    // (fortunes-gpt warms up for 100).
    c.schedule.warmup_steps = std::min(c.schedule.warmup_steps, c.max_steps - 1);
    return c;
}

// The step times of the store benchmark's runs, with and without a recorder.
struct StoreTimings {
    std::vector<double> off, on, callback_per_step;  // seconds
    uint64_t steps_per_run = 0;
};

// One run of the store benchmark: its median step time into off or on, and with the store the
// recorder's callbacks' time per step.
void time_store_run(const Preset& preset, const Dataset& data, const TrainConfig& c, Backend& backend,
                    int64_t warmup, const std::string& store_path, const std::string& run_name,
                    StoreTimings& timings) {
    Network net = Network::from_json(preset.network);
    Trainer trainer(net, data, c, backend);
    StepTimes times(warmup);
    trainer.add_observer(&times);
    std::unique_ptr<RunRecorder> recorder;
    std::unique_ptr<TimedObserver> timed;
    if (!store_path.empty()) {
        RunRecorder::Options o;
        o.db_path = store_path;
        o.name = run_name;
        recorder = std::make_unique<RunRecorder>(o);
        timed = std::make_unique<TimedObserver>(*recorder);
        trainer.add_observer(timed.get());
    }
    const auto summary = trainer.run();
    if (summary.status == RunStatus::Failed) throw Error("bench run failed: " + summary.error);
    if (recorder && !recorder->complete())
        throw Error("bench run was not fully recorded: " + recorder->error());
    if (recorder) {
        timings.steps_per_run = static_cast<uint64_t>(summary.steps);
        timings.callback_per_step.push_back(timed->seconds /
                                            static_cast<double>(std::max<int64_t>(1, summary.steps)));
    }
    (recorder ? timings.on : timings.off).push_back(median_of(times.times));
}

// The store's cost to training at one precision and batch: its JSON row, printed as a table row
// unless --json.
nlohmann::json store_overhead_row(const BenchArgs& args, const Preset& preset, const BenchData& shape,
                                  Backend& backend, const std::string& path, const std::string& precision,
                                  const std::string& batch_text) {
    const int64_t batch = std::stoll(batch_text);
    TrainConfig c = bench_config(args, preset, precision, batch);
    Dataset data = random_dataset(shape, batch * 8, c.seed);
    // Alternate off/on runs: a load spike on this shared machine then lands on both.
    StoreTimings t;
    for (int64_t round = 0; round < args.store_rounds; ++round) {
        time_store_run(preset, data, c, backend, args.warmup, {}, {}, t);
        time_store_run(preset, data, c, backend, args.warmup, path,
                       "bench store " + precision + " " + batch_text, t);
    }
    const double off_ms = median_of(t.off) * 1e3, on_ms = median_of(t.on) * 1e3;
    const double overhead = (on_ms - off_ms) / off_ms * 100.0;
    const double callback_us = median_of(t.callback_per_step) * 1e6;
    const double callback_percent = callback_us * 1e-3 / off_ms * 100.0;
    if (!args.json)
        std::printf("%-12s %-11s %6lld %10.3f %10.3f %9.2f%% %12.2f %9.3f%%\n", preset.name.c_str(),
                    precision.c_str(), static_cast<long long>(batch), off_ms, on_ms, overhead, callback_us,
                    callback_percent);
    std::fflush(stdout);
    return {{"preset", preset.name},
            {"precision", precision},
            {"batch", batch},
            {"step_ms_off", off_ms},
            {"step_ms_store", on_ms},
            {"overhead_percent", overhead},
            {"callback_us_per_step", callback_us},
            {"callback_percent", callback_percent},
            {"rounds", args.store_rounds},
            {"steps_per_run", t.steps_per_run}};
}

// The writer's rows per second and the downsampling query's speed on the database at `path`,
// printed unless --json.
struct StoreQuerySpeed {
    double writer_rows = 0;
    int points = 0;
    double downsample_ms = 0, downsample_cpu_ms = 0;
};

StoreQuerySpeed store_query_speed(const BenchArgs& args, const std::string& path) {
    StoreQuerySpeed q;
    q.writer_rows = bench_writer_rows_per_s(path, 200000);
    q.points = static_cast<int>(args.store_points);
    bench_downsample_ms(path, q.points, 2000);  // builds the series once, outside the timing
    // Wall time is what a user waits; on a shared, loaded machine the CPU time of this thread
    // (5 downsamples plus an open and a lookup, divided by 5: an upper bound) says what it costs.
    timespec c0{}, c1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    q.downsample_ms = bench_downsample_ms(path, q.points, 2000);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    q.downsample_cpu_ms = ((c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) * 1e-6) / 5.0;
    if (!args.json) {
        std::printf("writer: %.0f rows/s (200000 metrics through RunWriter, including the final flush)\n",
                    q.writer_rows);
        std::printf(
            "downsample: %d points -> 2000 buckets: %.2f ms wall (median of 5), <= %.2f ms CPU per call\n",
            q.points, q.downsample_ms, q.downsample_cpu_ms);
    }
    return q;
}

// The store's cost to training and its query speed (see the file comment).
int run_store_bench(const BenchArgs& args, const Preset& preset, const BenchData& shape, Backend& backend) {
    namespace fs = std::filesystem;
    const bool scratch = args.store_db.empty();
    const std::string path =
        scratch ? (fs::temp_directory_path() / ("mpwb_bench_store_" + std::to_string(::getpid()) + ".sqlite"))
                      .string()
                : args.store_db;
    struct Cleanup {
        std::string path;
        bool on;
        ~Cleanup() {
            if (!on) return;
            for (const char* s : {"", "-wal", "-shm"}) {
                std::error_code ec;
                fs::remove(path + s, ec);
            }
        }
    } cleanup{path, scratch};
    nlohmann::json rows = nlohmann::json::array();
    if (!args.json)
        std::printf("%-12s %-11s %6s %10s %10s %10s %12s %10s\n", "preset", "precision", "batch", "off ms",
                    "store ms", "overhead", "callback us", "callback");
    for (const auto& precision : split(args.precisions))
        for (const auto& batch_text : split(args.batches))
            rows.push_back(store_overhead_row(args, preset, shape, backend, path, precision, batch_text));
    const StoreQuerySpeed q = store_query_speed(args, path);
    nlohmann::json out{{"backend", backend.name()},
                       {"device", backend.device_name()},
                       {"threads", thread_count()},
                       {"machine", RunRecorder::machine_description()},
                       {"store_overhead", rows},
                       {"writer_rows_per_second", q.writer_rows},
                       {"downsample",
                        {{"points", q.points},
                         {"buckets", 2000},
                         {"ms", q.downsample_ms},
                         {"cpu_ms", q.downsample_cpu_ms}}}};
    std::printf("%s\n", args.json ? out.dump(2).c_str() : out.dump().c_str());
    return 0;
}

// --pytorch-script: the PyTorch script of the preset's network at the bench's data shape (random
// initial weights, the preset's loss and optimizer), which app/cli/bench_pytorch.py imports, so
// PyTorch times the very modules the export writes.
int write_bench_script(const BenchArgs& args, const Preset& preset, const BenchData& shape) {
    Network network = Network::from_json(preset.network);
    network.build(shape.sample, 1, shape.classes);
    network.init(preset.training.seed);
    const TrainConfig& c = preset.training;
    PytorchExportInfo info;
    info.title = "mpwb-cli bench: preset " + preset.name;
    info.weights_file = "(none: build_model() only)";
    info.normalisation.description = "Random bench inputs: no normalisation.";
    info.optimizer = optimizer_named(c.optimizer.kind.empty() ? "sgd" : c.optimizer.kind)
                         .pytorch(c.optimizer, c.lr, pytorch_parameter_groups(c.optimizer.weight_decay));
    const PytorchExport e = make_pytorch_export(network.to_json(), network_weights(network, 0), info);
    write_new_file(args.pytorch_script, e.script.data(), e.script.size(), "PyTorch script");
    if (!args.json)
        std::printf("PyTorch script of %s: %s\n", preset.name.c_str(), args.pytorch_script.c_str());
    return 0;
}

int run_bench(const BenchArgs& args) {
    if (args.steps < 1) throw ConfigError("--steps must be at least 1");
    if (args.warmup < 0) throw ConfigError("--untimed-steps must be >= 0");
    Preset preset = args.training.resolve();
    const BenchData shape = bench_data(args, preset);
    if (!args.pytorch_script.empty()) return write_bench_script(args, preset, shape);
    auto backend = make_backend(args.backend);
    const bool device = has_device_steps(*backend);
    std::vector<bool> graph_modes{true};
    if (device) {
        if (args.graphs == "both")
            graph_modes = {true, false};
        else if (args.graphs == "off")
            graph_modes = {false};
        else if (args.graphs != "on")
            throw ConfigError("--graphs must be on, off or both, gets '" + args.graphs + "'");
    }
    if (args.store) return run_store_bench(args, preset, shape, *backend);
    nlohmann::json rows = nlohmann::json::array();
    if (!args.json)
        std::printf("%-12s %-11s %6s %7s %12s %14s %8s\n", "preset", "precision", "batch", "graphs",
                    "step ms", "samples/s", "skipped");
    for (const auto& precision : split(args.precisions)) {
        for (const auto& batch_text : split(args.batches))
            for (const bool graphs : graph_modes) {
                const int64_t batch = std::stoll(batch_text);
                TrainConfig c = bench_config(args, preset, precision, batch);
                c.optimizer.kind = c.optimizer.kind.empty() ? "sgd" : c.optimizer.kind;
                c.device_graphs = graphs;
                Dataset data = random_dataset(shape, batch * 8, c.seed);
                Network net = Network::from_json(preset.network);
                Trainer trainer(net, data, c, *backend);
                StepTimes times(args.warmup);
                trainer.add_observer(&times);
                const auto summary = trainer.run();
                if (summary.status == RunStatus::Failed) throw Error("bench run failed: " + summary.error);
                const double median =
                    device
                        ? times.device_seconds / static_cast<double>(std::max<size_t>(1, times.times.size()))
                        : median_of(times.times);
                const double samples_per_second = static_cast<double>(batch) / median;
                // The host clock's mean, which also counts what the host does between steps
                // (statistics taken on the host leave the device idle).
                const double wall = std::accumulate(times.times.begin(), times.times.end(), 0.0) /
                                    static_cast<double>(std::max<size_t>(1, times.times.size()));
                rows.push_back({{"preset", preset.name},
                                {"stats_every", c.stats_every},
                                {"wall_ms", wall * 1e3},
                                {"precision", precision},
                                {"batch", batch},
                                {"graphs", device ? nlohmann::json(graphs) : nlohmann::json(nullptr)},
                                {"step_ms", median * 1e3},
                                {"samples_per_second", samples_per_second},
                                {"skipped", times.skipped},
                                {"steps", times.times.size()}});
                if (!args.json)
                    std::printf("%-12s %-11s %6lld %7s %12.3f %14.0f %8lld\n", preset.name.c_str(),
                                precision.c_str(), static_cast<long long>(batch),
                                device ? (graphs ? "on" : "off") : "-", median * 1e3, samples_per_second,
                                static_cast<long long>(times.skipped));
                std::fflush(stdout);
            }
    }
    nlohmann::json out{{"backend", backend->name()},
                       {"device", backend->device_name()},
                       {"threads", thread_count()},
                       {"results", rows}};
    if (args.json)
        std::printf("%s\n", out.dump(2).c_str());
    else
        std::printf("%s\n", out.dump().c_str());
    return 0;
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    auto* cmd = app.add_subcommand("bench", "Step time and samples/s over batch sizes and precisions");
    args->training.add_to(*cmd, false);
    cmd->add_option("--backend", args->backend, "cpu, cuda or auto");
    cmd->add_option("--batches", args->batches, "Comma-separated batch sizes");
    cmd->add_option("--precisions", args->precisions, "Comma-separated precision policies");
    cmd->add_option("--steps", args->steps, "Timed steps per configuration")
        ->check(whole_number(1, kMaxSteps));
    cmd->add_option("--untimed-steps", args->warmup, "Untimed steps before the timed ones")
        ->check(whole_number(0, kMaxSteps));
    cmd->add_option("--input", args->input,
                    "Features per sample of the random inputs (default: the preset's data shape)")
        ->check(whole_number(1, 1 << 24));
    cmd->add_option("--classes", args->classes, "Classes of the random labels (default: the preset's)")
        ->check(whole_number(2, 1 << 20));
    cmd->add_option("--graphs", args->graphs, "Device backends: CUDA graphs on, off or both");
    cmd->add_flag("--json", args->json, "Print JSON only");
    cmd->add_option(
        "--pytorch-script", args->pytorch_script,
        "Write the preset's network as the PyTorch export's script (for bench_pytorch.py) and exit");
    cmd->add_flag("--store", args->store,
                  "Benchmark the run store: step time with recording on vs off, writer rows/s, downsampling");
    cmd->add_option("--store-db", args->store_db,
                    "Database for --store (default: a scratch file, removed after)");
    cmd->add_option("--store-rounds", args->store_rounds,
                    "Alternating off/on run pairs per configuration (--store)")
        ->check(whole_number(1, 1000));
    cmd->add_option("--store-points", args->store_points, "Points of the downsampled series (--store)")
        ->check(whole_number(1, 1'000'000'000));
    cmd->callback([args, cmd] {
        // The store's cost is reported at the batch size the target is stated for, unless asked.
        if (args->store && cmd->count("--batches") == 0) args->batches = "256";
        if (args->store && cmd->count("--precisions") == 0) args->precisions = "fp32";
        run_bench(*args);
    });
}

}  // namespace mpwb::cli
