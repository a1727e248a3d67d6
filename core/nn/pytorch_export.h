// PyTorch export of a trained network: its weights under the names and layouts of a PyTorch
// nn.Sequential's state_dict ("0.weight", "0.bias", "2.running_mean", ...; our Linear [out, in]
// and Conv2d [out, in, kh, kw] layouts are PyTorch's, so nothing is transposed; BatchNorm's
// gamma and beta are PyTorch's weight and bias), and a Python script that builds the same
// nn.Sequential and loads them, with the safetensors package where it is installed and with its
// own reader (the JSON header, then numpy.frombuffer) where it is not. Each layer writes its own
// module (Layer::pytorch_module, and for a kind torch.nn lacks the class the script defines); the
// export has no list of kinds. Our GELU is the exact (erf) one, PyTorch's default, GELUTanh its
// approximate="tanh"; AvgPool2d divides by the whole window (count_include_pad). The script also
// holds the run's loss (the loss registry's torch.nn module) and optimizer, to train the model on
// in PyTorch. A text run's script also holds its vocabulary (TOKENIZER, VOCABULARY) with encode(),
// decode() and generate(), so a prompt becomes ids and ids become text as the run made them.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/nn/network_weights.h"
#include "core/nn/safetensors_file.h"

namespace mpwb {

// How the run's inputs were normalised before the network saw them, for the script's
// normalise() and its comment.
struct InputNormalisation {
    bool applied = false;     // false: inputs are used as the dataset gives them
    std::string description;  // one or two sentences (the script's NORMALISATION), e.g. where stats come from
    Shape stats_shape;        // the shape mean and stddev broadcast to ([C, 1, 1] per channel, ...)
    std::vector<float> mean, stddev;  // empty when applied but the values are not known
};

// The run's vocabulary as the script holds it (core/data/vocabulary.h is a layer above core/nn:
// sessions fills this from the run's stored Vocabulary).
struct ScriptVocabulary {
    std::string tokenizer;   // "byte" or "char"; empty: the run did not train on text (no section)
    std::string characters;  // "char": every token's UTF-8 in id order, one character each
};

struct PytorchExportInfo {
    std::string title;                            // "MP Workbench run 12 (spiral fp16-mixed)"
    std::string weights_file;                     // the safetensors file name the script loads by default
    std::map<std::string, std::string> metadata;  // for the safetensors header (__metadata__)
    InputNormalisation normalisation;
    // The run's optimizer as a torch.optim constructor over pytorch_parameter_groups(...) (the
    // optimizer registry's OptimizerDefinition::pytorch); empty when it is not known, and the
    // script's make_optimizer says so.
    std::string optimizer;
    ScriptVocabulary vocabulary;
};

// The script's expression for the model's parameters in two groups, the ones the run decayed
// (weight_decay) and the ones it did not (biases, normalisation parameters), for `optimizer`.
std::string pytorch_parameter_groups(float weight_decay);

struct PytorchExport {
    SafetensorsFile weights;  // state_dict names, F32
    std::string script;       // Python source
};

// Builds the network from its description at weights.input_shape, loads the weights into it
// (NetworkError naming the layer when they do not fit), and writes each layer's module.
PytorchExport make_pytorch_export(const nlohmann::json& network_description, const NetworkWeights& weights,
                                  const PytorchExportInfo& info);

// Text as a Python string literal that reads back as exactly that text: one line in double
// quotes, plain ASCII. Quotes and backslashes are escaped, control characters are \n or \xNN,
// other code points \uNNNN or \UNNNNNNNN, and a byte that is not UTF-8 is the lone surrogate
// \udcNN that Python's surrogateescape reads it as (os.fsencode gives the byte back). The
// script holds every text that is not its own this way and nowhere else.
std::string python_string_literal(std::string_view text);

}  // namespace mpwb
