// PytorchModule: a layer as the PyTorch export writes it (Layer::pytorch_module), and the Python
// spellings of the values a module's arguments hold. Each layer kind writes its own module here,
// so the export (pytorch_export.h) has no list of kinds.
#pragma once
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/common/text_format.h"

namespace mpwb {

struct PytorchModule {
    std::string expression;  // "nn.Linear(784, 10, bias=True)": makes the module
    // The Python class `expression` names, for a kind torch.nn lacks ("class Foo(nn.Module): ...");
    // the script defines each class once, above build_model. Empty for torch.nn's own modules.
    std::string definition = {};
    // Our tensor names that the module's state_dict spells differently, as {ours, PyTorch's}
    // (BatchNorm's gamma and beta are weight and bias).
    std::vector<std::pair<std::string, std::string>> renamed_tensors = {};
};

// A float as Python reads it back to the same float; nan and inf as float("nan") and
// float("inf"), since Python has no such names.
inline std::string python_float(float v) {
    if (std::isnan(v)) return "float(\"nan\")";
    if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
    return shortest_text(v);
}

inline std::string python_bool(bool v) { return v ? "True" : "False"; }

}  // namespace mpwb
