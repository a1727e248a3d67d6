// Shared training options.
#include "app/cli/training_options.h"

#include <charconv>
#include <filesystem>

#include "app/cli/option_checks.h"
#include "core/common/error.h"
#include "core/data/synthetic.h"
#include "core/data/text_corpus.h"
#include "core/nn/loss_registry.h"
#include "core/optim/optimizer_registry.h"
#include "core/train/dataset_source.h"

namespace mpwb::cli {

std::map<std::string, FlagSpelling> scaler_flag_spellings() {
    return {{"mode", {"--scaler", {}}},  // --mode would not say what it sets
            {"initial_scale", {"", {"--init-scale"}}},
            {"refill", {"", {"--hysteresis-refill"}}},
            {"count_skipped_steps", {"", {"--count-skipped"}}}};
}

std::string default_preset_name() {
    return std::filesystem::exists(kDefaultFashionMnistPath) ? "fashion-mlp" : "spiral-mlp";
}

namespace {

// "fp32, tf32, ..., nvfp4": every precision this build knows.
std::string precision_list() {
    std::string text;
    for (const auto& name : precision_names()) text += (text.empty() ? "" : ", ") + name;
    return text;
}

// "fp8-delayed, fp8-current, ...": the precisions with a scaled recipe.
std::string scaled_precision_list() {
    std::string text;
    for (const PrecisionKind kind : precision_kinds())
        if (PrecisionPolicy::make(kind).scaled()) text += (text.empty() ? "" : ", ") + precision_name(kind);
    return text;
}

// "28x28" or "28" into the spec's image height and width; ConfigError naming the flag otherwise
// (the range is DatasetSpec::validate's).
void set_image_size(DatasetSpec& spec, const std::string& text) {
    const size_t x = text.find_first_of("xX");
    const std::string height = text.substr(0, x),
                      width = x == std::string::npos ? height : text.substr(x + 1);
    const auto side = [&](const std::string& part) {
        int value = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (ec != std::errc() || end != part.data() + part.size() || part.empty())
            throw ConfigError("--image-size: expected HEIGHTxWIDTH such as 28x28, gets '" + text + "'");
        return value;
    };
    spec.image_height = side(height);
    spec.image_width = side(width);
}

}  // namespace

void TrainingOptions::add_to(CLI::App& app, bool with_precision) {
    app.add_option("--preset", preset,
                   "Preset: spiral-mlp, fashion-mlp, fashion-cnn (default: fashion-mlp, or spiral-mlp "
                   "without the dataset)");
    app.add_option("--network", network_file, "Network JSON file (or a preset file)");
    app.add_option("--dataset", dataset,
                   "spiral, circles, xor, gauss, moons, fashion-mnist, mnist, csv, image-folder, text, "
                   "fortunes");
    app.add_option("--data-path", data_path,
                   "Folder of IDX files, a CSV file, an image folder (one sub-folder of PNG/JPEG per class), "
                   "a text file, or a fortunes folder (default: Debian's)");
    app.add_option("--tokenizer", tokenizer,
                   "Text datasets: byte (256 tokens) or char (the text's characters)");
    app.add_option("--context", context, "Text datasets: tokens per window")
        ->check(whole_number(1, kTextMaxContext));
    app.add_option("--image-size", image_size,
                   "Image folders: HEIGHTxWIDTH every image becomes (e.g. 28x28)");
    app.add_option("--channels", channels, "Image folders: 1 (grayscale) or 3 (RGB)")
        ->check(whole_number(1, 3));
    app.add_option("--size-mismatch", size_mismatch,
                   "Image folders: resize images of another size, or error (refuse the dataset)");
    app.add_option("--data-seed", data_seed,
                   "Seed of the train/test split (CSV, image folders, synthetic sets)")
        ->check(unsigned_number());
    app.add_option("--samples", samples, "Synthetic sets: number of points")
        ->check(whole_number(1, kMaxSyntheticSamples));
    app.add_option("--noise", noise, "Synthetic sets: noise 0..1")->check(real_number(0, 1));
    app.add_option("--test-ratio", test_ratio, "Fraction held out for testing")
        ->check(real_number(0, 1, true, true));
    app.add_flag("--no-normalize", no_normalize,
                 "Do not normalise inputs with the train split's mean and std");
    app.add_option("--epochs", epochs, "Epochs")->check(whole_number(1, kMaxEpochs));
    app.add_option("--max-steps", max_steps, "Stop after this many steps (0 = no limit)")
        ->check(whole_number(0, kMaxSteps));
    app.add_option("--batch", batch, "Batch size")->check(whole_number(1, TrainLimits::kMaxBatch));
    app.add_option("--lr", lr, "Learning rate")->check(real_number(0, TrainLimits::kMaxRate, true));
    add_optimizer_flags(app);
    app.add_option("--schedule", schedule, "constant, step, cosine");
    app.add_option("--warmup", warmup, "Linear warm-up steps")->check(whole_number(0, kMaxSteps));
    app.add_option("--step-size", step_size, "Step schedule: steps between decays")
        ->check(whole_number(1, kMaxSteps));
    app.add_option("--gamma", gamma, "Step schedule: decay factor")
        ->check(real_number(0, TrainLimits::kMaxRate, true));
    app.add_option("--min-lr", min_lr, "Cosine schedule: final learning rate")
        ->check(real_number(0, TrainLimits::kMaxRate));
    app.add_option("--clip-norm", clip_norm, "Clip the global gradient norm (after unscaling); 0 = off")
        ->check(real_number(0, TrainLimits::kMaxRate));
    app.add_option("--seed", seed, "Seed of initial weights, batch order and dropout")
        ->check(unsigned_number());
    app.add_option("--threads", threads, "CPU threads (0 = all cores)")
        ->check(whole_number(0, TrainLimits::kMaxThreads));
    app.add_option("--eval-every", eval_every, "Evaluate every N steps (default: every epoch)")
        ->check(whole_number(0, kMaxSteps));
    app.add_option("--stats-every", stats_every, "Gradient exponent statistics every K steps (0 = off)")
        ->check(whole_number(0, kMaxSteps));
    add_precision_rule_flags(app);  // bench too: what a rule or a what-if recipe costs
    if (!with_precision) return;
    app.add_option("--precision", precision, precision_list());
    recipe_flags.add_to(app, "Scaled recipes (fp8-delayed, fp8-current, fp8-block, mxfp8, nvfp4, mxfp4)");
    app.add_option("--weight-grad-format", weight_grad_format,
                   "Storage of weight gradients: fp32, fp16, bf16");
    app.add_flag("--fp32-residual", fp32_residual,
                 "Keep a transformer's residual stream in FP32 whatever the precision");
    const std::string scaler_group = "Loss scaler";
    app.add_option("--scaler-like", scaler_like,
                   "Start from a known system's rules: pytorch, deepspeed, megatron, nnabla; the flags "
                   "below change them")
        ->type_name("NAME")
        ->group(scaler_group);
    scaler_flags.add_to(app, scaler_group);
}

// A precision per GEMM and pass, and the what-if recipes (DESIGN.md, "Precision per layer").
void TrainingOptions::add_precision_rule_flags(CLI::App& app) {
    const std::string group = "Precision per GEMM";
    app.add_option(
           "--precision-rule", precision_rules,
           "A GEMM's precision per pass, first match wins: GLOB=RECIPE, GLOB=fprop:R,dgrad:R,wgrad:R or "
           "a JSON object {\"match\": \"*.attn.*\", \"wgrad\": \"bf16\"}; GEMMs are named 3 (layer 3's "
           "one GEMM) or 3.attn.qkv; R is bf16 or a scaled recipe (repeatable)")
        ->type_name("RULE")
        ->group(group);
    app.add_flag("--keep-ends-bf16", keep_ends_bf16,
                 "Keep every GEMM of the first and last layers with GEMMs in BF16 (all passes)")
        ->group(group);
    app.add_flag("--backward-bf16", backward_bf16, "Run every GEMM's dgrad and wgrad in BF16")->group(group);
    app.add_option("--what-if", what_if,
                   "On statistics steps, also quantize every GEMM operand by these recipes without using the "
                   "result, and record their statistics (comma-separated, e.g. mxfp8,nvfp4)")
        ->type_name("RECIPES")
        ->group(group);
}

void TrainingOptions::apply_precision_rule_flags(TrainConfig& c) const {
    if (!precision_rules.empty()) {
        if (precision_rules.size() > kMaxPrecisionRules)
            throw ConfigError("--precision-rule is given " + std::to_string(precision_rules.size()) +
                              " times; at most " + std::to_string(kMaxPrecisionRules));
        c.precision_rules.rules.clear();
        for (const std::string& rule : precision_rules)
            c.precision_rules.rules.push_back(parse_precision_rule(rule));
    }
    if (keep_ends_bf16) c.precision_rules.keep_ends_bf16 = true;
    if (backward_bf16) c.precision_rules.backward_bf16 = true;
    if (what_if) c.what_if = parse_what_if_list(*what_if);
}

// The optimizer, its settings and the loss, with the choices and help of their registries.
void TrainingOptions::add_optimizer_flags(CLI::App& app) {
    std::string optimizers;
    for (const OptimizerDefinition& o : optimizer_registry())
        optimizers += (optimizers.empty() ? "" : "; ") + o.name + ": " + o.help;
    app.add_option("--optimizer", optimizer, "Optimizer. " + optimizers);
    // "Momentum (sgd)": the optimizers a setting applies to.
    const auto help = [](const std::string& what, const char* setting) {
        return what + " (" + optimizers_reading(setting) + ")";
    };
    app.add_option("--momentum", momentum, help("Momentum", "momentum"))
        ->check(real_number(0, 1, false, true));
    app.add_flag("--nesterov", nesterov, help("Nesterov momentum", "nesterov"));
    app.add_option("--weight-decay", weight_decay, help("Weight decay", "weight_decay"))
        ->check(real_number(0, TrainLimits::kMaxRate));
    app.add_option("--beta1", beta1, help("First moment decay", "beta1"))
        ->check(real_number(0, 1, false, true));
    app.add_option("--beta2", beta2, help("Second moment decay", "beta2"))
        ->check(real_number(0, 1, false, true));
    app.add_option("--eps", eps, help("Denominator epsilon", "eps"))
        ->check(real_number(0, TrainLimits::kMaxRate, true));
    std::string losses;
    for (const LossDefinition& l : loss_registry())
        losses += (losses.empty() ? "" : "; ") + l.name + ": " + l.help + " (" + target_kind_text(l.targets) +
                  " targets)";
    app.add_option("--loss", loss, "The network's loss (default: the network's own). " + losses);
}

void TrainingOptions::apply_optimizer_flags(Preset& p) const {
    OptimizerConfig& o = p.training.optimizer;
    if (optimizer) o.kind = *optimizer;
    if (momentum) o.momentum = *momentum;
    if (nesterov) o.nesterov = true;
    if (weight_decay) o.weight_decay = *weight_decay;
    if (beta1) o.beta1 = *beta1;
    if (beta2) o.beta2 = *beta2;
    if (eps) o.eps = *eps;
    if (loss) {
        if (!find_loss(*loss))
            throw ConfigError("--loss: unknown loss '" + *loss + "'; choose " + loss_name_list());
        p.network["loss"] = *loss;
    }
}

Preset TrainingOptions::resolve() const {
    Preset p;
    if (!network_file.empty()) {
        p = load_preset_file(network_file);
        if (!preset.empty()) p.training = load_preset(preset).training;
    } else {
        p = load_preset(preset.empty() ? default_preset_name() : preset);
    }
    TrainConfig& c = p.training;
    if (dataset) c.dataset.kind = *dataset;
    if (data_path) c.dataset.path = *data_path;
    if (samples) c.dataset.samples = *samples;
    if (noise) c.dataset.noise = *noise;
    if (test_ratio) c.dataset.test_ratio = *test_ratio;
    if (no_normalize) c.dataset.normalize = false;
    if (image_size) set_image_size(c.dataset, *image_size);
    if (channels) c.dataset.channels = *channels;
    if (size_mismatch) c.dataset.size_mismatch = *size_mismatch;
    if (data_seed) c.dataset.seed = *data_seed;
    if (tokenizer) c.dataset.tokenizer = *tokenizer;
    if (context) c.dataset.context = *context;
    c.dataset.validate();
    if (epochs) c.epochs = *epochs;
    if (max_steps) c.max_steps = *max_steps;
    if (batch) c.batch_size = *batch;
    if (lr) c.lr = *lr;
    apply_optimizer_flags(p);
    if (schedule) c.schedule.kind = *schedule;
    if (warmup) c.schedule.warmup_steps = *warmup;
    if (step_size) c.schedule.step_size = *step_size;
    if (gamma) c.schedule.gamma = *gamma;
    if (min_lr) c.schedule.min_lr = *min_lr;
    if (clip_norm) c.clip_norm = *clip_norm;
    if (seed) c.seed = *seed;
    if (threads) c.threads = *threads;
    if (eval_every) c.eval_every = *eval_every;
    if (stats_every) c.stats_every = *stats_every;
    if (precision) c.precision = parse_precision(*precision);
    if (weight_grad_format) c.weight_grad_format = parse_format(*weight_grad_format);
    if (fp32_residual) c.fp32_residual = true;
    apply_precision_rule_flags(c);

    if (scaler_like || scaler_flags.any()) apply_scaler_flags(c);
    if (recipe_flags.any()) apply_recipe_flags(c);
    c.validate();
    return p;
}

// A scaler setting given without a mode asks for loss scaling: a run without it becomes dynamic.
void TrainingOptions::apply_scaler_flags(TrainConfig& c) const {
    LossScalerConfig s = scaler_like ? loss_scaler_preset(*scaler_like) : c.effective_scaler();
    if (!scaler_like && !scaler_flags.given("mode") && s.mode == ScalerMode::None)
        s.mode = ScalerMode::Dynamic;
    scaler_flags.apply(s);
    scaler_flags.check_issues(s.issues());
    c.scaler = s;
}

void TrainingOptions::apply_recipe_flags(TrainConfig& c) const {
    ScaledRecipeConfig r = c.effective_recipe();
    recipe_flags.apply(r);
    if (one_precision) {
        // A flag counts as used when some recipe of the run uses it: the policy's, a precision
        // rule's or a what-if recipe's.
        auto unused = recipe_flags.given_but_unused(r);
        std::vector<ScaledRecipe> others = c.what_if;
        for (const PrecisionRule& rule : c.precision_rules.rules)
            for (const auto& pass : rule.passes)
                if (pass && *pass != ScaledRecipe::None) others.push_back(*pass);
        for (ScaledRecipe other : others) {
            ScaledRecipeConfig as = r;
            as.recipe = other;
            const auto still = recipe_flags.given_but_unused(as);
            std::erase_if(unused, [&](const std::string& f) {
                return std::find(still.begin(), still.end(), f) == still.end();
            });
        }
        if (!unused.empty()) {
            const std::string name = precision_name(c.precision);
            throw ConfigError(unused.front() + " is not a setting of --precision " + name +
                              (r.recipe == ScaledRecipe::None
                                   ? " (the recipe flags apply to " + scaled_precision_list() + ")"
                                   : ""));
        }
    }
    recipe_flags.check_issues(r.issues());
    c.recipe = r;
}

}  // namespace mpwb::cli
