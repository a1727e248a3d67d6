// The text a language model writes during training (Trainer::write_text_sample): after each
// evaluation, the configured prompt continued with the run's own policy and weights, kept with
// the run as a "sample" event so the Samples tab, `runs show` and reports can read how the writing
// grew. The draws are seeded by the run's seed and the step: a rerun or a resumed run writes the
// same text at the same step.
#include "core/common/error.h"
#include "core/common/printable.h"
#include "core/train/text_sampler.h"
#include "core/train/trainer.h"

namespace mpwb {

namespace {

uint64_t sample_seed(uint64_t run_seed, int64_t step) {
    return (run_seed * 0x9E3779B97F4A7C15ull) ^ static_cast<uint64_t>(step) ^ 0x5A4D706C65ull;
}

}  // namespace

void Trainer::write_text_sample(int64_t step, double wall_time) {
    if (!data_.vocabulary || !config_.samples.enabled) return;
    const TextSampleConfig& config = config_.samples;
    TrainingEvent event{.step = step, .wall_time = wall_time, .kind = "sample", .source = "trainer"};
    SamplingSettings settings = config.sampling;
    settings.seed = sample_seed(config_.seed, step);
    try {
        const std::vector<int32_t> prompt = data_.vocabulary->encode(config.prompt, "samples.prompt");
        const std::vector<int32_t> drawn = sample_tokens(network_, backend_, policy_, prompt, settings);
        // A byte-level model may write bytes that are not UTF-8 or that a terminal acts on.
        event.detail = {{"prompt", printable_lines(config.prompt)},
                        {"text", printable_lines(data_.vocabulary->decode(drawn))},
                        {"tokens", settings.tokens},
                        {"temperature", settings.temperature},
                        {"top_k", settings.top_k}};
    } catch (const Error& e) {
        event.kind = "sample_failed";
        event.detail = {{"error", e.what()}};
    }
    emit_event(event);
}

}  // namespace mpwb
