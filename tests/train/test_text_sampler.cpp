// The text sampler (core/train/text_sampler.h) on a stand-in language model whose logits are known:
// a causal "next id" layer. Greedy decoding must follow it exactly, a short prompt's padding must
// not change the logits read, the context crop must keep the last T tokens, top-k must never draw
// outside the k best, and a seed must repeat its draws.
#include <QtTest>

#include "core/backend/cpu/cpu_backend.h"
#include "core/common/error.h"
#include "core/train/text_sampler.h"

using namespace mpwb;

namespace {

constexpr int64_t kVocabulary = 7;

// Position t's logits favour (id[t] + 1) mod V by 4, then (id[t] + 2) mod V by 2, plus a small
// term of the previous position's id, so the logits depend on earlier positions (causally) only.
class NextIdLayer : public Layer {
public:
    std::string kind() const override { return "NextId"; }
    LayerPlan plan(const Shape& input) const override { return {{input[0], kVocabulary}, 0, 0}; }
    Shape build(const Shape& input) override { return plan(input).output; }
    void forward(LayerContext&, const Tensor& x, Tensor& y) override {
        const int64_t n = x.dim(0), t_len = x.dim(1);
        y.resize({n, t_len, kVocabulary});
        for (int64_t s = 0; s < n; ++s)
            for (int64_t t = 0; t < t_len; ++t) {
                const auto id = static_cast<int64_t>(x[s * t_len + t]);
                const float previous = t > 0 ? x[s * t_len + t - 1] : 0.0f;
                float* row = y.data() + (s * t_len + t) * kVocabulary;
                for (int64_t v = 0; v < kVocabulary; ++v) row[v] = 0.01f * previous * static_cast<float>(v);
                row[(id + 1) % kVocabulary] += 4.0f;
                row[(id + 2) % kVocabulary] += 2.0f;
            }
    }
    void backward(LayerContext&, const Tensor&, const Tensor&, const Tensor&, Tensor*) override {}
    nlohmann::json to_json() const override { return {{"type", kind()}}; }
    DeviceOp device_op() const override { return NoDeviceOp{}; }
    PytorchModule pytorch_module(const Shape&) const override { return {"NextId()"}; }
};

Network next_id_network(int64_t context) {
    std::vector<std::unique_ptr<Layer>> layers;
    layers.push_back(std::make_unique<NextIdLayer>());
    Network net = Network::from_layers(std::move(layers));
    net.build({context}, 1);
    return net;
}

}  // namespace

class TestTextSampler : public QObject {
    Q_OBJECT
private slots:
    void greedy_follows_the_model() {
        CpuBackend backend;
        Network net = next_id_network(4);
        SamplingSettings s{.tokens = 9, .temperature = 0.0f};
        const std::vector<int32_t> prompt{3};
        const auto drawn = sample_tokens(net, backend, PrecisionPolicy::make(PrecisionKind::FP32), prompt, s);
        QCOMPARE(drawn.size(), size_t{9});
        for (size_t i = 0; i < drawn.size(); ++i)
            QCOMPARE(drawn[i], static_cast<int32_t>((4 + i) % kVocabulary));
    }

    void padding_does_not_reach_the_last_prompt_position() {
        CpuBackend backend;
        Network net = next_id_network(6);
        const auto policy = PrecisionPolicy::make(PrecisionKind::FP32);
        const std::vector<int32_t> prompt{2, 5};
        const auto padded = next_token_logits(net, backend, policy, prompt);
        // The same two ids at the end of a full window give the same logits: only position 0..1
        // and their causal past matter.
        Network full = next_id_network(2);
        const auto exact = next_token_logits(full, backend, policy, prompt);
        QCOMPARE(padded, exact);
        QCOMPARE(padded.size(), size_t(kVocabulary));
    }

    void long_text_keeps_its_last_tokens() {
        CpuBackend backend;
        Network net = next_id_network(3);
        const auto policy = PrecisionPolicy::make(PrecisionKind::FP32);
        const std::vector<int32_t> text{6, 6, 6, 1, 2, 3};
        const std::vector<int32_t> tail{1, 2, 3};
        QCOMPARE(next_token_logits(net, backend, policy, text),
                 next_token_logits(net, backend, policy, tail));
    }

    void top_k_and_seed() {
        std::vector<float> logits{0.0f, 3.0f, 2.9f, -1.0f, 2.8f};
        SamplingSettings s{.temperature = 5.0f, .top_k = 2, .seed = 11};
        Rng a(s.seed), b(s.seed);
        int drew_second = 0;
        for (int i = 0; i < 400; ++i) {
            const int32_t x = draw_token(logits, s, a);
            QVERIFY2(x == 1 || x == 2, "top-k 2 drew outside the two most likely");
            QCOMPARE(draw_token(logits, s, b), x);
            drew_second += x == 2;
        }
        QVERIFY(drew_second > 100);  // at temperature 5 the two are nearly even
    }

    void bad_settings_and_prompts_are_refused() {
        CpuBackend backend;
        Network net = next_id_network(4);
        const auto policy = PrecisionPolicy::make(PrecisionKind::FP32);
        const std::vector<int32_t> bad{1, 7};
        QVERIFY_THROWS_EXCEPTION(ConfigError, sample_tokens(net, backend, policy, bad, SamplingSettings{}));
        const std::vector<int32_t> empty;
        QVERIFY_THROWS_EXCEPTION(ConfigError, sample_tokens(net, backend, policy, empty, SamplingSettings{}));
        SamplingSettings cold{.temperature = -1.0f};
        QVERIFY_THROWS_EXCEPTION(ConfigError, cold.validate());
        SamplingSettings none{.tokens = 0};
        QVERIFY_THROWS_EXCEPTION(ConfigError, none.validate());
    }
};

QTEST_APPLESS_MAIN(TestTextSampler)
#include "test_text_sampler.moc"
