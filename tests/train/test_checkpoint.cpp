// Tests of checkpoint and resume (core/train/checkpoint.h, Trainer::resume_from): a run
// interrupted at step k and resumed in a new Network and Trainer built from the same JSON ends
// with master weights and layer buffers identical, bit for bit, to a run never interrupted, with
// the same losses after k and the same summary figures, under FP32 + Adam, FP16 with a dynamic
// scaler that overflows, BF16, FP8 with delayed scaling, NVFP4 with stochastic rounding and a
// convolutional net with BatchNorm, Dropout and SGD momentum; k mid-epoch and at an epoch
// boundary, 1 and 2 threads, live changes before k and one pending at k. A checkpoint of another
// network or other settings is a ConfigError naming what differs; damaged or hostile state bytes
// are an Error. The sanity checks show the comparison can fail: a resumed run whose optimizer
// state or dropout generator is thrown away ends with different weights.
// The engine's headers come before Qt's: core/train/trainer.h declares a member named emit(),
// which Qt's `emit` keyword macro would otherwise erase.
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/data/batcher.h"
#include "core/data/text_corpus.h"
#include "core/train/checkpoint_state.h"
#include "core/train/dataset_digest.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "tests/train/optimizer_blob.h"

#include <QtTest/QtTest>

#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>

using namespace mpwb;
using mpwb::test::OptimizerBlob;

namespace {

// ---- the setups

nlohmann::json mlp_network(int hidden = 16) {
    return {{"name", "mlp"},
            {"loss", "cross_entropy"},
            {"layers",
             {{{"type", "Linear"}, {"out", hidden}},
              {{"type", "ReLU"}},
              {{"type", "Linear"}, {"out", hidden}},
              {{"type", "ReLU"}},
              {{"type", "Linear"}, {"out", 2}}}}};
}

nlohmann::json conv_network() {
    return {{"name", "conv"},
            {"loss", "cross_entropy"},
            {"layers",
             {{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 3}, {"padding", 1}},
              {{"type", "BatchNorm"}},
              {{"type", "ReLU"}},
              {{"type", "MaxPool2d"}, {"kernel", 2}},
              {{"type", "Flatten"}},
              {{"type", "Dropout"}, {"p", 0.3}},
              {{"type", "Linear"}, {"out", 3}}}}};
}

DatasetSpec spiral_spec() {
    DatasetSpec spec;
    spec.kind = "spiral";
    spec.samples = 300;  // 240 to train: 8 batches of 32 (the last one 16) per epoch
    spec.noise = 0.1f;
    return spec;
}

const Dataset& spiral() {
    static const Dataset d = load_dataset(spiral_spec());
    return d;
}

// A character-level text of 325 characters over 9 letters: 260 to train, 32 windows of 8 (8
// batches of 4 per epoch) with a slack of 3 tokens, so later epochs read their windows at a
// phase (window_phase) and some phases move the last window back to phase 0's.
const Dataset& text_windows() {
    static const Dataset d = [] {
        std::string text;
        for (int i = 0; i < 325; ++i) text += static_cast<char>('a' + (i * i + i / 3) % 9);
        return make_text_corpus(text, {TokenizerKind::Char, 8, 0.2}, "test text", "letters").data;
    }();
    return d;
}

nlohmann::json gpt_network() {
    return {{"name", "gpt"},
            {"loss", "token_cross_entropy"},
            {"layers",
             {{{"type", "Embedding"}, {"d_model", 8}, {"context", 8}},
              {{"type", "TransformerBlock"}, {"heads", 2}, {"attn_dropout", 0.1}},
              {{"type", "LayerNorm"}},
              {{"type", "Linear"}, {"out", 0}}}}};
}

// 6x6 one-channel images in three classes (which third of the image is brightest).
const Dataset& images() {
    static const Dataset d = [] {
        Dataset data;
        data.name = "test-images";
        data.sample_shape = {1, 6, 6};
        data.num_classes = 3;
        data.class_names = {"top", "middle", "bottom"};
        Rng rng(7);
        const auto fill = [&](Tensor& x, Tensor& y, int64_t n) {
            x.resize({n, 1, 6, 6});
            y.resize({n});
            for (int64_t i = 0; i < n; ++i) {
                const int label = static_cast<int>(rng.below(3));
                for (int64_t p = 0; p < 36; ++p)
                    x.data()[i * 36 + p] = rng.normal() * 0.5f + ((p / 12) == label ? 1.0f : 0.0f);
                y.data()[i] = static_cast<float>(label);
            }
        };
        fill(data.train_x, data.train_y, 80);  // 5 batches of 16
        fill(data.test_x, data.test_y, 24);
        return data;
    }();
    return d;
}

struct Setup {
    nlohmann::json network;
    TrainConfig config;
    const Dataset* data = nullptr;
};

Setup setup_named(const QString& name) {
    Setup s{mlp_network(), {}, &spiral()};
    TrainConfig& c = s.config;
    c.epochs = 3;
    c.batch_size = 32;
    c.lr = 0.01f;
    c.optimizer.kind = "adam";
    c.schedule.kind = "cosine";
    c.threads = 1;
    c.eval_batch = 64;
    if (name == "fp16") {
        c.precision = PrecisionKind::FP16Mixed;
        LossScalerConfig scaler;
        scaler.initial_scale = 0x1p24;  // overflows at once, then backs off and grows again
        scaler.growth_interval = 3;
        c.scaler = scaler;
        c.stats_every = 4;
    } else if (name == "fp16-retry") {
        c.precision = PrecisionKind::FP16Mixed;
        LossScalerConfig scaler;
        scaler.initial_scale = 0x1p24;
        scaler.growth_interval = 2;
        scaler.on_overflow = OverflowAction::Retry;
        c.scaler = scaler;
    } else if (name == "fp16-pure") {
        c.precision = PrecisionKind::FP16Pure;
    } else if (name == "max-steps") {
        c.epochs = 1;
        c.max_steps = 19;  // runs into a third epoch, which it leaves mid-way
        c.eval_every = 3;
        c.clip_norm = 1.0f;
    } else if (name == "bf16") {
        c.precision = PrecisionKind::BF16Mixed;
    } else if (name == "fp8-delayed") {
        c.precision = PrecisionKind::Fp8Delayed;
        c.recipe.amax_history_len = 4;
        c.stats_every = 5;
    } else if (name == "split-passes") {
        // Precision rules: each GEMM keeps two quantizers (fp8-delayed forward, mxfp8 dgrad) and a
        // BF16 wgrad; the checkpoint holds both quantizers' states.
        c.precision = PrecisionKind::Fp8Delayed;
        c.recipe.amax_history_len = 4;
        c.stats_every = 5;
        c.precision_rules.rules.push_back(parse_precision_rule("*=dgrad:mxfp8,wgrad:bf16"));
    } else if (name == "nvfp4") {
        c.precision = PrecisionKind::NvFp4;
        c.recipe.stochastic_rounding = true;
    } else if (name == "mxfp8") {
        c.precision = PrecisionKind::MxFp8;
    } else if (name == "mxfp4") {
        c.precision = PrecisionKind::MxFp4;
        c.recipe.mx_scale_rounding = MxScaleRounding::Floor;
        c.recipe.hadamard_signs = HadamardSigns::Fixed;
    } else if (name == "nvfp4-4over6") {
        c.precision = PrecisionKind::NvFp4;
        c.recipe.nvfp4_4over6 = true;
        c.recipe.nvfp4_4over6_error = FourOverSixError::Mae;
    } else if (name == "conv") {
        s.network = conv_network();
        s.data = &images();
        c.batch_size = 16;
        c.optimizer = {.kind = "sgd", .momentum = 0.9f, .weight_decay = 1e-4f};
        c.schedule.kind = "constant";
        c.lr = 0.05f;
    } else if (name == "conv-fp16") {
        s.network = conv_network();
        s.data = &images();
        c.batch_size = 16;
        c.precision = PrecisionKind::FP16Mixed;
    } else if (name == "gpt") {
        s.network = gpt_network();
        s.data = &text_windows();
        c.batch_size = 4;
        c.eval_batch = 16;
        c.seed =
            2;  // phases 3 (within the slack of 3) in epoch 1 and 7 (the last window moves back) in epoch 2
    } else if (name == "threads2") {
        c.threads = 2;
    } else {
        Q_ASSERT(name == "fp32");
    }
    return s;
}

// ---- running

// What a run hands out, and the hooks a test sets on its steps.
class Capture final : public TrainingObserver {
public:
    void on_run_start(const RunStartInfo& i) override { info = i; }
    void on_step(const StepMetrics& m) override {
        losses[m.step] = m.loss;
        wall_times.push_back(m.wall_time);
        if (on_step_hook) on_step_hook(m.step);
    }
    void on_event(const TrainingEvent& e) override {
        events.push_back(e);
        if (on_event_hook) on_event_hook(e);
    }
    void on_checkpoint(const TrainingCheckpoint& c) override { checkpoints.push_back(c); }
    void on_run_end(const RunSummary& s) override { summary = s; }

    bool has_event(const std::string& kind) const {
        for (const auto& e : events)
            if (e.kind == kind) return true;
        return false;
    }

    RunStartInfo info;
    std::map<int64_t, double> losses;
    std::vector<double> wall_times;
    std::vector<TrainingEvent> events;
    std::vector<TrainingCheckpoint> checkpoints;
    RunSummary summary;
    std::function<void(int64_t)> on_step_hook;
    std::function<void(const TrainingEvent&)> on_event_hook;
};

// Every master weight and buffer, as bytes.
std::vector<uint8_t> weight_bytes(const Network& net) {
    std::vector<uint8_t> out;
    const auto add = [&](const Tensor& t) {
        const auto* p = reinterpret_cast<const uint8_t*>(t.data());
        out.insert(out.end(), p, p + t.numel() * sizeof(float));
    };
    for (const Parameter* p : net.parameters()) add(p->value);
    for (const Tensor* b : net.buffers()) add(*b);
    return out;
}

struct Outcome {
    std::vector<uint8_t> weights;
    Capture capture;
};

// One run of the setup in its own Network and Trainer. prepare: before run() (hooks, requests,
// resume_from).
using Prepare = std::function<void(Trainer&, Capture&)>;
std::unique_ptr<Outcome> run_setup(const Setup& s, const Prepare& prepare = {},
                                   Trainer::CheckpointPolicy policy = {}) {
    auto out = std::make_unique<Outcome>();
    auto backend = make_cpu_backend();
    Network net = Network::from_json(s.network);
    Trainer trainer(net, *s.data, s.config, *backend);
    trainer.add_observer(&out->capture);
    trainer.set_checkpoint_policy(policy);
    if (prepare) prepare(trainer, out->capture);
    trainer.run();
    out->weights = weight_bytes(net);
    return out;
}

// Interrupts a run of the setup with checkpoint_and_stop after step k; its checkpoint.
TrainingCheckpoint interrupted_at(const Setup& s, int64_t k, const Prepare& also = {}) {
    const auto out = run_setup(s, [&](Trainer& t, Capture& c) {
        if (also) also(t, c);
        auto previous = c.on_step_hook;
        c.on_step_hook = [&t, k, previous](int64_t step) {
            if (previous) previous(step);
            if (step == k) t.checkpoint_and_stop();
        };
    });
    const Capture& c = out->capture;
    if (c.summary.status != RunStatus::Interrupted || c.checkpoints.size() != 1 ||
        !c.has_event("interrupted"))
        throw std::runtime_error("the run was not interrupted with one checkpoint");
    return c.checkpoints.front();
}

std::unique_ptr<Outcome> resumed(const Setup& s, const TrainingCheckpoint& checkpoint) {
    return run_setup(s, [&](Trainer& t, Capture&) { t.resume_from(checkpoint); }, {.every_steps = 1000});
}

// Bit for bit (QCOMPARE compares floating point fuzzily; NaN equals NaN here).
template <class Number>
bool same_bits(Number a, Number b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}
#define COMPARE_BITS(actual, expected)                                                    \
    QVERIFY2(same_bits(actual, expected), qPrintable(QString("%1 is %2, expected %3")     \
                                                         .arg(#actual)                    \
                                                         .arg(double(actual), 0, 'g', 17) \
                                                         .arg(double(expected), 0, 'g', 17)))

void compare_summaries(const RunSummary& a, const RunSummary& b) {
    QCOMPARE(b.status, a.status);
    QCOMPARE(b.steps, a.steps);
    QCOMPARE(b.epochs_completed, a.epochs_completed);
    COMPARE_BITS(b.train_loss, a.train_loss);
    COMPARE_BITS(b.test_loss, a.test_loss);
    COMPARE_BITS(b.test_accuracy, a.test_accuracy);
    COMPARE_BITS(b.best_test_accuracy, a.best_test_accuracy);
    QCOMPARE(b.skipped_steps, a.skipped_steps);
    QCOMPARE(b.overflow_count, a.overflow_count);
    COMPARE_BITS(b.min_scale, a.min_scale);
    COMPARE_BITS(b.max_scale, a.max_scale);
    COMPARE_BITS(b.mean_activation_underflow, a.mean_activation_underflow);
}

// The resumed run against the reference: weights, the losses after k, the summary, the digest.
void compare_runs(const Outcome& reference, const Outcome& resumed_run, int64_t k) {
    QCOMPARE(resumed_run.capture.summary.status, RunStatus::Finished);
    QVERIFY(!reference.weights.empty());
    QVERIFY(resumed_run.weights.size() == reference.weights.size());
    QVERIFY(std::memcmp(resumed_run.weights.data(), reference.weights.data(), reference.weights.size()) == 0);
    const auto& ref_losses = reference.capture.losses;
    const auto& got = resumed_run.capture.losses;
    QCOMPARE(got.begin()->first, k + 1);
    QCOMPARE(static_cast<int64_t>(got.size()), static_cast<int64_t>(ref_losses.size()) - k);
    for (const auto& [step, loss] : got) COMPARE_BITS(loss, ref_losses.at(step));
    compare_summaries(reference.capture.summary, resumed_run.capture.summary);
    QVERIFY(!reference.capture.checkpoints.empty() && !resumed_run.capture.checkpoints.empty());
    QCOMPARE(weights_digest(resumed_run.capture.checkpoints.back()),
             weights_digest(reference.capture.checkpoints.back()));
}

// FNV-1a 64, to forge a checksum over hostile bytes.
uint64_t fnv1a64(const uint8_t* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

void reseal(std::vector<uint8_t>& blob) {
    const uint64_t h = fnv1a64(blob.data(), blob.size() - 8);
    std::memcpy(blob.data() + blob.size() - 8, &h, 8);
}

// The offset of a section's size field ("WGHT" and the like).
size_t section_size_offset(const std::vector<uint8_t>& blob, const char* tag) {
    for (size_t i = 16; i + 4 <= blob.size(); ++i)
        if (std::memcmp(blob.data() + i, tag, 4) == 0) return i + 4;
    return 0;
}

// One damage of a checkpoint whose checksum is still right: what it does to the decoded state
// (and the position), on which setup.
struct Damage {
    const char* setup;
    std::function<void(CheckpointState&, TrainingCheckpoint&)> apply;
};

void damage_optimizer(CheckpointState& s, const std::function<void(OptimizerBlob&)>& f) {
    OptimizerBlob blob(s.engine.optimizer);
    f(blob);
    s.engine.optimizer = blob.bytes();
}

const std::map<QString, Damage>& damages() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    using S = CheckpointState;
    using C = TrainingCheckpoint;
    static const std::map<QString, Damage> all = {
        // The crash: first moments without second moments.
        {"adam moments without second moments",
         {"fp32", [](S& s, C&) { damage_optimizer(s, [](OptimizerBlob& o) { o.entries[2].b.clear(); }); }}},
        {"adam second moment of another size",
         {"fp32",
          [](S& s, C&) { damage_optimizer(s, [](OptimizerBlob& o) { o.entries[1].b.pop_back(); }); }}},
        {"adam moments before any update",
         {"fp32", [](S& s, C&) { damage_optimizer(s, [](OptimizerBlob& o) { o.entries[0].step = 0; }); }}},
        {"adam first moment not finite",
         {"fp32",
          [=](S& s, C&) { damage_optimizer(s, [=](OptimizerBlob& o) { o.entries[0].a[3] = inf; }); }}},
        {"adam second moment negative",
         {"fp32",
          [](S& s, C&) { damage_optimizer(s, [](OptimizerBlob& o) { o.entries[0].b[1] = -1.0f; }); }}},
        {"optimizer state of fewer parameters",
         {"fp32", [](S& s, C&) { damage_optimizer(s, [](OptimizerBlob& o) { o.entries.pop_back(); }); }}},
        {"optimizer steps beyond the run's",
         {"fp32", [](S& s, C&) { damage_optimizer(s, [](OptimizerBlob& o) { o.entries[4].step = 1000; }); }}},
        {"sgd momentum of another size",
         {"conv", [](S& s, C&) { damage_optimizer(s, [](OptimizerBlob& o) { o.entries[0].a.resize(3); }); }}},
        {"sgd second buffer",
         {"conv",
          [](S& s, C&) { damage_optimizer(s, [](OptimizerBlob& o) {
                             o.entries[1].b = {1, 2, 3};
                         }); }}},
        {"sgd momentum not finite",
         {"conv",
          [=](S& s, C&) { damage_optimizer(s, [=](OptimizerBlob& o) { o.entries[0].a[0] = nan; }); }}},
        {"weight not finite", {"fp32", [=](S& s, C&) { s.values[2][5] = nan; }}},
        {"reduced copy not the master's",
         {"fp16", [](S& s, C&) { s.copies[0][0] = s.copies[0][0] * 2 + 1; }}},
        {"fp16 master not in fp16", {"fp16-pure", [](S& s, C&) { s.values[0][0] = 1.0f + 0x1p-20f; }}},
        {"scaler steps beyond the run's", {"fp16", [](S& s, C&) { s.scaler["applied_steps"] = 1000; }}},
        {"recipe scale of zero", {"fp8-delayed", [](S& s, C&) { s.quantizers[0].state.scales[1] = 0.0f; }}},
        {"recipe scale not finite",
         {"fp8-delayed", [=](S& s, C&) { s.quantizers[1].state.scales[0] = nan; }}},
        {"recipe amax negative",
         {"fp8-delayed", [](S& s, C&) { s.quantizers[0].state.histories[2][0] = -2.0f; }}},
        {"block recipe with a history",
         {"mxfp8", [](S& s, C&) { s.quantizers[0].state.histories[0] = {1.0f}; }}},
        {"dropout generator of zeros", {"conv", [](S& s, C&) { s.engine.dropout = Rng::State{}; }}},
        {"dropout spare not finite",
         {"conv",
          [=](S& s, C&) {
              s.engine.dropout.has_spare_normal = true;
              s.engine.dropout.spare_normal = inf;
          }}},
        {"position off its step", {"fp32", [](S&, C& c) { c.batch -= 1; }}},
        {"position past the epochs", {"fp32", [](S&, C& c) { c.epoch += 3; }}},
        {"more epochs completed than begun", {"fp32", [](S& s, C&) { s.sums.epochs_completed = 2; }}},
        {"more samples than steps", {"fp32", [](S& s, C&) { s.sums.trained_samples = 10000; }}},
        {"negative count", {"fp32", [](S& s, C&) { s.sums.since_eval_steps = -1; }}},
    };
    return all;
}

}  // namespace

class TestCheckpoint : public QObject {
    Q_OBJECT

private slots:
    void resumedRunEqualsUninterrupted_data();
    void resumedRunEqualsUninterrupted();
    void resumeFromAPeriodicCheckpoint();
    void liveChangesBeforeAndAtTheCheckpointCarryOver();
    void checkpointAndStopReleasesAHeldRun();
    void aStoppedRunResumes();
    void checkpointsFollowThePolicy();
    void checkpointOfAnotherRunIsRefused();
    void damagedStateIsAnError();
    void hostileSizesAreRefusedWithoutAllocating();
    void losingTheOptimizerOrDropoutStateChangesTheRun();
    void everySectionIsCheckedAgainstTheNetwork_data();
    void everySectionIsCheckedAgainstTheNetwork();
    void changedDataIsRefused();
    void versionOneStateStillResumes();
    void finalWeightsDigestEqualsTheCheckpoints();
    void laterEpochsReadShiftedWindows();
};

void TestCheckpoint::resumedRunEqualsUninterrupted_data() {
    QTest::addColumn<QString>("setup");
    QTest::addColumn<int>("k");
    // 8 steps per epoch on the spiral, 5 on the images: k = 8 and 10 end an epoch.
    QTest::newRow("fp32 adam, mid-epoch") << "fp32" << 11;
    QTest::newRow("fp32 adam, epoch boundary") << "fp32" << 8;
    QTest::newRow("fp32 adam, 2 threads") << "threads2" << 13;
    QTest::newRow("fp16 dynamic scaler with overflows") << "fp16" << 9;
    QTest::newRow("fp16 retrying overflows") << "fp16-retry" << 5;
    QTest::newRow("fp16-pure") << "fp16-pure" << 10;
    QTest::newRow("max_steps, eval_every, clipping") << "max-steps" << 14;
    QTest::newRow("bf16") << "bf16" << 12;
    QTest::newRow("fp8-delayed, history 4") << "fp8-delayed" << 11;
    QTest::newRow("precision rules: fp8-delayed fprop, mxfp8 dgrad, bf16 wgrad") << "split-passes" << 11;
    QTest::newRow("nvfp4 stochastic rounding") << "nvfp4" << 7;
    QTest::newRow("mxfp8, epoch boundary") << "mxfp8" << 16;
    // mxfp4 (stochastic dy, fixed Hadamard signs, FLOOR) and 4 over 6 resume bit for bit too.
    QTest::newRow("mxfp4 floor, fixed Hadamard signs") << "mxfp4" << 9;
    QTest::newRow("nvfp4 4 over 6 (mae)") << "nvfp4-4over6" << 6;
    QTest::newRow("conv batchnorm dropout sgd") << "conv" << 7;
    QTest::newRow("conv, epoch boundary") << "conv" << 10;
    // BatchNorm's parameters get a reduced copy from the optimizer, not from prepare_weights.
    QTest::newRow("conv fp16-mixed") << "conv-fp16" << 7;
    // Text windows: epochs 1 and 2 read them at their own phase, which a resumed run draws again.
    QTest::newRow("gpt text windows, mid-epoch") << "gpt" << 11;
    QTest::newRow("gpt text windows, epoch boundary") << "gpt" << 16;
}

void TestCheckpoint::resumedRunEqualsUninterrupted() {
    QFETCH(QString, setup);
    QFETCH(int, k);
    const Setup s = setup_named(setup);
    if (setup == "gpt")  // the phases this test is about: not 0, and not the same
        QVERIFY(window_phase(*s.data, s.config.seed, 1) != 0 &&
                window_phase(*s.data, s.config.seed, 2) != 0 &&
                window_phase(*s.data, s.config.seed, 1) != window_phase(*s.data, s.config.seed, 2));
    const auto reference = run_setup(s, {}, {.every_steps = 7});
    QCOMPARE(reference->capture.summary.status, RunStatus::Finished);
    if (setup == "fp16") QVERIFY(reference->capture.summary.skipped_steps > 0);  // overflows happened
    const TrainingCheckpoint checkpoint = interrupted_at(s, k);
    QCOMPARE(checkpoint.step, int64_t(k));
    const int64_t per_epoch = s.data == &images() ? 5 : 8;
    QCOMPARE(checkpoint.epoch, k / per_epoch);
    QCOMPARE(checkpoint.batch, k % per_epoch);
    QVERIFY(weights_digest(checkpoint) != weights_digest(reference->capture.checkpoints.back()));

    const auto resumed_run = resumed(s, checkpoint);
    compare_runs(*reference, *resumed_run, k);
    QCOMPARE(resumed_run->capture.info.resumed_from_step, int64_t(k));
    QVERIFY(resumed_run->capture.has_event("resumed_from_checkpoint"));
    QVERIFY(resumed_run->capture.wall_times.front() >= checkpoint.wall_seconds);
}

// every_steps hands checkpoints during a run; one of them resumes like an interruption's.
void TestCheckpoint::resumeFromAPeriodicCheckpoint() {
    const Setup s = setup_named("fp16");
    const auto reference = run_setup(s, {}, {.every_steps = 7});
    const TrainingCheckpoint& at14 = reference->capture.checkpoints.at(1);
    QCOMPARE(at14.step, int64_t(14));
    compare_runs(*reference, *resumed(s, at14), 14);
}

// An lr change and a scaler change before k, and a scaler change requested at k (pending when
// the checkpoint is taken), reach the resumed run through the checkpoint alone.
void TestCheckpoint::liveChangesBeforeAndAtTheCheckpointCarryOver() {
    const Setup s = setup_named("fp16");
    constexpr int64_t k = 10;
    const Prepare changes = [](Trainer& t, Capture& c) {
        c.on_step_hook = [&t](int64_t step) {
            if (step == 3) t.request_learning_rate(0.004f);
            if (step == 5) {
                LossScalerConfig scaler = t.scaler().config();
                scaler.growth_interval = 5;
                t.request_scaler_config(scaler);
            }
            if (step == k) {
                LossScalerConfig scaler = t.scaler().config();
                scaler.backoff_factor = 0.25;
                t.request_scaler_config(scaler);
            }
        };
    };
    const auto reference = run_setup(s, changes, {.every_steps = 100});
    QVERIFY(reference->capture.has_event("lr_changed"));
    const auto plain = run_setup(s, {}, {});
    QVERIFY(plain->weights != reference->weights);  // the changes matter
    compare_runs(*reference, *resumed(s, interrupted_at(s, k, changes)), k);
}

// A run held after step k (as a paused run waits) is released by checkpoint_and_stop, which
// takes its checkpoint there.
void TestCheckpoint::checkpointAndStopReleasesAHeldRun() {
    const Setup s = setup_named("fp32");
    const auto out = run_setup(s, [](Trainer& t, Capture& c) {
        t.hold_after_step(5);
        c.on_event_hook = [&t](const TrainingEvent& e) {
            if (e.kind == "paused") t.checkpoint_and_stop();
        };
    });
    const Capture& c = out->capture;
    QCOMPARE(c.summary.status, RunStatus::Interrupted);
    QVERIFY(c.has_event("paused"));
    QVERIFY(c.has_event("interrupted"));
    QCOMPARE(static_cast<int>(c.checkpoints.size()), 1);
    QCOMPARE(c.checkpoints.front().step, int64_t(5));
    QCOMPARE(c.summary.steps, int64_t(5));
}

// A stopped run with checkpoints on hands its final state, which resumes like any other.
void TestCheckpoint::aStoppedRunResumes() {
    const Setup s = setup_named("bf16");
    const auto reference = run_setup(s, {}, {.every_steps = 100});
    const auto stopped = run_setup(s,
                                   [](Trainer& t, Capture& c) {
                                       c.on_step_hook = [&t](int64_t step) {
                                           if (step == 13) t.stop();
                                       };
                                   },
                                   {.every_steps = 100});
    QCOMPARE(stopped->capture.summary.status, RunStatus::Stopped);
    QCOMPARE(static_cast<int>(stopped->capture.checkpoints.size()), 1);
    const TrainingCheckpoint& last = stopped->capture.checkpoints.back();
    QCOMPARE(last.step, int64_t(13));
    QCOMPARE(last.batch, int64_t(5));
    compare_runs(*reference, *resumed(s, last), 13);
}

void TestCheckpoint::checkpointsFollowThePolicy() {
    const Setup s = setup_named("fp32");  // 24 steps
    const auto out = run_setup(s, {}, {.every_steps = 7});
    std::vector<int64_t> steps;
    for (const auto& c : out->capture.checkpoints) steps.push_back(c.step);
    QCOMPARE(steps, (std::vector<int64_t>{7, 14, 21, 24}));
    QCOMPARE(out->capture.checkpoints.back().epoch, int64_t(3));
    QCOMPARE(out->capture.checkpoints.back().batch, int64_t(0));
    // The final checkpoint resumes into a run with nothing left to do.
    const auto again = resumed(s, out->capture.checkpoints.back());
    QVERIFY(again->capture.losses.empty());
    QVERIFY(again->weights == out->weights);
    compare_summaries(out->capture.summary, again->capture.summary);
    // Without a policy a finished run hands none.
    QVERIFY(run_setup(s)->capture.checkpoints.empty());
    QVERIFY_THROWS_EXCEPTION(ConfigError, run_setup(s, {}, {.every_steps = -1}));
}

void TestCheckpoint::checkpointOfAnotherRunIsRefused() {
    const Setup s = setup_named("fp32");
    const TrainingCheckpoint checkpoint = interrupted_at(s, 5);
    const auto refused = [&](Setup other, const char* words) {
        try {
            run_setup(other, [&](Trainer& t, Capture&) { t.resume_from(checkpoint); });
        } catch (const ConfigError& e) {
            if (!QTest::qVerify(std::string(e.what()).find(words) != std::string::npos, "message", e.what(),
                                __FILE__, __LINE__))
                return;
            return;
        }
        QFAIL("resume_from accepted a checkpoint of another run");
    };
    Setup wider = s;
    wider.network = mlp_network(32);
    refused(wider, "another network: layers.0.out");
    Setup fp16 = s;
    fp16.config.precision = PrecisionKind::FP16Mixed;
    refused(fp16, "precision: the checkpoint's \"fp32\", this run's \"fp16-mixed\"");
    Setup sgd = s;
    sgd.config.optimizer.kind = "sgd";
    refused(sgd, "optimizer.kind");
    Setup more_data = s;
    more_data.config.dataset.samples = 500;  // the dataset spec differs too
    refused(more_data, "dataset.samples");
}

void TestCheckpoint::damagedStateIsAnError() {
    const Setup s = setup_named("fp8-delayed");
    const TrainingCheckpoint good = interrupted_at(s, 6);
    QVERIFY(!weights_digest(good).empty());
    const auto refused = [&](TrainingCheckpoint bad, const char* words) {
        QVERIFY_THROWS_EXCEPTION(Error, weights_digest(bad));
        try {
            run_setup(s, [&](Trainer& t, Capture&) { t.resume_from(bad); });
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(words) != std::string::npos, e.what());
            return;
        }
        QFAIL("resume_from accepted a damaged checkpoint");
    };
    for (const size_t keep : {size_t{0}, size_t{10}, good.state.size() / 2, good.state.size() - 1}) {
        TrainingCheckpoint cut = good;
        cut.state.resize(keep);
        refused(cut, keep < 24 ? "truncated" : "checksum");
    }
    for (const size_t at : {size_t{3}, size_t{9}, size_t{40}, good.state.size() / 3, good.state.size() - 2}) {
        TrainingCheckpoint flipped = good;
        flipped.state[at] ^= 0x10;
        refused(flipped, at < 8 ? "signature" : at < 12 ? "version" : "checksum");
    }
    TrainingCheckpoint wrong_position = good;
    wrong_position.step += 1;
    QVERIFY_THROWS_EXCEPTION(DataError,
                             run_setup(s, [&](Trainer& t, Capture&) { t.resume_from(wrong_position); }));
}

// Bytes with a valid checksum but counts far beyond their size: an Error, never an allocation
// of what the count says.
void TestCheckpoint::hostileSizesAreRefusedWithoutAllocating() {
    const Setup s = setup_named("fp32");
    const TrainingCheckpoint good = interrupted_at(s, 4);
    const auto refused = [&](const char* tag, size_t offset, uint64_t value) {
        TrainingCheckpoint hostile = good;
        std::memcpy(hostile.state.data() + offset, &value, sizeof value);
        reseal(hostile.state);
        QVERIFY_THROWS_EXCEPTION(Error, weights_digest(hostile));
        Q_UNUSED(tag);
    };
    for (const char* tag : {"CONF", "WGHT", "BUFF", "OPTM", "QUAN", "SUMS"}) {
        const size_t size_at = section_size_offset(good.state, tag);
        QVERIFY(size_at > 0);
        refused(tag, size_at, uint64_t{1} << 62);  // the section's size
        refused(tag, size_at, 0);
    }
    for (const char* tag : {"WGHT", "BUFF", "QUAN"})  // the count that starts a list section
        refused(tag, section_size_offset(good.state, tag) + 8, uint64_t{1} << 62);
    // A state whose sizes are sound but belong to another network shape.
    CheckpointState state = decode_checkpoint_state(good.state);
    state.values.front().pop_back();
    TrainingCheckpoint smaller = good;
    smaller.state = encode_checkpoint_state(state);
    QVERIFY_THROWS_EXCEPTION(DataError, run_setup(s, [&](Trainer& t, Capture&) { t.resume_from(smaller); }));
}

// The sanity check of the comparison: resuming without the optimizer's moments, or with a fresh
// dropout generator, gives other weights.
void TestCheckpoint::losingTheOptimizerOrDropoutStateChangesTheRun() {
    for (const QString name : {"fp32", "conv"}) {
        const Setup s = setup_named(name);
        const auto reference = run_setup(s, {}, {.every_steps = 100});
        const TrainingCheckpoint checkpoint = interrupted_at(s, 7);
        CheckpointState state = decode_checkpoint_state(checkpoint.state);
        if (name == "fp32")
            state.engine.optimizer = make_optimizer(s.config.optimizer)->save_state();
        else
            state.engine.dropout = Rng(123).state();
        TrainingCheckpoint lossy = checkpoint;
        lossy.state = encode_checkpoint_state(state);
        const auto lossy_run = resumed(s, lossy);
        QCOMPARE(lossy_run->capture.summary.status, RunStatus::Finished);
        QVERIFY2(lossy_run->weights != reference->weights, qPrintable(name));
        // and the untouched checkpoint resumes exactly
        QVERIFY(resumed(s, checkpoint)->weights == reference->weights);
    }
}

void TestCheckpoint::everySectionIsCheckedAgainstTheNetwork_data() {
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("words");
    const std::map<QString, QString> words = {
        {"adam moments without second moments",
         "holds a first moment of 256 values and no second moment after 6 updates; a parameter of 256 "
         "values has 256 in each"},
        {"adam second moment of another size", "a second moment of 15 values"},
        {"adam moments before any update", "none before its first"},
        {"adam first moment not finite", "non-finite first moment: inf at element 3 of 32"},
        {"adam second moment negative", "second moment that is negative or NaN: -1 at element 1"},
        {"optimizer state of fewer parameters", "the state of 5 parameters; the network has 6"},
        {"optimizer steps beyond the run's", "1000 updates"},
        {"sgd momentum of another size", "a momentum buffer of 3 values; the parameter has 36"},
        {"sgd second buffer", "a second buffer of 3 values, which SGD does not keep"},
        {"sgd momentum not finite", "non-finite momentum: nan at element 0"},
        {"weight not finite", "nan at element 5"},
        {"reduced copy not the master's", "reduced copy"},
        {"fp16 master not in fp16", "fp16"},
        {"scaler steps beyond the run's", "1000"},
        {"recipe scale of zero", "scale"},
        {"recipe scale not finite", "scale"},
        {"recipe amax negative", "amax"},
        {"block recipe with a history", "history"},
        {"dropout generator of zeros", "generator"},
        {"dropout spare not finite", "generator"},
        {"position off its step", "step 6"},
        {"position past the epochs", "epoch 3"},
        {"more epochs completed than begun", "epochs_completed"},
        {"more samples than steps", "trained_samples"},
        {"negative count", "since_eval_steps"},
    };
    for (const auto& [name, damage] : damages()) QTest::newRow(qPrintable(name)) << name << words.at(name);
}

// A checkpoint whose checksum is right but one section does not fit the network it restores
// into is refused with a DataError naming the checkpoint, the problem and its numbers, before
// anything changes: the trainer then runs exactly as a fresh one does.
void TestCheckpoint::everySectionIsCheckedAgainstTheNetwork() {
    QFETCH(QString, damage);
    QFETCH(QString, words);
    const Damage& d = damages().at(damage);
    const Setup s = setup_named(d.setup);
    const TrainingCheckpoint good = interrupted_at(s, 6);
    TrainingCheckpoint bad = good;
    bad.source = "test checkpoint";
    CheckpointState state = decode_checkpoint_state(good.state);
    d.apply(state, bad);
    bad.state = encode_checkpoint_state(state);
    std::string error;
    const auto after = run_setup(s, [&](Trainer& t, Capture&) {
        try {
            t.resume_from(bad);
        } catch (const DataError& e) {
            error = e.what();
        }
    });
    QVERIFY2(!error.empty(), "resume_from accepted the damaged checkpoint");
    QVERIFY2(error.find("test checkpoint") != std::string::npos, error.c_str());
    QVERIFY2(error.find(words.toStdString()) != std::string::npos, error.c_str());
    QCOMPARE(after->capture.info.resumed_from_step, int64_t{0});
    QVERIFY(after->weights == run_setup(s)->weights);
}

// The same row count with other values: the checkpoint's data digest tells, and the resume is
// refused naming both digests.
void TestCheckpoint::changedDataIsRefused() {
    const Setup s = setup_named("fp32");
    const TrainingCheckpoint checkpoint = interrupted_at(s, 6);
    static const Dataset changed = [] {
        Dataset d = spiral();
        d.train_x.data()[7] += 0.25f;
        return d;
    }();
    Setup other = s;
    other.data = &changed;
    const std::string trained = digest_text(dataset_digest(spiral()));
    const std::string now = digest_text(dataset_digest(changed));
    QVERIFY(trained != now);
    try {
        run_setup(other, [&](Trainer& t, Capture&) { t.resume_from(checkpoint); });
        QFAIL("resume_from accepted a checkpoint of other data");
    } catch (const ConfigError& e) {
        const std::string text = e.what();
        QVERIFY2(text.find("now has digest " + now + ", the run trained on data with digest " + trained) !=
                     std::string::npos,
                 e.what());
    }
    // The user's choice: continue on the new data, which the run records as an event.
    const auto allowed = run_setup(
        other, [&](Trainer& t, Capture&) { t.resume_from(checkpoint, {.allow_changed_data = true}); });
    QCOMPARE(allowed->capture.summary.status, RunStatus::Finished);
    QCOMPARE(allowed->capture.info.resumed_from_step, int64_t{6});
    const auto changed_event = std::find_if(allowed->capture.events.begin(), allowed->capture.events.end(),
                                            [](const TrainingEvent& e) { return e.kind == "data_changed"; });
    QVERIFY(changed_event != allowed->capture.events.end());
    QCOMPARE(changed_event->detail.at("trained_digest").get<std::string>(), trained);
    QCOMPARE(changed_event->detail.at("digest").get<std::string>(), now);
    // The same data loaded again has the same digest, and its run records no such event.
    QCOMPARE(dataset_digest(load_dataset(spiral_spec())), dataset_digest(spiral()));
    QVERIFY(!resumed(s, checkpoint)->capture.has_event("data_changed"));
}

// A state written before the data digest (version 1, without the DATA section) still resumes,
// bit for bit.
void TestCheckpoint::versionOneStateStillResumes() {
    const Setup s = setup_named("fp32");
    const auto reference = run_setup(s, {}, {.every_steps = 100});
    const TrainingCheckpoint checkpoint = interrupted_at(s, 9);
    TrainingCheckpoint old = checkpoint;
    const size_t data_at = section_size_offset(old.state, "DATA") - 4;
    old.state.erase(old.state.begin() + static_cast<std::ptrdiff_t>(data_at), old.state.end() - 8);
    const uint32_t version = 1, sections = 10;
    std::memcpy(old.state.data() + 8, &version, 4);
    std::memcpy(old.state.data() + 12, &sections, 4);
    reseal(old.state);
    QVERIFY(!decode_checkpoint_state(old.state).data_digest);
    compare_runs(*reference, *resumed(s, old), 9);
}

// The digest of the weights a run ends with (on_final_weights) equals its final checkpoint's, so
// runs with and without checkpoints compare; BatchNorm's buffers sit between layers' parameters
// there and after all of them in a checkpoint.
void TestCheckpoint::finalWeightsDigestEqualsTheCheckpoints() {
    const Setup s = setup_named("conv");
    auto backend = make_cpu_backend();
    Network net = Network::from_json(s.network);
    Trainer trainer(net, *s.data, s.config, *backend);
    Capture capture;
    trainer.add_observer(&capture);
    trainer.set_checkpoint_policy({.every_steps = 1000});
    trainer.run();
    QCOMPARE(weights_digest(network_weights(net, capture.summary.steps)),
             weights_digest(capture.checkpoints.back()));
    QVERIFY(weights_digest(network_weights(net, 0)) != weights_digest(interrupted_at(s, 3)));
}

// The Trainer reads epoch 1's windows at its phase: the same run on the same windows without
// the token stream (every epoch at phase 0) has the same losses in epoch 0 and others after.
void TestCheckpoint::laterEpochsReadShiftedWindows() {
    Setup phased = setup_named("gpt");
    Dataset unphased_data = text_windows();
    unphased_data.train_tokens.clear();
    Setup unphased = phased;
    unphased.data = &unphased_data;
    const auto a = run_setup(phased), b = run_setup(unphased);
    for (int64_t step = 1; step <= 8; ++step)
        COMPARE_BITS(a->capture.losses.at(step), b->capture.losses.at(step));
    for (int64_t step = 9; step <= 16; ++step)
        QVERIFY2(a->capture.losses.at(step) != b->capture.losses.at(step), qPrintable(QString::number(step)));
}

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
