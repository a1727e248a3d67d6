// export_run_for_pytorch and the run's input normalisation (see run_export.h).
#include "sessions/run_export.h"

#include <filesystem>
#include <unistd.h>

#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/data/normalize.h"
#include "core/optim/optimizer_registry.h"
#include "core/train/dataset_source.h"
#include "sessions/file_identity.h"
#include "sessions/run_vocabulary.h"

namespace mpwb {

std::string why_no_final_weights(const Run& run) {
    if (run.status == RunStatus::Running) return "it is still running";
    return "it ended before its first step, failed where its weights could not be read back, or was "
           "recorded by a build before final weights were stored (schema 8)";
}

namespace {

namespace fs = std::filesystem;

void refuse_existing(const std::string& path, const std::string& what) {
    if (path.empty()) throw Error("no path given for the " + what);
    if (const std::string problem = sqlite_companion_problem(path); !problem.empty())
        throw Error("cannot write the " + what + " to " + path + ": " + problem);
    std::error_code ec;
    if (fs::exists(fs::symlink_status(path, ec)))
        throw Error(what + " " + path + " already exists; choose another name or remove it first");
}

// The run's optimizer as the PyTorch script constructs it (PytorchExportInfo::optimizer); empty
// when the run's configuration cannot be read.
std::string run_pytorch_optimizer(const std::string& config_json) {
    try {
        const TrainConfig config =
            train_config_from_json(parse_json_text(config_json, "the run's config_json"));
        return optimizer_named(config.optimizer.kind)
            .pytorch(config.optimizer, config.lr, pytorch_parameter_groups(config.optimizer.weight_decay));
    } catch (const std::exception&) {
        return {};
    }
}

// The run's vocabulary for the script (none for a run that did not train on text); ConfigError
// naming the run and the field when the stored one is malformed, rather than a script without it.
ScriptVocabulary script_vocabulary(const Run& run) {
    const std::optional<Vocabulary> vocabulary = run_vocabulary(run);
    if (!vocabulary) return {};
    ScriptVocabulary v;
    v.tokenizer = tokenizer_name(vocabulary->kind());
    if (vocabulary->kind() == TokenizerKind::Char)
        for (int64_t id = 0; id < vocabulary->size(); ++id) v.characters += vocabulary->token(id);
    return v;
}

}  // namespace

InputNormalisation run_input_normalisation(const std::string& config_json, const Shape& input_shape) {
    InputNormalisation n;
    DatasetSpec spec;
    try {
        spec = train_config_from_json(parse_json_text(config_json, "the run's config_json")).dataset;
    } catch (const std::exception& e) {
        n.applied = true;
        n.description = std::string("Unknown: the run's configuration cannot be read (") + e.what() + ").";
        return n;
    }
    if (spec.is_text()) {  // the loader never normalises token ids, whatever `normalize` says
        n.description =
            "The run's inputs are the token ids of its " + spec.kind + " dataset: no normalisation.";
        return n;
    }
    if (spec.is_synthetic() || !spec.normalize) {
        n.description = "The run used the " + spec.kind + " inputs as they are: no normalisation.";
        return n;
    }
    n.applied = true;
    const bool per_channel = input_shape.size() == 3;
    n.description = std::string("The run normalised every input ") + (per_channel ? "channel" : "feature") +
                    " by the mean and standard deviation of the " + spec.kind + " train split (" +
                    (spec.path.empty() ? "default path" : spec.path) + ").";
    try {
        spec.normalize = false;
        const Dataset raw = load_dataset(spec);
        const NormStats stats = compute_norm_stats(
            raw.train_x, per_channel ? NormalizeMode::PerChannel : NormalizeMode::PerFeature);
        n.mean = stats.mean;
        n.stddev = stats.stddev;
        n.stats_shape = per_channel ? Shape{static_cast<int64_t>(stats.mean.size()), 1, 1} : input_shape;
        n.description += "\nThe values below were computed again from that dataset at export time.";
    } catch (const std::exception& e) {
        n.description += std::string("\nThey could not be computed again at export time: ") + e.what();
    }
    return n;
}

ExportedModel export_run_for_pytorch(RunStore& store, std::int64_t run_id,
                                     const std::string& safetensors_path, const std::string& script_path,
                                     const std::string& producer) {
    const Run run = store.get_run(run_id);  // StoreError(NotFound) names the run
    const std::string label = "run " + std::to_string(run_id);
    refuse_existing(safetensors_path, "safetensors file");
    if (!script_path.empty()) refuse_existing(script_path, "PyTorch script");
    if (!script_path.empty() && fs::absolute(script_path) == fs::absolute(safetensors_path))
        throw Error("the safetensors file and the PyTorch script are both " + script_path);
    const auto weights = store.final_weights(run_id);
    if (!weights) throw Error(label + " has no stored final weights: " + why_no_final_weights(run));

    PytorchExportInfo info;
    info.title = "MP Workbench " + label + " (" + run.name + ")";
    info.weights_file = fs::path(safetensors_path).filename().string();
    info.metadata = {{"mpwb_run_id", std::to_string(run_id)},
                     {"mpwb_run_uuid", run.uuid},
                     {"mpwb_run_name", run.name},
                     {"mpwb_step", std::to_string(weights->step)},
                     {"mpwb_precision", run.precision},
                     {"mpwb_dataset", run.dataset},
                     {"mpwb_version", producer.empty() ? "mpwb" : producer},
                     {"mpwb_input_shape", shape_to_string(weights->input_shape)}};
    if (!script_path.empty())
        info.normalisation = run_input_normalisation(run.config_json, weights->input_shape);
    info.optimizer = run_pytorch_optimizer(run.config_json);
    info.vocabulary = script_vocabulary(run);
    PytorchExport exported;
    try {
        exported =
            make_pytorch_export(parse_json_text(run.network_json, label + " network_json"), *weights, info);
    } catch (const std::exception& e) {
        throw Error(label + ": " + e.what());
    }
    write_safetensors_file(safetensors_path, exported.weights);
    if (!script_path.empty()) {
        try {
            write_new_file(script_path, exported.script.data(), exported.script.size(), "PyTorch script");
        } catch (...) {
            ::unlink(safetensors_path.c_str());  // this call wrote it a moment ago
            throw;
        }
    }
    ExportedModel result;
    result.run_id = run_id;
    result.step = weights->step;
    result.tensors = exported.weights.tensors.size();
    for (const auto& t : exported.weights.tensors)
        result.values += static_cast<std::int64_t>(t.values.size());
    result.safetensors_path = safetensors_path;
    result.script_path = script_path;
    result.normalisation = info.normalisation;
    return result;
}

}  // namespace mpwb
