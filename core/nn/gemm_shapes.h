// The shape of every GEMM a layer runs, per sample, worked out from its description and input
// shape without building it (nothing is allocated, so an editor may ask at every click). The
// network editor's inspector lists them under the names statistics, rules and reports use
// (Layer::gemms(): "attn.qkv", ...; a Linear's or Conv2d's one GEMM is unnamed). Separate from
// the layers because it is a reading of their plans, not part of training.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor/shape.h"

namespace mpwb {

// One GEMM of a layer for one sample: `count` products of [m, k] × [k, n] (one per attention
// head for the attention products, else 1). m = 0 when the shape is not known for the kind.
struct GemmShape {
    std::string name;  // NamedGemm::name: empty for a layer's one GEMM
    bool attention_product = false;
    int64_t count = 1;
    int64_t m = 0, k = 0, n = 0;
};

// The GEMMs of the layer `spec` describes, at this per-sample input, in Layer::gemms() order;
// empty for a layer without GEMMs. dataset_classes as for Network::build. ShapeError (or the
// registry's error) when the layer does not fit the input.
std::vector<GemmShape> layer_gemm_shapes(const nlohmann::json& spec, const Shape& input,
                                         int64_t dataset_classes);

// "[64,128]×[128,384]", "4 × [64,32]×[32,64]" for per-head products, "?" when unknown.
std::string gemm_shape_text(const GemmShape& gemm);

}  // namespace mpwb
