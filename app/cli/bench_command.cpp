// mpwb-cli bench: step time and samples/s of a preset's network over batch sizes and
// precisions, on random inputs of the preset's shape (no dataset needed). Prints a table, or
// JSON with --json. Warm-up steps are excluded; the figure is the median step time.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/run_context.h"
#include "app/cli/training_options.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/train/dataset_source.h"

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
};

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ','))
        if (!part.empty()) parts.push_back(part);
    return parts;
}

// Inputs of the dataset's shape without reading it: the step time does not depend on values.
Dataset random_dataset(const Shape& sample_shape, int classes, int64_t samples, uint64_t seed) {
    Dataset d;
    d.name = "random";
    d.sample_shape = sample_shape;
    d.num_classes = classes;
    Rng rng(seed);
    d.train_x.resize(with_batch(samples, sample_shape));
    d.train_y.resize({samples});
    for (float& v : d.train_x.span()) v = rng.normal();
    for (float& v : d.train_y.span()) v = static_cast<float>(rng.below(static_cast<uint64_t>(classes)));
    d.test_x.resize(with_batch(1, sample_shape));
    d.test_y.resize({1});
    return d;
}

class StepTimes final : public TrainingObserver {
public:
    explicit StepTimes(int64_t warmup) : warmup_(warmup) {}
    void on_step(const StepMetrics& m) override {
        if (m.step > warmup_) {
            times.push_back(m.wall_time - last_wall_);
            skipped += m.skipped;
        }
        last_wall_ = m.wall_time;
    }
    std::vector<double> times;
    int64_t skipped = 0;

private:
    int64_t warmup_;
    double last_wall_ = 0;
};

int run_bench(const BenchArgs& args) {
    if (args.steps < 1) throw ConfigError("--steps must be at least 1");
    if (args.warmup < 0) throw ConfigError("--untimed-steps must be >= 0");
    Preset preset = args.training.resolve();
    // The shape of the preset's data: synthetic sets are 2-D points; IDX sets are 1x28x28 images.
    const bool images = preset.training.dataset.kind == "fashion-mnist" || preset.training.dataset.kind == "mnist";
    const Shape sample = images ? Shape{1, 28, 28} : Shape{2};
    const int classes = images ? 10 : preset.training.dataset.classes;
    auto backend = make_backend(args.backend);
    nlohmann::json rows = nlohmann::json::array();
    if (!args.json)
        std::printf("%-12s %-11s %6s %12s %14s %8s\n", "preset", "precision", "batch", "step ms", "samples/s", "skipped");
    for (const auto& precision : split(args.precisions)) {
        for (const auto& batch_text : split(args.batches)) {
            const int64_t batch = std::stoll(batch_text);
            TrainConfig c = preset.training;
            c.precision = parse_precision(precision);
            c.batch_size = batch;
            c.max_steps = args.warmup + args.steps;
            c.eval_every = 0;
            c.stats_every = 0;
            c.optimizer.kind = c.optimizer.kind.empty() ? "sgd" : c.optimizer.kind;
            Dataset data = random_dataset(sample, classes, batch * 8, c.seed);
            Network net = Network::from_json(preset.network);
            Trainer trainer(net, data, c, *backend);
            StepTimes times(args.warmup);
            trainer.add_observer(&times);
            const auto summary = trainer.run();
            if (summary.status == RunStatus::Failed) throw Error("bench run failed: " + summary.error);
            auto sorted = times.times;
            std::sort(sorted.begin(), sorted.end());
            const double median = sorted[sorted.size() / 2];
            const double samples_per_second = static_cast<double>(batch) / median;
            rows.push_back({{"preset", preset.name},
                            {"precision", precision},
                            {"batch", batch},
                            {"step_ms", median * 1e3},
                            {"samples_per_second", samples_per_second},
                            {"skipped", times.skipped},
                            {"steps", times.times.size()}});
            if (!args.json)
                std::printf("%-12s %-11s %6lld %12.3f %14.0f %8lld\n", preset.name.c_str(), precision.c_str(),
                            static_cast<long long>(batch), median * 1e3, samples_per_second,
                            static_cast<long long>(times.skipped));
            std::fflush(stdout);
        }
    }
    nlohmann::json out{{"backend", backend->name()}, {"device", backend->device_name()}, {"threads", thread_count()},
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
    cmd->add_option("--steps", args->steps, "Timed steps per configuration");
    cmd->add_option("--untimed-steps", args->warmup, "Untimed steps before the timed ones");
    cmd->add_flag("--json", args->json, "Print JSON only");
    cmd->callback([args] { run_bench(*args); });
}

}  // namespace mpwb::cli
