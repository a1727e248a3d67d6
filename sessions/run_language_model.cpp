// load_run_language_model (see run_language_model.h).
#include "sessions/run_language_model.h"

#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/nn/network_weights.h"
#include "sessions/run_export.h"
#include "sessions/run_vocabulary.h"

namespace mpwb {

namespace {

void check_language_model(const Network& network, const Vocabulary& vocabulary, const std::string& label) {
    const Shape& in = network.input_shape();
    const Shape& out = network.output_shape();
    const auto v = static_cast<int64_t>(vocabulary.size());
    if (in.size() != 1 || out.size() != 2 || out[0] != in[0] || out[1] != v)
        throw Error(label + " is not a language model over its vocabulary of " + std::to_string(v) +
                    " tokens: its network maps " + shape_to_string(in) + " to " + shape_to_string(out) +
                    ", where sampling needs [T] to [T, " + std::to_string(v) + "]");
}

}  // namespace

RunLanguageModel load_run_language_model(RunStore& store, int64_t run_id) {
    const std::string label = "run " + std::to_string(run_id);
    const Run run = store.get_run(run_id);
    std::optional<Vocabulary> vocabulary = run_vocabulary(run);
    if (!vocabulary)
        throw Error(label + " (" + run.dataset +
                    ") did not train on text: it has no vocabulary to sample with");
    const auto weights = store.final_weights(run_id);
    if (!weights) throw Error(label + " has no stored final weights: " + why_no_final_weights(run));
    Network network;
    try {
        network = Network::from_json(parse_json_text(run.network_json, label + " network_json"));
        network.build(weights->input_shape, 1, static_cast<int64_t>(vocabulary->size()));
        load_network_weights(network, *weights);
    } catch (const std::exception& e) {
        throw Error(label + ": " + e.what());
    }
    check_language_model(network, *vocabulary, label);
    return {std::move(network), std::move(*vocabulary), weights->step};
}

}  // namespace mpwb
