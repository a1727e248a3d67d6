// The network editor's words for one layer: the compact settings text of its row in the layer
// table (a transformer block as "4 heads · d 128 · MLP ×4 GELU · LayerNorm · QK-norm off", an
// embedding with its vocabulary), the field a shape error names, and the inspector's list of the
// layer's GEMMs with their shapes. Apart from the editor's widgets so the text rules sit in one
// place and are testable without a window; the facts come from the layer registry and the core.
#pragma once
#include <QString>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor/shape.h"

namespace mpwb {

// The settings column of a layer's row. input: the layer's per-sample input shape (empty when
// unknown); dataset_classes: the dataset's classes (0: unknown), which a field whose 0 means
// "the dataset's classes" shows.
QString layer_settings_text(const nlohmann::json& spec, const Shape& input, int64_t dataset_classes);

// The key of the layer's field that an error message names (`"heads"` quoted, as the registry
// and the layers write it), the earliest one in the message; empty when it names none.
std::string error_field(const nlohmann::json& spec, const std::string& message);

// The inspector's list of the layer's GEMMs at this input, as rich text: one line per GEMM with
// its label ("3.attn.qkv", "6 Linear" for a layer's one unnamed GEMM) and its per-sample
// shape ("[64,128]×[128,384]"). Empty when the layer runs no GEMM or does not fit the input.
QString gemm_list_html(const nlohmann::json& spec, int layer_index, const Shape& input,
                       int64_t dataset_classes);

}  // namespace mpwb
