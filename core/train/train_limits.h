// The ranges of the training settings: one definition for every source of them. The CLI's flags
// check against these (app/cli/training_options.cpp), and TrainConfig::validate holds presets,
// network and spec files, stored runs and bundles to the same numbers. Far beyond any real run,
// and small enough that no count derived from them (epochs x steps per epoch) overflows int64.
#pragma once
#include <cstdint>

namespace mpwb {

struct TrainLimits {
    static constexpr std::int64_t kMaxEpochs = 1'000'000'000;
    // Steps of a run, and every setting counted in steps (max_steps, eval_every, warm-up ...).
    static constexpr std::int64_t kMaxSteps = 1'000'000'000'000'000;
    // batch_size and eval_batch.
    static constexpr std::int64_t kMaxBatch = std::int64_t{1} << 24;
    // CPU threads a run starts: beyond any machine's cores, below what starves the system of
    // processes (each is a thread of the process's pool).
    static constexpr int kMaxThreads = 4096;
    // Upper bound of the rates and norms (lr, weight decay, gamma, min_lr, clip_norm): finite and
    // far from float's 3.4e38, so products with them stay finite.
    static constexpr double kMaxRate = 1e30;
};

}  // namespace mpwb
