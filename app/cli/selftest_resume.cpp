// The resume checks of the CUDA selftest (selftest_resume.h). Each case trains the spiral data
// with a network that exercises what a checkpoint carries on the device: the optimizer's buffers
// (Adam's moments, SGD's momentum), BatchNorm's running statistics, a dropout mask drawn per step,
// reduced weight copies and the dynamic loss scaler (the reduced policies).
//
// Bit for bit needs the same kernels on both sides. Two engines in one process share the
// backend's cuBLASLt and cuDNN choices (DeviceContext keeps them per shape), but each engine times
// a Linear's bias-gradient path (epilogue or own kernel) on its first step, which may sum in
// another order; so the network's Linear layers have no bias (BatchNorm's beta is the bias). The
// gradient norm sums with atomics, so clipping stays off. Between processes (train --resume) the
// GEMM choices are timed again: MPWB_CUDA_AUTOTUNE=0 keeps the library's picks.
#include "app/cli/selftest_resume.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend/default_backend.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"

namespace mpwb::cli {
namespace {

constexpr int64_t kFirstSteps = 20;  // before the checkpoint
constexpr int64_t kMoreSteps = 20;   // after it

// Plain: bias-free Linear and ReLU only. BatchNorm adds running statistics; Dropout a mask per
// step, only where both sides of a comparison run on one engine (the engines draw other masks).
enum class Layers { Plain, BatchNorm, BatchNormDropout };

nlohmann::json resume_network(Layers kind) {
    nlohmann::json layers = nlohmann::json::parse(R"([
        {"type": "Linear", "out": 64, "bias": false}, {"type": "ReLU"},
        {"type": "Linear", "out": 64, "bias": false}, {"type": "ReLU"},
        {"type": "Linear", "out": 2, "bias": false}])");
    if (kind == Layers::BatchNormDropout)
        layers.insert(layers.begin() + 2, nlohmann::json::object({{"type", "Dropout"}, {"p", 0.2}}));
    if (kind != Layers::Plain)
        layers.insert(layers.begin() + 1, nlohmann::json::object({{"type", "BatchNorm"}}));
    return {{"name", "resume-check"}, {"loss", "cross_entropy"}, {"layers", layers}};
}

struct ResumeCase {
    PrecisionKind precision = PrecisionKind::FP32;
    std::string optimizer;
    Layers layers = Layers::BatchNormDropout;
    std::string label() const {
        return precision_name(precision) + " " + optimizer +
               (layers == Layers::Plain       ? " plain"
                : layers == Layers::BatchNorm ? " batchnorm"
                                              : "");
    }
};

struct Outcome {
    std::vector<float> weights;  // every parameter's master, then every buffer
    std::vector<TrainingCheckpoint> checkpoints;
    std::string error;
};

class CheckpointLog final : public TrainingObserver {
public:
    explicit CheckpointLog(std::vector<TrainingCheckpoint>& out) : out_(out) {}
    void on_checkpoint(const TrainingCheckpoint& c) override { out_.push_back(c); }

private:
    std::vector<TrainingCheckpoint>& out_;
};

// A run of kFirstSteps + kMoreSteps steps; checkpoints every `every` steps (0: none); `from`: resumed.
Outcome train(Backend& backend, const ResumeCase& c, int64_t every, const TrainingCheckpoint* from) {
    TrainConfig config = load_preset("spiral-mlp").training;
    config.precision = c.precision;
    config.optimizer.kind = c.optimizer;
    config.max_steps = kFirstSteps + kMoreSteps;
    config.eval_every = 0;
    config.clip_norm = 0.0f;
    const Dataset data = load_dataset(config.dataset);
    Network net = Network::from_json(resume_network(c.layers));
    Trainer trainer(net, data, config, backend);
    Outcome out;
    CheckpointLog log(out.checkpoints);
    trainer.add_observer(&log);
    try {
        if (every > 0) trainer.set_checkpoint_policy({.every_steps = every});
        if (from) trainer.resume_from(*from);
    } catch (const std::exception& e) {
        out.error = e.what();
        return out;
    }
    const RunSummary s = trainer.run();
    if (s.status != RunStatus::Finished)
        out.error = std::string("the run ended ") + run_status_name(s.status) + ": " + s.error;
    for (Parameter* p : net.parameters())
        out.weights.insert(out.weights.end(), p->value.span().begin(), p->value.span().end());
    for (Tensor* b : net.buffers()) out.weights.insert(out.weights.end(), b->span().begin(), b->span().end());
    return out;
}

// Empty when the two are equal bit for bit; else how many differ, the first, and the largest
// difference relative to the largest magnitude.
std::string bitwise_difference(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size())
        return std::to_string(got.size()) + " values against " + std::to_string(want.size());
    size_t differing = 0, first = 0;
    double worst = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
        if (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
        if (differing++ == 0) first = i;
        worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
    }
    if (differing == 0) return {};
    char text[160];
    std::snprintf(text, sizeof text, "%zu of %zu values differ, the first at %zu (%.9g vs %.9g), rel %.2e",
                  differing, got.size(), first, static_cast<double>(got[first]),
                  static_cast<double>(want[first]), scale > 0 ? worst / scale : worst);
    return text;
}

// Relative to the largest magnitude, for the checks across engines (which differ by rounding).
double relative_difference(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size() || got.empty()) return INFINITY;
    double worst = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
        scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
    }
    return scale > 0 ? worst / scale : worst;
}

const TrainingCheckpoint* checkpoint_at(const Outcome& run, int64_t step) {
    for (const auto& c : run.checkpoints)
        if (c.step == step) return &c;
    return nullptr;
}

void check_case(Backend& device, const ResumeCase& c,
                const std::function<void(const ResumeCheckLine&)>& report) {
    const std::string name = "resume " + c.label();
    const Outcome whole = train(device, c, 0, nullptr);
    const Outcome parted = train(device, c, kFirstSteps, nullptr);
    const TrainingCheckpoint* checkpoint = checkpoint_at(parted, kFirstSteps);
    if (!whole.error.empty() || !parted.error.empty() || !checkpoint) {
        report({false, name,
                !whole.error.empty()    ? whole.error
                : !parted.error.empty() ? parted.error
                                        : "no checkpoint at step " + std::to_string(kFirstSteps)});
        return;
    }
    // Taking a checkpoint changes nothing; two runs repeat (the control for the next line).
    const std::string taken = bitwise_difference(parted.weights, whole.weights);
    report({taken.empty(), name + ": a run with checkpoints = one without", taken});
    const Outcome resumed = train(device, c, 0, checkpoint);
    const std::string off =
        resumed.error.empty() ? bitwise_difference(resumed.weights, whole.weights) : resumed.error;
    report(
        {off.empty(), name + ": resumed at step " + std::to_string(kFirstSteps) + " = uninterrupted", off});
}

// A checkpoint of each engine resumes on the other and ends near the other engine's run: no
// further from it than the two engines' uninterrupted runs are from each other (twice, at least
// the fp32 trajectory tolerance). A resume that lost the optimizer's moments lands much further.
void check_across_engines(Backend& device, const std::function<void(const ResumeCheckLine&)>& report) {
    auto cpu = make_cpu_backend();
    const ResumeCase c{PrecisionKind::FP32, "adam", Layers::BatchNorm};
    const Outcome on_device = train(device, c, kFirstSteps, nullptr);
    const Outcome on_cpu = train(*cpu, c, kFirstSteps, nullptr);
    const double spread = relative_difference(on_device.weights, on_cpu.weights);
    const double tolerance = std::max(1e-4, 2 * spread);
    const struct {
        const char* name;
        Backend& resume_on;
        const Outcome& source;
        const Outcome& reference;
    } legs[] = {{"resume fp32 adam batchnorm: cuda checkpoint on cpu", *cpu, on_device, on_cpu},
                {"resume fp32 adam batchnorm: cpu checkpoint on cuda", device, on_cpu, on_device}};
    for (const auto& leg : legs) {
        const TrainingCheckpoint* checkpoint = checkpoint_at(leg.source, kFirstSteps);
        if (!checkpoint || !leg.source.error.empty() || !leg.reference.error.empty()) {
            report({false, leg.name, checkpoint ? leg.source.error + leg.reference.error : "no checkpoint"});
            continue;
        }
        const Outcome resumed = train(leg.resume_on, c, 0, checkpoint);
        const double rel =
            resumed.error.empty() ? relative_difference(resumed.weights, leg.reference.weights) : INFINITY;
        char detail[128];
        std::snprintf(detail, sizeof detail,
                      "weights rel %.2e to that engine's run (tol %.1e; cuda vs cpu %.2e)", rel, tolerance,
                      spread);
        report({rel <= tolerance, leg.name, resumed.error.empty() ? detail : resumed.error});
    }
}

}  // namespace

void run_resume_checks(Backend& device, const std::function<void(const ResumeCheckLine&)>& report) {
    // The plain network first: a failure there is the checkpoint's, not BatchNorm's or dropout's.
    check_case(device, {PrecisionKind::FP32, "adam", Layers::Plain}, report);
    for (const char* optimizer : {"adam", "sgd"})
        for (PrecisionKind p : {PrecisionKind::FP32, PrecisionKind::FP16Mixed, PrecisionKind::BF16Mixed,
                                PrecisionKind::FP16Pure})
            check_case(device, {p, optimizer}, report);
    check_across_engines(device, report);
}

}  // namespace mpwb::cli
