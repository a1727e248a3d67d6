// GEMM shapes of a layer from its plan (see gemm_shapes.h). The products are those the layers
// run: a Linear multiplies the [T, in] rows by Wᵀ; a convolution its [out_channels, C·k·k]
// weights by the im2col columns [C·k·k, H'·W']; a transformer block its projections on [T, d]
// and, per head, Q·Kᵀ and P·V.
#include "core/nn/gemm_shapes.h"

#include "core/nn/layer_registry.h"
#include "core/nn/linear.h"
#include "core/nn/transformer_block.h"

namespace mpwb {

namespace {

// The block's GEMMs by name; d is the model width, T the positions.
void block_shapes(const TransformerBlock& block, int64_t T, int64_t d, std::vector<GemmShape>& gemms) {
    const TransformerBlockSettings& s = block.settings();
    const int64_t hs = d / s.heads, hidden = TransformerBlock::hidden_width(s, d);
    for (GemmShape& g : gemms) {
        if (g.name == "attn.qkv") g = {g.name, false, 1, T, d, 3 * d};
        if (g.name == "attn.scores") g = {g.name, true, s.heads, T, hs, T};
        if (g.name == "attn.values") g = {g.name, true, s.heads, T, T, hs};
        if (g.name == "attn.out") g = {g.name, false, 1, T, d, d};
        if (g.name == "mlp.fc1" || g.name == "mlp.gate" || g.name == "mlp.up")
            g = {g.name, false, 1, T, d, hidden};
        if (g.name == "mlp.fc2") g = {g.name, false, 1, T, hidden, d};
    }
}

int64_t product(const Shape& s, size_t from) {
    int64_t n = 1;
    for (size_t i = from; i < s.size(); ++i) n = saturating_mul(n, s[i]);
    return n;
}

}  // namespace

std::vector<GemmShape> layer_gemm_shapes(const nlohmann::json& spec, const Shape& input,
                                         int64_t dataset_classes) {
    const std::unique_ptr<Layer> layer = make_layer(spec);
    layer->set_dataset_classes(dataset_classes);
    const LayerPlan plan = layer->plan(input);
    std::vector<GemmShape> gemms;
    for (const NamedGemm& g : layer->gemms()) gemms.push_back({g.name, g.attention_product});
    if (gemms.empty()) return gemms;
    if (const auto* block = dynamic_cast<const TransformerBlock*>(layer.get())) {
        block_shapes(*block, input[0], input[1], gemms);
    } else if (dynamic_cast<const Linear*>(layer.get())) {
        const int64_t rows = input.size() == 2 ? input[0] : 1;
        gemms[0] = {{}, false, 1, rows, input.back(), plan.output.back()};
    } else if (layer->kind() == "Conv2d" && input.size() == 3 && plan.output.size() == 3) {
        const int64_t kernel = read_layer_settings(*find_layer_kind("Conv2d"), spec).integer("kernel");
        gemms[0] = {{},
                    false,
                    1,
                    plan.output[0],
                    saturating_mul(input[0], saturating_mul(kernel, kernel)),
                    product(plan.output, 1)};
    }
    return gemms;
}

std::string gemm_shape_text(const GemmShape& g) {
    if (g.m == 0) return "?";
    const std::string text = "[" + std::to_string(g.m) + "," + std::to_string(g.k) + "]×[" +
                             std::to_string(g.k) + "," + std::to_string(g.n) + "]";
    return g.count == 1 ? text : std::to_string(g.count) + " × " + text;
}

}  // namespace mpwb
