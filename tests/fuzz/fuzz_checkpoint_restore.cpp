// libFuzzer harness: a checkpoint restored into a network and trained on (Trainer::resume_from,
// core/train/checkpoint_restore.h), the path a checkpoint from a run database or a bundle takes
// before a resumed run's first step. The input: byte 0 picks the setup (Adam under fp32; SGD with
// momentum under fp16-mixed with BatchNorm and Dropout; Adam under fp8-delayed), bytes 1 to 3
// the position (step, epoch, batch), the rest the state, whose checksum the harness rewrites (as
// fuzz_checkpoint_state does) so the sections are reached. A restore that succeeds must train one
// step: a run that then fails is a finding, as is a crash, a sanitizer report or an exception
// that is not the app's own. Tiny networks on 40 points keep each input well under a millisecond.
//
// With MPWB_FUZZ_WRITE_SEEDS=<folder>, the harness first writes its seed corpus there: one
// checkpoint per setup, taken at step 5 of a real run (tests/fuzz/corpus/fuzz_checkpoint_restore).
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

constexpr size_t kHeaderBytes = 4;  // setup, step, epoch, batch

struct Setup {
    nlohmann::json network;
    mpwb::TrainConfig config;
};

nlohmann::json mlp(bool batchnorm) {
    nlohmann::json layers = {{{"type", "Linear"}, {"out", 4}}};
    if (batchnorm) layers.push_back({{"type", "BatchNorm"}});
    layers.push_back({{"type", "ReLU"}});
    if (batchnorm) layers.push_back({{"type", "Dropout"}, {"p", 0.25}});
    layers.push_back({{"type", "Linear"}, {"out", 2}});
    return {{"name", "tiny"}, {"loss", "cross_entropy"}, {"layers", layers}};
}

const std::array<Setup, 3>& setups() {
    static const std::array<Setup, 3> all = [] {
        mpwb::TrainConfig base;
        base.dataset.kind = "spiral";
        base.dataset.samples = 40;  // 32 to train: 4 steps of 8 per epoch
        base.epochs = 3;
        base.batch_size = 8;
        base.eval_batch = 8;
        base.threads = 1;
        base.lr = 0.01f;
        std::array<Setup, 3> s{Setup{mlp(false), base}, Setup{mlp(true), base}, Setup{mlp(false), base}};
        s[0].config.optimizer.kind = "adam";
        s[1].config.optimizer = {.kind = "sgd", .momentum = 0.9f};
        s[1].config.precision = mpwb::PrecisionKind::FP16Mixed;
        s[2].config.optimizer.kind = "adam";
        s[2].config.precision = mpwb::PrecisionKind::Fp8Delayed;
        s[2].config.recipe.amax_history_len = 4;
        return s;
    }();
    return all;
}

const mpwb::Dataset& data() {
    static const mpwb::Dataset d = mpwb::load_dataset(setups()[0].config.dataset);
    return d;
}

mpwb::Backend& backend() {
    static const std::unique_ptr<mpwb::Backend> b = mpwb::make_cpu_backend();
    return *b;
}

// Stops the run after its first step (a resumed run's first), or checkpoints it at `at`.
class StepWatch final : public mpwb::TrainingObserver {
public:
    StepWatch(mpwb::Trainer& trainer, int64_t checkpoint_at) : trainer_(trainer), at_(checkpoint_at) {}
    void on_step(const mpwb::StepMetrics& m) override {
        if (at_ == 0) trainer_.stop();
        if (m.step == at_) trainer_.checkpoint_and_stop();
    }
    void on_checkpoint(const mpwb::TrainingCheckpoint& c) override { checkpoint = c; }
    mpwb::TrainingCheckpoint checkpoint;

private:
    mpwb::Trainer& trainer_;
    int64_t at_;
};

// The checksum the format uses (checkpoint_state.h): FNV-1a 64 of everything before it.
uint64_t fnv1a64(const uint8_t* bytes, size_t size) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
}

void write_seeds(const std::string& folder) {
    for (size_t i = 0; i < setups().size(); ++i) {
        mpwb::Network net = mpwb::Network::from_json(setups()[i].network);
        mpwb::Trainer trainer(net, data(), setups()[i].config, backend());
        StepWatch watch(trainer, 5);
        trainer.add_observer(&watch);
        trainer.run();
        const mpwb::TrainingCheckpoint& c = watch.checkpoint;
        // A seed must restore, or the harness would never reach the step after it.
        mpwb::Network again = mpwb::Network::from_json(setups()[i].network);
        mpwb::Trainer(again, data(), setups()[i].config, backend()).resume_from(c);
        std::vector<uint8_t> seed = {static_cast<uint8_t>(i), static_cast<uint8_t>(c.step),
                                     static_cast<uint8_t>(c.epoch), static_cast<uint8_t>(c.batch)};
        seed.insert(seed.end(), c.state.begin(), c.state.end());
        const std::string names[] = {"adam-fp32", "sgd-fp16-batchnorm", "adam-fp8-delayed"};
        const std::string path = folder + "/" + names[i] + ".seed";
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (!f || std::fwrite(seed.data(), 1, seed.size(), f) != seed.size() || std::fclose(f) != 0) {
            std::perror(path.c_str());
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* folder = std::getenv("MPWB_FUZZ_WRITE_SEEDS")) write_seeds(folder);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
    if (size < kHeaderBytes) return 0;
    const Setup& setup = setups()[bytes[0] % setups().size()];
    mpwb::TrainingCheckpoint checkpoint;
    checkpoint.step = bytes[1];
    checkpoint.epoch = bytes[2];
    checkpoint.batch = bytes[3];
    checkpoint.source = "fuzz input";
    checkpoint.state.assign(bytes + kHeaderBytes, bytes + size);
    std::vector<uint8_t>& state = checkpoint.state;
    if (state.size() >= sizeof(uint64_t)) {
        const uint64_t sum = fnv1a64(state.data(), state.size() - sizeof sum);
        std::memcpy(state.data() + state.size() - sizeof sum, &sum, sizeof sum);
    }
    mpwb::Network net = mpwb::Network::from_json(setup.network);
    mpwb::Trainer trainer(net, data(), setup.config, backend());
    mpwb::fuzz::expect_app_errors([&] {
        trainer.resume_from(checkpoint, {.allow_changed_data = (bytes[0] & 0x80) != 0});
        StepWatch watch(trainer, 0);
        trainer.add_observer(&watch);
        const mpwb::RunSummary summary = trainer.run();
        if (summary.status == mpwb::RunStatus::Failed) {
            std::fprintf(stderr, "finding: a restored checkpoint failed the run: %s\n",
                         summary.error.c_str());
            std::abort();
        }
    });
    return 0;
}
