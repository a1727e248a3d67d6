// Greedy next-token predictions over a window (next_token_predictions.h).
#include "core/train/next_token_predictions.h"

#include <algorithm>
#include <string>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"
#include "core/precision/precision_policy.h"

namespace mpwb {

std::vector<int32_t> predict_next_tokens(Network& network, std::span<const int32_t> window) {
    const Shape& in = network.input_shape();
    const Shape& out = network.output_shape();
    if (in.size() != 1 || out.size() != 2 || out[1] < 1)
        throw ConfigError(
            "next-token predictions need a language model ([T] ids in, [T, V] logits out), not " +
            shape_to_string(in) + " -> " + shape_to_string(out));
    const int64_t context = in[0], vocabulary = out[1];
    const auto positions = static_cast<int64_t>(window.size());
    if (positions < 1 || positions > context)
        throw ConfigError("a window of " + std::to_string(positions) +
                          " tokens does not fit the context of " + std::to_string(context));
    Tensor input({1, context});
    std::fill(input.span().begin(), input.span().end(), 0.0f);  // causal: later positions do not matter
    for (int64_t t = 0; t < positions; ++t) {
        if (window[t] < 0 || window[t] >= vocabulary)
            throw ConfigError("token id " + std::to_string(window[t]) + " is outside the vocabulary of " +
                              std::to_string(vocabulary));
        input[t] = static_cast<float>(window[t]);
    }
    CpuBackend backend;
    const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::FP32);
    LayerContext ctx{backend, policy.gemm_operands, false, nullptr};
    network.begin_quantized_step(0, false);
    const Tensor& logits = network.forward(ctx, input, policy);
    std::vector<int32_t> predicted;
    for (int64_t t = 0; t < positions; ++t) {
        const float* row = logits.data() + t * vocabulary;
        predicted.push_back(static_cast<int32_t>(std::max_element(row, row + vocabulary) - row));
    }
    return predicted;
}

}  // namespace mpwb
