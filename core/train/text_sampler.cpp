// Text sampling (see text_sampler.h). Softmax in double after subtracting the row's maximum, so a
// temperature near 0 or logits in the thousands neither overflow nor lose the winner.
#include "core/train/text_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/common/error.h"

namespace mpwb {

void SamplingSettings::validate() const {
    if (tokens < 1 || tokens > kMaxSampledTokens)
        throw ConfigError("sampling.tokens must be in [1, " + std::to_string(kMaxSampledTokens) + "], got " +
                          std::to_string(tokens));
    if (!std::isfinite(temperature) || temperature < 0.0f)
        throw ConfigError("sampling.temperature must be finite and at least 0, got " +
                          std::to_string(temperature));
    if (top_k < 0)
        throw ConfigError("sampling.top_k must be at least 0 (0: every token), got " + std::to_string(top_k));
}

namespace {

int64_t network_context(const Network& network) {
    const Shape& in = network.input_shape();
    if (in.size() != 1 || in[0] < 1)
        throw ConfigError("sampling needs a network whose input is a sequence of token ids, this one takes " +
                          shape_to_string(in));
    return in[0];
}

int64_t network_vocabulary(const Network& network) {
    const Shape& out = network.output_shape();
    if (out.size() != 2 || out[1] < 1)
        throw ConfigError(
            "sampling needs a network whose output is [positions, vocabulary] logits, this one gives " +
            shape_to_string(out));
    return out[1];
}

}  // namespace

std::vector<float> next_token_logits(Network& network, Backend& backend, const PrecisionPolicy& policy,
                                     std::span<const int32_t> context) {
    const int64_t window = network_context(network);
    const int64_t vocabulary = network_vocabulary(network);
    if (context.empty()) throw ConfigError("sampling needs at least one token of context");
    const auto used = context.last(static_cast<size_t>(std::min<int64_t>(window, std::ssize(context))));
    Tensor input({1, window});
    std::fill(input.span().begin(), input.span().end(), 0.0f);
    for (size_t t = 0; t < used.size(); ++t) input[static_cast<int64_t>(t)] = static_cast<float>(used[t]);
    LayerContext ctx{backend, policy.gemm_operands, false, nullptr};
    network.begin_quantized_step(0, false);  // as evaluation: the scales training left, none changed
    const Tensor& out = network.forward(ctx, input, policy);
    const float* last = out.data() + (std::ssize(used) - 1) * vocabulary;
    return {last, last + vocabulary};
}

int32_t draw_token(std::span<const float> logits, const SamplingSettings& settings, Rng& rng) {
    const int64_t v = std::ssize(logits);
    std::vector<int32_t> order(static_cast<size_t>(v));
    std::iota(order.begin(), order.end(), 0);
    // Most likely first; equal logits keep the lower id first, so greedy decoding is reproducible.
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    if (settings.temperature == 0.0f) return order.front();
    const int64_t kept = settings.top_k > 0 ? std::min(settings.top_k, v) : v;
    const double top = logits[order.front()];
    std::vector<double> weight(static_cast<size_t>(kept));
    double total = 0.0;
    for (int64_t i = 0; i < kept; ++i) {
        weight[static_cast<size_t>(i)] =
            std::exp((logits[order[static_cast<size_t>(i)]] - top) / settings.temperature);
        total += weight[static_cast<size_t>(i)];
    }
    double pick = static_cast<double>(rng.uniform()) * total;
    for (int64_t i = 0; i < kept; ++i) {
        pick -= weight[static_cast<size_t>(i)];
        if (pick < 0.0) return order[static_cast<size_t>(i)];
    }
    return order[static_cast<size_t>(kept - 1)];
}

std::vector<int32_t> sample_tokens(Network& network, Backend& backend, const PrecisionPolicy& policy,
                                   std::span<const int32_t> prompt, const SamplingSettings& settings) {
    settings.validate();
    const int64_t vocabulary = network_vocabulary(network);
    for (size_t i = 0; i < prompt.size(); ++i)
        if (prompt[i] < 0 || prompt[i] >= vocabulary)
            throw ConfigError("prompt token " + std::to_string(i) + " is id " + std::to_string(prompt[i]) +
                              ", outside the network's vocabulary of " + std::to_string(vocabulary));
    std::vector<int32_t> text(prompt.begin(), prompt.end());
    std::vector<int32_t> drawn;
    Rng rng(settings.seed);
    for (int64_t i = 0; i < settings.tokens; ++i) {
        const int32_t next = draw_token(next_token_logits(network, backend, policy, text), settings, rng);
        text.push_back(next);
        drawn.push_back(next);
    }
    return drawn;
}

}  // namespace mpwb
