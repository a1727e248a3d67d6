// mpwb-cli selftest [--backend cpu|cuda]: the backend checks, one line per check and
// "N passed, N failed" at the end (exit 0 when nothing failed, 1 when something did, 77 when
// the backend cannot run here, the conventional "skipped" code the Qt Test suite reads).
//
// cuda: every device op against the CPU backend (core/backend/cuda/selftest, in the CUDA module,
//   reached through its table), then whole
//   training steps in every precision policy: the spiral MLP trained for a few dozen steps on
//   the device (with and without CUDA graphs) and on the CPU from the same seed, every step's
//   loss and the final weights compared within the policy's tolerance; then checkpoints
//   (selftest_resume.h): a device run resumed from its checkpoint in a fresh engine ends with
//   the uninterrupted run's weights bit for bit, and checkpoints cross between the engines.
//   Then the gradient statistics the device takes itself: a statistics step's histograms on the
//   device against the CPU engine's for the same weights and batch, bin for bin but for elements
//   that the two sides' different summation orders carry across a power of two.
// cpu: the whole-step checks that hold on the CPU alone: every policy trains to finite losses,
//   and one thread and all threads give the same bits (the pool's determinism promise).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "app/cli/selftest_resume.h"
#include "core/backend/default_backend.h"
#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"

namespace mpwb::cli {
namespace {

constexpr int kSkipped = 77;

struct Tally {
    int passed = 0, failed = 0;
    void line(bool ok, const std::string& name, double error, double tolerance, const std::string& detail) {
        ok ? ++passed : ++failed;
        std::printf("%s  %-52s", ok ? "PASS" : "FAIL", name.c_str());
        if (tolerance > 0 || error > 0) std::printf("  rel %.2e (tol %.0e)", error, tolerance);
        if (!detail.empty()) std::printf("  %s", detail.c_str());
        std::printf("\n");
        std::fflush(stdout);
    }
};

struct Trajectory {
    std::vector<double> losses;
    std::vector<float> weights;
    std::string error;
    std::string backend;  // where the run trained (RunStartInfo::backend: "cpu" after a fallback)
};

class LossLog final : public TrainingObserver {
public:
    explicit LossLog(Trajectory& out) : out_(out) {}
    void on_run_start(const RunStartInfo& info) override { out_.backend = info.backend + " " + info.device; }
    void on_step(const StepMetrics& m) override { out_.losses.push_back(m.loss); }

private:
    Trajectory& out_;
};

Trajectory train_steps(Backend& backend, PrecisionKind precision, int threads, int64_t steps, bool graphs,
                       const std::string& optimizer = "") {
    const Preset preset = load_preset("spiral-mlp");
    TrainConfig c = preset.training;
    c.precision = precision;
    c.max_steps = steps;
    c.threads = threads;
    c.eval_every = 0;
    c.device_graphs = graphs;
    if (!optimizer.empty()) c.optimizer.kind = optimizer;
    const Dataset data = load_dataset(c.dataset);
    Network net = Network::from_json(preset.network);
    Trainer trainer(net, data, c, backend);
    Trajectory t;
    LossLog log(t);
    trainer.add_observer(&log);
    const RunSummary s = trainer.run();
    if (s.status == RunStatus::Failed) t.error = s.error;
    for (Parameter* p : net.parameters())
        t.weights.insert(t.weights.end(), p->value.span().begin(), p->value.span().end());
    return t;
}

struct Difference {
    double relative = INFINITY;  // max |got - want| / max |want|
    std::string where;           // the worst element, for the report line
};

// Normwise relative difference. A loss both sides found non-finite at the same step agrees (the
// step was skipped on both); non-finite on one side only is infinitely different.
template <class T>
Difference difference(const std::vector<T>& got, const std::vector<T>& want, const char* unit) {
    Difference d;
    if (got.size() != want.size()) {
        d.where = "device gave " + std::to_string(got.size()) + " values, cpu " + std::to_string(want.size());
        return d;
    }
    double diff = 0, scale = 0;
    size_t worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
        if (!std::isfinite(g) || !std::isfinite(w)) {
            if (std::isfinite(g) == std::isfinite(w)) continue;
            d.where = std::string(unit) + " " + std::to_string(i + 1) + ": device " + std::to_string(g) +
                      ", cpu " + std::to_string(w);
            return d;
        }
        if (std::fabs(g - w) > diff) diff = std::fabs(g - w), worst = i;
        scale = std::max(scale, std::fabs(w));
    }
    d.relative = scale > 0 ? diff / scale : diff;
    if (!got.empty())
        d.where = "worst at " + std::string(unit) + " " + std::to_string(worst + 1) + ": device " +
                  std::to_string(got[worst]) + ", cpu " + std::to_string(want[worst]);
    return d;
}

// A short trajectory amplifies per-op differences a little; these bounds are DESIGN.md's op
// tolerances with that headroom.
double trajectory_tolerance(PrecisionKind p) {
    switch (p) {
        case PrecisionKind::FP32:
            return 1e-4;
        case PrecisionKind::TF32:
            return 1e-2;
        default:
            return 5e-2;
    }
}

const PrecisionKind kPolicies[] = {PrecisionKind::FP32, PrecisionKind::TF32, PrecisionKind::FP16Mixed,
                                   PrecisionKind::BF16Mixed, PrecisionKind::FP16Pure};

void cpu_checks(Tally& tally) {
    auto cpu = make_cpu_backend();
    for (PrecisionKind p : kPolicies) {
        const std::string name = "whole steps " + precision_name(p) + " cpu";
        const Trajectory one = train_steps(*cpu, p, 1, 40, true);
        const Trajectory all = train_steps(*cpu, p, 0, 40, true);
        if (!one.error.empty() || !all.error.empty()) {
            tally.line(false, name, 0, 0, one.error.empty() ? all.error : one.error);
            continue;
        }
        bool finite = !one.losses.empty();
        for (double l : one.losses) finite = finite && std::isfinite(l);
        const bool same = one.losses == all.losses && one.weights == all.weights;
        tally.line(finite && same, name + ": 1 thread = all threads", 0, 0,
                   !finite ? "a loss is not finite"
                   : same  ? ""
                           : "results depend on the thread count");
    }
}

// The per-tensor FP8 recipes on the device's FP8 tensor cores (the spiral MLP's 64x64 layer at
// batch 32; its 2-wide first and last layers take the BF16 path) against the CPU's emulation.
// The device quantizes the same values with the same scales, but its sums run in another order,
// and one flipped FP8 rounding moves a value by up to 1/16: every difference is held to the
// distance the CPU's FP8 run keeps from its FP32 run (or the reduced policies' 5e-2).
void fp8_trajectory_checks(Tally& tally, Backend& backend, Backend& cpu, int64_t steps) {
    // The device FP8 path runs only when asked for until this very check has passed on a GPU.
    setenv("MPWB_CUDA_FP8", "1", 1);
    const Trajectory fp32 = train_steps(cpu, PrecisionKind::FP32, 0, steps, true);
    const Trajectory fp32_one = train_steps(cpu, PrecisionKind::FP32, 0, 1, true);
    for (PrecisionKind p : {PrecisionKind::Fp8Delayed, PrecisionKind::Fp8Current}) {
        const Trajectory want = train_steps(cpu, p, 0, steps, true);
        const Trajectory want_one = train_steps(cpu, p, 0, 1, true);
        const double tol = trajectory_tolerance(p);
        const double loss_tol = std::max(tol, difference(want.losses, fp32.losses, "step").relative);
        const double one_tol =
            std::max(tol, difference(want_one.weights, fp32_one.weights, "weight").relative);
        const double weight_tol = std::max(tol, difference(want.weights, fp32.weights, "weight").relative);
        for (bool graphs : {true, false}) {
            const std::string name = "whole steps " + precision_name(p) + (graphs ? " (graphs)" : " (eager)");
            const Trajectory got = train_steps(backend, p, 0, steps, graphs);
            const Trajectory got_one = train_steps(backend, p, 0, 1, graphs);
            if (!got.error.empty() || !want.error.empty()) {
                tally.line(false, name, 0, 0, got.error.empty() ? want.error : got.error);
                continue;
            }
            if (got.backend.rfind("cuda", 0) != 0) {
                tally.line(false, name + " on the device", 0, 0, "trained on " + got.backend);
                continue;
            }
            const Difference losses = difference(got.losses, want.losses, "step");
            const Difference first = difference(got_one.weights, want_one.weights, "weight");
            const Difference weights = difference(got.weights, want.weights, "weight");
            tally.line(losses.relative <= loss_tol, name + " losses", losses.relative, loss_tol,
                       losses.where);
            tally.line(first.relative <= one_tol, name + " weights after 1 step", first.relative, one_tol,
                       first.where);
            tally.line(weights.relative <= weight_tol, name + " weights", weights.relative, weight_tol,
                       weights.where);
        }
    }
}

void cuda_checks(Tally& tally, Backend& backend) {
    run_cuda_op_checks(backend, [&](const CudaCheckLine& l) {
        tally.line(l.passed, l.name, l.error, l.tolerance, l.detail);
    });
    auto cpu = make_cpu_backend();
    constexpr int64_t kSteps = 40;
    for (const std::string optimizer : {"", "sgd"}) {
        const std::string label = optimizer.empty() ? "" : " " + optimizer;
        const Trajectory fp32 = train_steps(*cpu, PrecisionKind::FP32, 0, kSteps, true, optimizer);
        for (PrecisionKind p : kPolicies) {
            const Trajectory want = train_steps(*cpu, p, 0, kSteps, true, optimizer);
            const Trajectory want_one = train_steps(*cpu, p, 0, 1, true, optimizer);
            const Difference spread = difference(want.weights, fp32.weights, "weight");
            for (bool graphs : {true, false}) {
                const std::string name =
                    "whole steps " + precision_name(p) + label + (graphs ? " (graphs)" : " (eager)");
                const Trajectory got = train_steps(backend, p, 0, kSteps, graphs, optimizer);
                const Trajectory got_one = train_steps(backend, p, 0, 1, graphs, optimizer);
                if (!got.error.empty() || !want.error.empty()) {
                    tally.line(false, name, 0, 0, got.error.empty() ? want.error : got.error);
                    continue;
                }
                const double tol = trajectory_tolerance(p);
                const Difference losses = difference(got.losses, want.losses, "step");
                const Difference first = difference(got_one.weights, want_one.weights, "weight");
                const Difference weights = difference(got.weights, want.weights, "weight");
                tally.line(losses.relative <= tol, name + " losses", losses.relative, tol, losses.where);
                tally.line(first.relative <= tol, name + " weights after 1 step", first.relative, tol,
                           first.where);
                // Over many steps rounding differences grow (Adam turns a tiny gradient's sign into
                // a whole step), so a reduced policy's weights are held to the distance rounding
                // itself puts between the CPU's run of that policy and its FP32 run: the device may
                // differ from the emulation by no more than the emulation differs from FP32.
                const bool reduced = p != PrecisionKind::FP32 && p != PrecisionKind::TF32;
                const double weight_tol = reduced ? std::max(tol, spread.relative) : tol;
                tally.line(weights.relative <= weight_tol, name + " weights", weights.relative, weight_tol,
                           weights.where + (reduced ? "; cpu " + precision_name(p) + " vs cpu fp32 " +
                                                          std::to_string(spread.relative)
                                                    : std::string()));
            }
        }
    }
    fp8_trajectory_checks(tally, backend, *cpu, kSteps);
    run_resume_checks(backend,
                      [&](const ResumeCheckLine& l) { tally.line(l.passed, l.name, 0, 0, l.detail); });
}

class StatsLog final : public TrainingObserver {
public:
    void on_gradient_stats(const GradientStatsRecord& r) override { records.push_back(r); }
    std::vector<GradientStatsRecord> records;
};

std::vector<GradientStatsRecord> statistics_step(Backend& backend, PrecisionKind precision) {
    const Preset preset = load_preset("spiral-mlp");
    TrainConfig c = preset.training;
    c.precision = precision;
    c.max_steps = 1;  // the first step is a statistics step
    c.stats_every = 1;
    c.eval_every = 0;
    const Dataset data = load_dataset(c.dataset);
    Network net = Network::from_json(preset.network);
    Trainer trainer(net, data, c, backend);
    StatsLog log;
    trainer.add_observer(&log);
    const RunSummary s = trainer.run();
    if (s.status == RunStatus::Failed) throw Error(s.error);
    return log.records;
}

// How many bin edges the elements of `got` crossed to differ from `want`: the running sum of
// the bin differences is the count carried across each edge. Zeros and non-finite values must
// agree exactly (no summation order makes a zero or an inf).
std::string histogram_difference(const ExponentHistogram& got, const ExponentHistogram& want,
                                 uint64_t& crossed) {
    if (got.zeros != want.zeros)
        return "zeros " + std::to_string(got.zeros) + " vs " + std::to_string(want.zeros);
    if (got.non_finite != want.non_finite) return "non-finite counts differ";
    if (got.total() != want.total()) return "element counts differ";
    int64_t carried = 0;
    for (size_t b = 0; b < ExponentHistogram::kBinCount; ++b) {
        carried += static_cast<int64_t>(got.bins[b]) - static_cast<int64_t>(want.bins[b]);
        crossed += static_cast<uint64_t>(carried < 0 ? -carried : carried);
    }
    return {};
}

void statistics_checks(Tally& tally, Backend& backend) {
    auto cpu = make_cpu_backend();
    for (PrecisionKind p : kPolicies) {
        const std::string name = "gradient statistics on the device " + precision_name(p);
        try {
            const auto got = statistics_step(backend, p);
            const auto want = statistics_step(*cpu, p);
            std::string problem = got.size() == want.size() && !got.empty() ? "" : "record counts differ";
            uint64_t crossed = 0, elements = 0;
            for (size_t r = 0; problem.empty() && r < got.size(); ++r) {
                if (got[r].layer != want[r].layer || got[r].kind != want[r].kind ||
                    got[r].parameter != want[r].parameter)
                    problem = "record " + std::to_string(r) + " names another gradient";
                else
                    problem = histogram_difference(got[r].histogram, want[r].histogram, crossed);
                elements += want[r].histogram.total();
            }
            // Elements within an ulp or so of a power of two: a small share of any tensor.
            const uint64_t bound = std::max<uint64_t>(4, elements / 100);
            if (problem.empty() && crossed > bound) problem = "too many elements changed bins";
            tally.line(problem.empty(), name, 0, 0,
                       problem + (problem.empty() ? "" : "; ") + std::to_string(crossed) + " of " +
                           std::to_string(elements) + " elements crossed a bin edge (bound " +
                           std::to_string(bound) + ")");
        } catch (const std::exception& e) {
            tally.line(false, name, 0, 0, e.what());
        }
    }
}

int run_selftest(const std::string& backend_name) {
    Tally tally;
    if (backend_name == "cpu") {
        std::printf("selftest: backend cpu (%d threads)\n", thread_count());
        cpu_checks(tally);
    } else if (backend_name == "cuda") {
        std::string why;
        auto backend = make_cuda_backend(&why);
        if (!backend) {
            std::printf("SKIP: the CUDA backend cannot run here: %s\n", why.c_str());
            return kSkipped;
        }
        std::printf("selftest: backend cuda on %s\n", backend->device_name().c_str());
        cuda_checks(tally, *backend);
        statistics_checks(tally, *backend);
    } else {
        throw ConfigError("unknown backend '" + backend_name + "'; choose cpu or cuda");
    }
    std::printf("%d passed, %d failed\n", tally.passed, tally.failed);
    return tally.failed == 0 ? 0 : 1;
}

}  // namespace

void add_selftest_command(CLI::App& app) {
    auto backend = std::make_shared<std::string>("cuda");
    auto* cmd = app.add_subcommand("selftest",
                                   "Check a backend: every op against the CPU reference, and whole steps");
    cmd->add_option("--backend", *backend, "cpu or cuda (default cuda)");
    cmd->callback([backend] { std::exit(run_selftest(*backend)); });
}

}  // namespace mpwb::cli
