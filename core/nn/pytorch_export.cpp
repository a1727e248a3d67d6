// PyTorch export: state_dict names and the generated script (see pytorch_export.h).
#include "core/nn/pytorch_export.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/common/error.h"
#include "core/common/text_format.h"
#include "core/nn/loss_registry.h"

namespace mpwb {

namespace {

// The code point of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) and its length; length 0 where none starts there.
std::pair<char32_t, std::size_t> utf8_code_point(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char lead = byte(0);
    const std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (length == 0 || lead > 0xF4 || i + length > text.size()) return {0, 0};
    char32_t cp = lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(k) & 0xC0) != 0x80) return {0, 0};
        cp = (cp << 6) | (byte(k) & 0x3F);
    }
    const char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < smallest[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
    return {cp, length};
}

std::string hex_escape(char kind, std::uint32_t value, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\%c%0*X", kind, digits, static_cast<unsigned>(value));
    return buf;
}

}  // namespace

std::string python_string_literal(std::string_view text) {
    std::string literal = "\"";
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            literal += {'\\', static_cast<char>(c)};
        } else if (c == '\n') {
            literal += "\\n";
        } else if (c >= 0x20 && c < 0x7F) {
            literal += static_cast<char>(c);
        } else if (c < 0x80) {
            literal += hex_escape('x', c, 2);  // other control characters
        } else if (const auto [cp, length] = utf8_code_point(text, i); length > 0) {
            literal += cp > 0xFFFF ? hex_escape('U', cp, 8) : hex_escape('u', cp, 4);
            i += length;
            continue;
        } else {
            // Not UTF-8: the lone surrogate Python's surrogateescape reads that byte as, so
            // os.fsencode() gives the byte back (a file name stays the file's name).
            literal += hex_escape('u', 0xDC00 + c, 4);
        }
        ++i;
    }
    return literal + "\"";
}

namespace {

std::string py_tuple(const Shape& s) {
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + (s.size() == 1 ? ",)" : ")");
}

std::string py_list(const std::vector<float>& v) {
    std::string t = "[";
    for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + python_float(v[i]);
    return t + "]";
}

// normalise(); NORMALISATION (set above it) says in words what it does.
std::string normalisation_code(const InputNormalisation& n) {
    std::ostringstream py;
    py << "def normalise(x):\n    \"\"\"The input as the network saw it in training (NORMALISATION says "
          "how).\"\"\"\n";
    if (!n.applied) {
        py << "    return x\n";
    } else if (n.mean.empty()) {
        py << "    raise NotImplementedError(\"the normalisation statistics are not known: \" + "
              "NORMALISATION)\n";
    } else {
        py << "    mean = torch.tensor(" << py_list(n.mean) << ", dtype=torch.float32).reshape("
           << py_tuple(n.stats_shape) << ")\n";
        py << "    std = torch.tensor(" << py_list(n.stddev) << ", dtype=torch.float32).reshape("
           << py_tuple(n.stats_shape) << ")\n";
        py << "    return (x - mean) / std\n";
    }
    return py.str();
}

// LOSS: the loss registry's module, and with a z-loss (a loss over softmax rows that takes one)
// PaLM's term beside it, z_loss · mean(log² Z) over the same rows, as the CPU backend adds it.
std::string loss_code(const Network& network) {
    const std::string& base = loss_named(network.loss()).pytorch;
    if (network.z_loss() == 0.0f) return "# The loss the run trained with.\nLOSS = " + base + "\n";
    std::ostringstream py;
    py << "# The loss the run trained with: BASE_LOSS plus PaLM's z-loss, Z_LOSS times the mean over its\n"
       << "# softmax rows of log Z squared (log Z: a row's logsumexp over the last dimension).\n"
       << "BASE_LOSS = " << base << "\nZ_LOSS = " << python_float(network.z_loss()) << "\n\n\n"
       << "def LOSS(outputs, targets):\n"
       << "    log_z = torch.logsumexp(outputs.float(), dim=-1)\n"
       << "    return BASE_LOSS(outputs, targets) + Z_LOSS * log_z.pow(2).mean()\n\n\n";
    return py.str();
}

// The text section of a text run's script: its vocabulary and the functions that use it.
const char* const kTextCode = R"py(

def encode(text):
    """The token ids of text (a str, or bytes for the byte tokenizer), as the run's tokenizer made
    them. ValueError naming the character and its offset for one VOCABULARY lacks."""
    if TOKENIZER == "byte":
        return list(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
    ids = {c: i for i, c in enumerate(VOCABULARY)}
    for offset, c in enumerate(text):
        if c not in ids:
            raise ValueError(f"character {c!r} at offset {offset} is not in the run's vocabulary")
    return [ids[c] for c in text]


def decode(ids):
    """The text of token ids. Byte level: bytes that are not UTF-8 (a character cut by sampling)
    read as U+FFFD."""
    ids = [int(i) for i in ids]
    if TOKENIZER == "byte":
        return bytes(ids).decode("utf-8", "replace")
    return "".join(VOCABULARY[i] for i in ids)


@torch.no_grad()
def generate(model, prompt, tokens, temperature=0.0, top_k=0, generator=None):
    """The ids of `tokens` tokens continuing prompt (text, or a list of ids), each from the logits
    at the last position of the last CONTEXT tokens, as MP Workbench's sampler reads them. At
    temperature 0 the most likely token (the lowest id on a tie): the tokens `mpwb-cli generate
    --temperature 0` draws. Otherwise a draw from softmax(logits / temperature) over the top_k
    most likely (0: all) with torch's generator, not the workbench's random numbers."""
    ids = encode(prompt) if isinstance(prompt, (str, bytes)) else [int(i) for i in prompt]
    if not ids:
        raise ValueError("generate needs a prompt of at least one token")
    drawn = []
    for _ in range(tokens):
        window = torch.tensor([ids[-CONTEXT:]], dtype=torch.float32)
        logits = model(window)[0, -1].double()
        if temperature == 0:
            next_id = int(torch.argmax(logits))
        else:
            if top_k > 0:
                kept = torch.topk(logits, min(top_k, logits.numel()))
                choice = torch.multinomial(torch.softmax(kept.values / temperature, -1), 1, generator=generator)
                next_id = int(kept.indices[choice])
            else:
                next_id = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator))
        ids.append(next_id)
        drawn.append(next_id)
    return drawn
)py";

// TOKENIZER, VOCABULARY and CONTEXT, then encode(), decode() and generate(); empty for a run that
// did not train on text. The characters are a text from the run's store: a string literal.
std::string text_code(const ScriptVocabulary& vocabulary, const Shape& input_shape) {
    if (vocabulary.tokenizer.empty()) return {};
    std::ostringstream py;
    py << "# The run's tokenizer: \"byte\" (an id is a byte of the UTF-8 text) or \"char\" (an id is a\n"
       << "# character's position in VOCABULARY: the distinct characters of the training text, sorted).\n"
       << "TOKENIZER = " << python_string_literal(vocabulary.tokenizer) << "\n"
       << "VOCABULARY = " << python_string_literal(vocabulary.characters) << "\n"
       << "# The most tokens the model reads at once (its position embedding's length).\n"
       << "CONTEXT = " << (input_shape.empty() ? 1 : input_shape[0]) << "\n"
       << kTextCode << "\n\n";
    return py.str();
}

// LOSS, the groups of parameters as the run decayed them, and make_optimizer: the run's loss and
// optimizer (the loss registry's module, `optimizer` from the optimizer registry).
std::string training_code(const Network& network, const std::vector<std::string>& decayed,
                          const std::string& optimizer) {
    std::string tuple;
    for (const std::string& name : decayed) tuple += (tuple.empty() ? "" : ", ") + name;
    if (decayed.size() == 1) tuple += ",";
    std::ostringstream py;
    py << loss_code(network)
       << "# The parameters the run decayed; it did not decay the others (biases, normalisation).\n"
       << "DECAYED_PARAMETERS = (" << tuple << ")\n\n\n"
       << "def parameter_groups(model, weight_decay):\n"
       << "    named = list(model.named_parameters())\n"
       << "    return [{\"params\": [p for n, p in named if n in DECAYED_PARAMETERS], \"weight_decay\": "
          "weight_decay},\n"
       << "            {\"params\": [p for n, p in named if n not in DECAYED_PARAMETERS], \"weight_decay\": "
          "0.0}]\n\n\n"
       << "def make_optimizer(model):\n"
       << "    \"\"\"The run's optimizer with its settings at the start of the run (its learning-rate "
          "schedule,\n    gradient clipping and loss scaling are not part of it).\"\"\"\n";
    if (optimizer.empty())
        py << "    raise NotImplementedError(\"the run's optimizer settings could not be read\")\n";
    else
        py << "    return " << optimizer << "\n";
    return py.str();
}

// Everything of the script that does not depend on the network: the two readers and the loader.
const char* const kLoaderCode = R"py(
def read_safetensors(path):
    """The F32 tensors of a safetensors file, read without the safetensors package: an 8-byte
    little-endian header length, the JSON header, then the raw little-endian data."""
    import numpy

    with open(path, "rb") as f:
        data = f.read()
    (header_length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_length])
    base = 8 + header_length
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} has dtype {entry['dtype']}, this reader takes F32")
        begin, end = entry["data_offsets"]
        array = numpy.frombuffer(data, dtype="<f4", count=(end - begin) // 4, offset=base + begin)
        tensors[name] = torch.from_numpy(array.reshape(entry["shape"]).copy())
    return tensors


# Which reader load_state used last: "safetensors" or "numpy".
WEIGHTS_READER = None


def load_state(path):
    """The state_dict in the file: through the safetensors package where it is installed (and
    MPWB_EXPORT_NO_SAFETENSORS is not set), else through read_safetensors."""
    global WEIGHTS_READER
    if not os.environ.get("MPWB_EXPORT_NO_SAFETENSORS"):
        try:
            from safetensors.torch import load_file
        except ImportError:
            load_file = None
        if load_file is not None:
            WEIGHTS_READER = "safetensors"
            return load_file(path)
    WEIGHTS_READER = "numpy"
    return read_safetensors(path)


def load_model(path=None):
    """The network with the run's final weights, in eval mode (dropout off, BatchNorm on its
    running statistics). path: the .safetensors file; default: WEIGHTS_FILE beside this script."""
    if path is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), WEIGHTS_FILE)
    model = build_model()
    missing, unexpected = model.load_state_dict(load_state(path), strict=False)
    # Our BatchNorm keeps no batch counter; PyTorch's only uses it when momentum is None.
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise RuntimeError(f"{path} does not fit the network: missing {missing}, unexpected {unexpected}")
    model.eval()
    return model


if __name__ == "__main__":
    model = load_model()
    print(model)
    print(f"weights read with {WEIGHTS_READER}; input shape per sample {INPUT_SHAPE}")
)py";

// "<layer>.<name>", under the module's own name for the tensor.
std::string pytorch_tensor_name(const PytorchModule& module, const NamedTensor& tensor) {
    std::string name = tensor.name;
    for (const auto& [ours, theirs] : module.renamed_tensors)
        if (name == ours) name = theirs;
    return std::to_string(tensor.layer) + "." + name;
}

// The nn.Sequential's lines, one module per layer, with the weights under its state_dict names,
// and the classes those modules need (each once).
struct ExportedLayers {
    std::string modules;
    std::string class_definitions;
    std::vector<std::string> decayed;  // the state_dict names of the parameters the run decayed
};

ExportedLayers export_layers(Network& network, const NetworkWeights& weights,
                             const std::vector<LayerReport>& reports, SafetensorsFile& out) {
    ExportedLayers exported;
    std::vector<std::string> defined;
    std::ostringstream lines;
    Shape input = weights.input_shape;
    for (size_t i = 0; i < network.size(); ++i) {
        const PytorchModule module = network.layer(i).pytorch_module(input);
        for (const auto& t : weights.tensors)
            if (t.layer == static_cast<int64_t>(i))
                out.tensors.push_back({pytorch_tensor_name(module, t), t.shape, t.values});
        for (const Parameter* p : network.layer(i).parameters())
            if (p->weight_decay) {
                NamedTensor named;
                named.layer = static_cast<int64_t>(i);
                named.name = p->name;
                exported.decayed.push_back(python_string_literal(pytorch_tensor_name(module, named)));
            }
        if (!module.definition.empty() &&
            std::find(defined.begin(), defined.end(), module.definition) == defined.end()) {
            defined.push_back(module.definition);
            exported.class_definitions += module.definition + "\n\n\n";
        }
        lines << "        " << module.expression << ",  # " << network.layer_label(i) << ", output "
              << shape_to_string(reports.at(i).output) << "\n";
        input = reports.at(i).output;
    }
    exported.modules = lines.str();
    return exported;
}

}  // namespace

std::string pytorch_parameter_groups(float weight_decay) {
    return "parameter_groups(model, weight_decay=" + python_float(weight_decay) + ")";
}

PytorchExport make_pytorch_export(const nlohmann::json& network_description, const NetworkWeights& weights,
                                  const PytorchExportInfo& info) {
    // The plan first, which allocates nothing: a network larger than the values given (a damaged
    // store, a hostile bundle) is refused before it is built. Then building and loading proves
    // the weights fit the description, tensor by tensor.
    const auto reports = Network::inspect(network_description, weights.input_shape);
    int64_t planned = 0, given = 0;
    for (const LayerReport& r : reports) {
        if (!r.error.empty())
            throw NetworkError("layer " + std::to_string(r.index) + " (" + r.kind + "): " + r.error);
        planned = saturating_add(planned, r.parameters);
    }
    for (const NamedTensor& t : weights.tensors) given += static_cast<int64_t>(t.values.size());
    if (planned > given)
        throw NetworkError("the network has " + std::to_string(planned) + " parameters, the weights hold " +
                           std::to_string(given) + " values");
    Network network = Network::from_json(network_description);
    network.build(weights.input_shape);
    load_network_weights(network, weights);

    PytorchExport out;
    out.weights.metadata = info.metadata;
    out.weights.metadata["format"] = "pt";  // what safetensors.torch.save_file writes
    const ExportedLayers layers = export_layers(network, weights, reports, out.weights);

    // Every text that is not the writer's own (the run's name in the title, the file name, the
    // dataset path in the normalisation's description) is a string literal, escaped by
    // python_string_literal: nowhere else can it become code.
    std::ostringstream py;
    py << "\"\"\"An MP Workbench run as a PyTorch nn.Sequential: RUN_TITLE below names the run.\n\n"
       << "Generated by MP Workbench. The weights (the file WEIGHTS_FILE below) are the run's FP32\n"
       << "master weights at step " << weights.step
       << ", under the names of this nn.Sequential's state_dict.\n\n"
       << "Import this file as a module (or run it: it prints the model), then\n"
       << "    model = load_model()   # eval mode\n"
       << "    y = model(normalise(x))   # x: float32 [batch, *INPUT_SHAPE]\n\n"
       << "The outputs are " << loss_named(network.loss()).pytorch_outputs << ". LOSS and\n"
       << "make_optimizer(model) are the run's loss and optimizer, to train the model on.\n"
       << (info.vocabulary.tokenizer.empty()
               ? ""
               : "The run trained on text: x holds token ids, encode(text) and decode(ids) map them as the\n"
                 "run did, and decode(generate(model, prompt, 200)) continues a prompt.\n")
       << "\"\"\"\n"
       << "import json\nimport os\nimport struct\n\nimport torch\nfrom torch import nn\n\n"
       << "RUN_TITLE = " << python_string_literal(info.title) << "\n"
       << "INPUT_SHAPE = " << py_tuple(weights.input_shape) << "\n"
       << "WEIGHTS_FILE = " << python_string_literal(info.weights_file) << "\n"
       << "# How the run normalised its inputs; normalise() below does the same.\n"
       << "NORMALISATION = " << python_string_literal(info.normalisation.description) << "\n\n\n"
       << layers.class_definitions << "def build_model():\n    return nn.Sequential(\n"
       << layers.modules << "    )\n\n\n"
       << normalisation_code(info.normalisation) << "\n\n"
       << text_code(info.vocabulary, weights.input_shape)
       << training_code(network, layers.decayed, info.optimizer) << "\n"
       << kLoaderCode;
    out.script = py.str();
    return out;
}

}  // namespace mpwb
