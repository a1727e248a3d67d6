// Embedding layer (see embedding.h). Both tables start normal with std 0.02, as GPT-2 and
// nanoGPT initialise wte and wpe. The backward pass scatter-adds dy into the token table row by
// row in a fixed order (batch, then position), so repeated ids sum the same way on every run and
// at every thread count.
#include "core/nn/embedding.h"

#include <cmath>

#include "core/common/error.h"
#include "core/common/text_format.h"

namespace mpwb {

namespace {

constexpr float kInitStd = 0.02f;

}  // namespace

Embedding::Embedding(int64_t vocab, int64_t d_model, int64_t context)
    : vocab_(vocab), d_(d_model), context_(context) {}

// Per sample: [T] ids → [T, d]; parameters (vocab + context) x d.
LayerPlan Embedding::plan(const Shape& input) const {
    if (input.size() != 1)
        throw ShapeError("expects [T] token ids per sample, gets " + shape_to_string(input) +
                         "; it must be the first layer of a network on a text dataset");
    if (input[0] > context_)
        throw ShapeError("\"context\" is " + std::to_string(context_) + " positions, the input has " +
                         std::to_string(input[0]) + " (the dataset's context); set \"context\" to at least " +
                         std::to_string(input[0]) + " or the dataset's context to at most " +
                         std::to_string(context_));
    const int64_t vocab = vocab_ != 0 ? vocab_ : dataset_classes_;
    if (vocab <= 0)
        throw ShapeError(
            "\"vocab\" (vocabulary) is 0, which takes the dataset's classes, and no dataset gives them "
            "here; set \"vocab\"");
    // A token id past the table would only be refused in the first forward pass.
    if (dataset_classes_ > vocab)
        throw ShapeError("\"vocab\" (vocabulary) is " + std::to_string(vocab) + " tokens, the dataset has " +
                         std::to_string(dataset_classes_) + "; set it to 0 (the dataset's) or at least " +
                         std::to_string(dataset_classes_));
    LayerPlan p;
    p.output = {input[0], d_};
    p.parameters = saturating_mul(saturating_add(vocab, context_), d_);
    return p;
}

Shape Embedding::build(const Shape& input) {
    LayerPlan p = plan(input);
    if (vocab_ == 0) vocab_ = dataset_classes_;
    token_.name = "token";
    position_.name = "position";
    token_.value.resize({vocab_, d_});
    token_.grad.resize({vocab_, d_});
    position_.value.resize({context_, d_});
    position_.grad.resize({context_, d_});
    return std::move(p.output);
}

void Embedding::init(Rng& rng) {
    for (float& w : token_.value.span()) w = kInitStd * rng.normal();
    for (float& w : position_.value.span()) w = kInitStd * rng.normal();
}

void Embedding::forward(LayerContext&, const Tensor& x, Tensor& y) {
    const int64_t batch = x.dim(0), positions = x.dim(1);
    y.resize({batch, positions, d_});
    const float* token = token_.value.data();
    const float* position = position_.value.data();
    for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < positions; ++t) {
            const float id = x.data()[b * positions + t];
            // The negated test also refuses NaN.
            if (!(id >= 0.0f && id < static_cast<float>(vocab_) && id == std::floor(id)))
                throw DataError("Embedding: sample " + std::to_string(b) + " of the batch, position " +
                                std::to_string(t) + " holds " + shortest_text(id) +
                                ", not a token id in [0, " + std::to_string(vocab_) + ")");
            const float* row = token + static_cast<int64_t>(id) * d_;
            const float* pos = position + t * d_;
            float* out = y.data() + (b * positions + t) * d_;
            for (int64_t j = 0; j < d_; ++j) out[j] = row[j] + pos[j];
        }
    }
}

void Embedding::backward(LayerContext&, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    const int64_t batch = x.dim(0), positions = x.dim(1);
    token_.grad.zero();
    position_.grad.zero();
    float* dtoken = token_.grad.data();
    float* dposition = position_.grad.data();
    for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < positions; ++t) {
            const auto id = static_cast<int64_t>(x.data()[b * positions + t]);  // checked by forward
            const float* g = dy.data() + (b * positions + t) * d_;
            float* row = dtoken + id * d_;
            float* pos = dposition + t * d_;
            for (int64_t j = 0; j < d_; ++j) {
                row[j] += g[j];
                pos[j] += g[j];
            }
        }
    }
    if (dx) {
        dx->resize(x.shape());
        dx->zero();
    }
}

nlohmann::json Embedding::to_json() const {
    nlohmann::json j{{"type", "Embedding"}, {"d_model", d_}, {"context", context_}};
    if (vocab_ != 0) j["vocab"] = vocab_;  // resolved once built: a stored run names its vocabulary
    return j;
}

namespace {

const char* const kEmbeddingClass = R"py(class TokenPositionEmbedding(nn.Module):
    """Token embedding plus learned position embedding: [batch, T] token ids (floats, as the
    run's datasets store them) -> [batch, T, d_model]."""

    def __init__(self, vocab, d_model, context):
        super().__init__()
        self.token = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(context, d_model)

    def forward(self, ids):
        ids = ids.long()
        positions = torch.arange(ids.shape[-1], device=ids.device)
        return self.token(ids) + self.position(positions))py";

}  // namespace

PytorchModule Embedding::pytorch_module(const Shape&) const {
    return {"TokenPositionEmbedding(" + std::to_string(vocab_) + ", " + std::to_string(d_) + ", " +
                std::to_string(context_) + ")",
            kEmbeddingClass,
            {{"token", "token.weight"}, {"position", "position.weight"}}};
}

}  // namespace mpwb
