// The figures that summarise a stored run, each defined once here: the run browser's table,
// `mpwb-cli runs compare`, the report and the run's "summary" event all show these, so one
// run reads the same everywhere. Definitions:
//   samples/s      training throughput: samples trained / seconds spent in training steps,
//                  evaluation excluded (RunSummary::samples_per_second, from the "summary"
//                  event; for a run without one, the same ratio from the step_seconds and
//                  samples_per_second series).
//   speed-up       samples/s over the first FP32 run's samples/s; none without an FP32 run
//                  (`mpwb-cli compare` shows this figure too).
//   final / best test accuracy   the last / the highest evaluation (finite values only).
//   skipped steps, overflows     the running totals' last value.
//   loss-scale range             lowest and highest scale a step used, "2^15 … 2^17".
//   mean underflow share of activation-gradient elements below the smallest subnormal of the
//                  run's reduced format (FP16 for FP32/TF32 runs), averaged over every stored
//                  activation-gradient histogram.
//   duration       ended - started (now - started while running).
// A text run (dataset "text" or "fortunes") is measured per token: its accuracy is the next-token
// accuracy (a prediction per position), its test loss is in nats per token and also in bits per
// token, which is bits per character for the character tokenizer and bits per byte for the byte
// tokenizer (a token is one of either), and its throughput is in tokens/s: samples/s x context,
// the positions of each training window (the trainer's tokens_per_second series, over the run).
#pragma once
#include "core/common/text_format.h"
#include "core/numeric/format.h"
#include "sessions/run_types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mpwb {

class RunStore;

struct ScaleRange {
    double min = 0, max = 0;
};

struct TargetReach {
    std::int64_t step = 0;
    double seconds = 0;  // since the run started
};

// What a text run's figures are per: its tokenizer's unit and the positions of a window.
struct TextRunFigures {
    std::string unit = "character";  // "character" (tokenizer char) or "byte" (tokenizer byte)
    std::int64_t context = 0;        // positions per window, from the run's dataset settings
    std::optional<double> final_test_bits_per_token;  // the last evaluation's, bits per unit
    std::optional<double> tokens_per_second;          // samples_per_second x context
};

struct RunFigures {
    std::int64_t steps = 0;
    std::optional<double> final_test_accuracy, best_test_accuracy, final_test_loss;
    std::optional<double> samples_per_second;
    std::int64_t skipped_steps = 0, overflow_count = 0;
    std::optional<ScaleRange> loss_scale;
    std::optional<double> mean_activation_underflow;
    Format underflow_format = Format::FP16;
    std::optional<double> duration_seconds;
    std::optional<TextRunFigures> text;  // set for a text run only
};

// What the run table shows: read from the run row and its "summary" event only, so listing
// many runs scans no histogram (and no metric series, except for runs without a summary).
RunFigures list_figures(RunStore& store, const Run& run);
// Everything, mean underflow included (reads the activation-gradient histograms).
RunFigures run_figures(RunStore& store, const Run& run);

// ended - started; now - started while running; nullopt for a run that never started.
std::optional<double> run_duration(const Run& run);
// The samples/s figure alone (see the definition above); nullopt for a run without steps.
std::optional<double> training_throughput(RunStore& store, const Run& run);
// The first evaluation whose test accuracy is at least `target` (a fraction).
std::optional<TargetReach> time_to_accuracy(RunStore& store, const Run& run, double target);
// What a speed-up is computed from: a run's precision ("fp32", as stored) and its samples/s.
struct RunThroughput {
    std::string precision;
    std::optional<double> samples_per_second;
};
// The run the speed-ups are over: the first FP32 run with a samples/s figure; nullopt without one.
std::optional<std::size_t> fp32_reference(const std::vector<RunThroughput>& runs);
// Speed-up of each run over fp32_reference; nullopt where either figure is missing (for every
// run when there is no FP32 run: never over some other run).
std::vector<std::optional<double>> speedups_over_fp32(const std::vector<RunThroughput>& runs);
// The same for stored runs and their figures.
std::vector<std::optional<double>> speedups_over_fp32(const std::vector<Run>& runs,
                                                      const std::vector<RunFigures>& figures);
// The format a run's gradients are judged against: BF16 for bf16 policies, else FP16.
Format gradient_reference_format(const std::string& precision);

// The text figures of a run on a text dataset, from its stored configuration and its series'
// latest values; nullopt for any other run (or a configuration that cannot be read).
std::optional<TextRunFigures> text_run_figures(const Run& run, std::optional<double> samples_per_second);

// Display texts, the same in every view.
// "next-token accuracy" for a text run, "test accuracy" otherwise.
std::string accuracy_name(const RunFigures& figures);
// "bits/character" or "bits/byte": the unit of TextRunFigures::final_test_bits_per_token.
std::string bits_unit_text(const TextRunFigures& text);
// "1.234 nats/token (1.780 bits/character)" for a text run, "1.234" for any other; "-" for none.
std::string test_loss_text(const RunFigures& figures);
// "12,345 tokens/s" for a text run, "51,485 samples/s" for any other; "-" for none.
std::string throughput_text(const RunFigures& figures);
// "2^16", or "0.3" for a value that is not a power of two.
std::string power_of_two_text(double value);
// "2^15 … 2^17", or one value when the scale never changed.
std::string scale_range_text(const ScaleRange& range);
// "1.23×".
std::string speedup_text(double speedup);

}  // namespace mpwb
