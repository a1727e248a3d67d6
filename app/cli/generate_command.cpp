// mpwb-cli generate: text from a run's final weights. The prompt is encoded with the run's own
// vocabulary, so an unknown character is refused by name and offset rather than mapped to
// something else; the text is printed as the model writes it, the prompt first.
#include <cstdio>
#include <string>

#include "app/cli/commands.h"
#include "app/cli/store_options.h"
#include "core/backend/cpu/cpu_backend.h"
#include "core/common/parallel.h"
#include "core/common/printable.h"
#include "core/train/text_sampler.h"
#include "sessions/run_language_model.h"

namespace mpwb::cli {

namespace {

struct GenerateArgs {
    std::string db;
    std::int64_t run_id = 0;
    std::string prompt = "\n";
    SamplingSettings sampling;
    int threads = 0;
};

void run_generate(const GenerateArgs& a) {
    a.sampling.validate();
    set_thread_count(a.threads);
    auto store = open_store_for_command(a.db, false);
    RunLanguageModel model = load_run_language_model(*store, a.run_id);
    const std::vector<int32_t> prompt = model.vocabulary.encode(a.prompt, "--prompt");
    if (prompt.empty()) throw ConfigError("--prompt is empty: give at least one character to continue");
    CpuBackend backend;
    const std::vector<int32_t> drawn =
        sample_tokens(model.network, backend, PrecisionPolicy::make(PrecisionKind::FP32), prompt, a.sampling);
    // A byte-level model may write bytes that are not UTF-8 or that a terminal acts on.
    std::printf("%s\n", printable_lines(a.prompt + model.vocabulary.decode(drawn)).c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
    auto args = std::make_shared<GenerateArgs>();
    auto* cmd = app.add_subcommand(
        "generate", "Sample text from a text run's final weights (FP32, on the CPU), the prompt first");
    cmd->add_option("run", args->run_id, "The run's id (mpwb-cli runs list)")
        ->required()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--db", args->db, "Run database (default: the workbench's)");
    cmd->add_option("--prompt", args->prompt,
                    "Text to continue, in the run's vocabulary (default: a newline)");
    cmd->add_option("--tokens", args->sampling.tokens, "Tokens to draw")
        ->check(CLI::Range(int64_t{1}, kMaxSampledTokens));
    cmd->add_option("--temperature", args->sampling.temperature,
                    "Softmax temperature; 0 draws the most likely")
        ->check(CLI::Range(0.0f, 100.0f));
    cmd->add_option("--top-k", args->sampling.top_k, "Draw only among the k most likely tokens (0: all)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--seed", args->sampling.seed, "Seed of the draws");
    cmd->add_option("--threads", args->threads, "CPU threads (0: all cores)")->check(CLI::Range(0, 1024));
    cmd->callback([args] { run_generate(*args); });
}

}  // namespace mpwb::cli
