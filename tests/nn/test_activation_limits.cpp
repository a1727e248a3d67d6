// Network limits of a GPT: the values a training step holds (every layer's output, what each
// keeps for backward, a block's attention arrays of heads × T² per sample) at the training batch,
// and what an evaluation holds at the evaluation batch, checked in Network::build before any
// layer allocates, with the numbers in the message. And Network::infer: the forward pass bit for
// bit, holding one layer's saved values at a time.
#include <QtTest/QtTest>

#include <memory>

#include "core/backend/backend.h"
#include "core/nn/network.h"
#include "tests/common/test_support.h"

using namespace mpwb;
using mpwb::test::error_text;
using nlohmann::json;

namespace {

// vocab 65 (the dataset's), d 128, context 256, 4 blocks of 4 heads (F = 512), a final norm, the head.
json gpt(int64_t context = 256) {
    json layers = json::array({{{"type", "Embedding"}, {"d_model", 128}, {"context", context}}});
    for (int b = 0; b < 4; ++b) layers.push_back({{"type", "TransformerBlock"}, {"heads", 4}});
    layers.push_back({{"type", "LayerNorm"}});
    layers.push_back({{"type", "Linear"}, {"out", 0}});
    return {{"name", "gpt"}, {"loss", "token_cross_entropy"}, {"layers", layers}};
}

// Per sample at T = 256, counted by hand from the block's members (transformer_block.h):
// forward keeps norm1, q, k, v, heads out, merged, attention projection, h, norm2, MLP out
// (10 [T, d]) and qkv (3 [T, d]), the MLP's hidden in and out (2 [T, F]), the probabilities
// (4 heads × T²) and 4 norm statistics per row; backward dq, dk, dv, dheads, dmerged, dnorm, dh
// and dqkv (10 [T, d]), dhidden (1 [T, F]) and dP (4 × T²).
constexpr int64_t kT = 256, kTd = kT * 128, kTf = kT * 512, kScores = 4 * kT * kT;
constexpr int64_t kBlockSaved = 13 * kTd + 2 * kTf + kScores + 4 * kT;
constexpr int64_t kBlockBackward = 10 * kTd + kTf + kScores;
constexpr int64_t kTrainingPerSample = kT + kTd + 4 * (kTd + kBlockSaved + kBlockBackward) + (kTd + 2 * kT) +
                                       kT * 65;  // ids, Embedding, blocks, LayerNorm, head
constexpr int64_t kLimit = NetworkLimits::kMaxActivations;

bool nothing_allocated(Network& net) {
    for (size_t i = 0; i < net.size(); ++i)
        for (const Parameter* p : net.layer(i).parameters())
            if (!p->value.empty()) return false;
    return true;
}

}  // namespace

class TestActivationLimits : public QObject {
    Q_OBJECT

private slots:
    // The largest training batch that fits, and one more refused at the layer that crosses
    // the limit, with the count: one [T, d] array miscounted per block moves the boundary.
    void trainingBatchBoundary() {
        const int64_t fits = kLimit / kTrainingPerSample;
        QCOMPARE(fits, int64_t{77});
        Network ok = Network::from_json(gpt());
        ok.build({kT}, fits, 65);
        Network over = Network::from_json(gpt());
        const QString message = error_text<NetworkError>([&] { over.build({kT}, fits + 1, 65); });
        // The final LayerNorm takes the sum over: 6,886,144 values per sample at batch 78.
        VERIFY_MSG(message,
                   "layer 5 (LayerNorm): at batch 78 the activations reach 537,119,232 values (2.0 GiB)",
                   "over the limit of 536,870,912 values (2.0 GiB)", "lower batch_size or the context");
        QVERIFY(nothing_allocated(over));
    }

    // A GPT at a batch far over: refused at the first block, with its attention arrays named
    // (heads, context²), the values per sample and the bytes at the batch.
    void blockNamesItsAttention() {
        Network net = Network::from_json(gpt());
        const QString message = error_text<NetworkError>([&] { net.build({kT}, 512, 65); });
        VERIFY_MSG(
            message,
            "layer 1 (TransformerBlock): at batch 512 the activations reach 889,847,808 values (3.3 GiB)",
            "1 × 4 heads × 256² attention probabilities", "4 heads × 256² attention gradients",
            "13 × [256 × 128]", "2 × [256 × 512]", "lower batch_size or the context");
        static_assert(kBlockSaved + kBlockBackward == 1'672'192);
        VERIFY_MSG(message, "1,672,192 values per sample");
        QVERIFY(nothing_allocated(net));
    }

    // The evaluation batch holds every output and one layer's saved values: a batch the
    // training step could not take is fine for evaluation, and its own limit names eval_batch.
    void evaluationBatch() {
        const int64_t outputs = kT + 6 * kTd + kT * 65;  // ids, Embedding, 4 blocks, LayerNorm, head
        const int64_t fits = kLimit / (outputs + kBlockSaved);
        QCOMPARE(fits, int64_t{460});
        Network ok = Network::from_json(gpt());
        ok.build({kT}, 12, 65, fits);
        Network over = Network::from_json(gpt());
        VERIFY_MSG(error_text<NetworkError>([&] { over.build({kT}, 12, 65, 512); }),
                   "layer 2 (TransformerBlock): at the evaluation batch 512 the activations reach",
                   "1 × 4 heads × 256² attention probabilities", "951,296 values per sample",
                   "lower eval_batch or the context");
        QVERIFY(nothing_allocated(over));
        // A shorter context fits: T² shrinks with it.
        Network shorter = Network::from_json(gpt(64));
        shorter.build({64}, 12, 65, 512);
    }

    // infer gives forward's output bit for bit, and a training step after it (the block sizes
    // again what infer freed) gives the same gradients as one after forward.
    void inferIsForwardBitForBit() {
        auto backend = make_cpu_backend();
        const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::FP32);
        auto make = [&] {
            Network net = Network::from_json(gpt(8));
            net.build({8}, 3, 65);
            net.init(7);
            net.prepare_weights(policy);
            return net;
        };
        Tensor ids({3, 8});
        for (int64_t i = 0; i < ids.numel(); ++i) ids[i] = static_cast<float>((i * 37) % 65);
        Network a = make(), b = make();
        LayerContext eval{*backend, policy.gemm_operands, false, nullptr};
        const Tensor forward_out = a.forward(eval, ids, policy);
        const Tensor infer_out = b.infer(eval, ids, policy);
        QCOMPARE(infer_out.shape(), forward_out.shape());
        QVERIFY(std::memcmp(infer_out.data(), forward_out.data(), sizeof(float) * infer_out.numel()) == 0);
        LayerContext train{*backend, policy.gemm_operands, true, nullptr};
        Tensor two({2, 8});
        for (int64_t i = 0; i < two.numel(); ++i) two[i] = static_cast<float>((i * 11) % 65);
        for (Network* net : {&a, &b}) {
            const Tensor& out = net->forward(train, two, policy);
            Tensor grad(out.shape(), 0.01f);
            net->backward(train, grad, policy, nullptr);
        }
        const auto pa = a.parameters(), pb = b.parameters();
        for (size_t p = 0; p < pa.size(); ++p)
            QVERIFY2(
                std::memcmp(pa[p]->grad.data(), pb[p]->grad.data(), sizeof(float) * pa[p]->grad.numel()) == 0,
                qPrintable(QString::fromStdString(a.parameter_owner(p) + " " + pa[p]->name)));
    }
};

QTEST_APPLESS_MAIN(TestActivationLimits)
#include "test_activation_limits.moc"
