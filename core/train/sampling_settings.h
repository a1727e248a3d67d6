// What to sample from a language model and how: plain values, so the training settings (the
// samples a text run writes after each evaluation) and the views that edit them need nothing of
// the sampler itself (core/train/text_sampler.h).
#pragma once
#include <cstdint>
#include <string>

namespace mpwb {

inline constexpr int64_t kMaxSampledTokens = 100000;

struct SamplingSettings {
    int64_t tokens = 200;      // new tokens to draw
    float temperature = 1.0f;  // 0: greedy (the most likely token; the lowest id on a tie)
    int64_t top_k = 0;         // 0: every token; else only the k most likely
    uint64_t seed = 1;

    // ConfigError naming the setting: tokens in [1, kMaxSampledTokens], temperature finite and
    // >= 0, top_k >= 0.
    void validate() const;
    bool operator==(const SamplingSettings&) const = default;
};

// The sample a text run writes after each evaluation, kept with the run as a "sample" event. Its
// draws are seeded by the run's seed and the step, so a rerun writes the same text.
struct TextSampleConfig {
    bool enabled = true;  // only text runs sample
    std::string prompt = "\n";
    SamplingSettings sampling{.tokens = 200, .temperature = 0.8f, .top_k = 0, .seed = 0};

    bool operator==(const TextSampleConfig&) const = default;
};

}  // namespace mpwb
