// The sequence layer kinds and the language model's loss: Embedding, LayerNorm and RMSNorm (every
// option), and Linear, an activation and Dropout on [T, d] inputs, each against a float64
// forward of its own written here, with the FP32 backward checked against central differences
// of that forward (as tests/nn/test_gradients.cpp does for the other kinds). Then the per-position
// cross-entropy with and without PaLM's z-loss, settings whose 0 means "the dataset's classes",
// the refusals (bad token ids and targets, a context too short, a z-loss on a loss without one,
// a network over the activation limit) and a tiny language model trained through the Trainer.
// The engine's headers come before Qt's: core/train/trainer.h declares a member named emit().
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/nn/loss_registry.h"
#include "core/nn/network.h"
#include "core/train/trainer.h"
#include "tests/cli/program_runner.h"
#include "tests/common/test_support.h"

#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <cmath>
#include <fstream>
#include <functional>
#include <memory>

using namespace mpwb;
using mpwb::test::error_text;
using nlohmann::json;

namespace {

using Vec = std::vector<double>;
using Params = std::vector<Vec>;
// A layer's float64 forward over the whole batch: input values and parameters to outputs.
using ReferenceForward = std::function<Vec(const Vec& x, const Params& p)>;

constexpr double kStep = 1e-5;        // central-difference step on the float64 forward
constexpr double kGradTol = 2e-4;     // FP32 backward vs float64 differences
constexpr double kForwardTol = 2e-5;  // FP32 forward vs float64 forward

Vec dbl(const Tensor& t) { return Vec(t.data(), t.data() + t.numel()); }

double dot(const Vec& a, const Vec& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// The worst |analytic - numeric| / (|numeric| + rms(numeric)); its element in `where`.
double worst_error(const Vec& analytic, const Vec& numeric, size_t& where) {
    double rms = 0;
    for (double v : numeric) rms += v * v;
    rms = std::sqrt(rms / static_cast<double>(std::max<size_t>(numeric.size(), 1))) + 1e-12;
    double worst = 0;
    for (size_t i = 0; i < numeric.size(); ++i) {
        const double e = std::fabs(analytic[i] - numeric[i]) / (std::fabs(numeric[i]) + rms);
        if (!(e <= worst)) {
            worst = std::isnan(e) ? INFINITY : e;
            where = i;
        }
    }
    return worst;
}

#define EXPECT_GRAD(what, analytic, numeric)                                                            \
    do {                                                                                                \
        size_t at_ = 0;                                                                                 \
        const double e_ = worst_error((analytic), (numeric), at_);                                      \
        QVERIFY2(e_ <= kGradTol, qPrintable(QString("%1: element %2 analytic %3, finite difference %4") \
                                                .arg(QString::fromStdString(what))                      \
                                                .arg(at_)                                               \
                                                .arg((analytic)[at_], 0, 'g', 9)                        \
                                                .arg((numeric)[at_], 0, 'g', 9)));                      \
    } while (0)

// ---- float64 references ----

ReferenceForward linear_reference(int64_t rows, int64_t in, int64_t out, bool bias) {
    return [=](const Vec& x, const Params& p) {
        Vec y(static_cast<size_t>(rows * out));
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < out; ++o) {
                double s = bias ? p[1][o] : 0.0;
                for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * p[0][o * in + i];
                y[r * out + o] = s;
            }
        return y;
    };
}

// LayerNorm (centred) or RMSNorm over rows of d; p[0] gain and p[1] bias when present.
ReferenceForward norm_reference(bool rms, double eps, bool affine, bool bias, int64_t d) {
    return [=](const Vec& x, const Params& p) {
        Vec y(x.size());
        for (size_t r = 0; r * d < x.size(); ++r) {
            const double* xr = x.data() + r * d;
            double mean = 0, square = 0;
            if (!rms) {
                for (int64_t j = 0; j < d; ++j) mean += xr[j];
                mean /= static_cast<double>(d);
            }
            for (int64_t j = 0; j < d; ++j) square += (xr[j] - mean) * (xr[j] - mean);
            const double rstd = 1.0 / std::sqrt(square / static_cast<double>(d) + eps);
            for (int64_t j = 0; j < d; ++j) {
                double v = (xr[j] - mean) * rstd;
                if (affine) v *= p[0][j];
                if (bias) v += p[1][j];
                y[r * d + j] = v;
            }
        }
        return y;
    };
}

// Token row plus position row; the ids are the input's values (fixed, not differentiated).
ReferenceForward embedding_reference(int64_t batch, int64_t positions, int64_t d) {
    return [=](const Vec& x, const Params& p) {
        Vec y(static_cast<size_t>(batch * positions * d));
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t t = 0; t < positions; ++t) {
                const auto id = static_cast<int64_t>(x[b * positions + t]);
                for (int64_t j = 0; j < d; ++j)
                    y[(b * positions + t) * d + j] = p[0][id * d + j] + p[1][t * d + j];
            }
        return y;
    };
}

// Mean over rows of the cross-entropy and z_loss * mean(log² Z); rows of k logits.
struct ReferenceLoss {
    double cross_entropy = 0, z_term = 0;
    int64_t correct = 0;
};

ReferenceLoss reference_loss(const Vec& logits, const std::vector<int64_t>& labels, int64_t k,
                             double z_loss) {
    ReferenceLoss l;
    const auto rows = static_cast<int64_t>(labels.size());
    for (int64_t r = 0; r < rows; ++r) {
        const double* z = logits.data() + r * k;
        double zmax = z[0];
        int64_t arg = 0;
        for (int64_t j = 1; j < k; ++j)
            if (z[j] > zmax) zmax = z[j], arg = j;
        double sum = 0;
        for (int64_t j = 0; j < k; ++j) sum += std::exp(z[j] - zmax);
        const double log_z = zmax + std::log(sum);
        l.cross_entropy += log_z - z[labels[r]];
        l.z_term += log_z * log_z;
        l.correct += arg == labels[r];
    }
    l.cross_entropy /= static_cast<double>(rows);
    l.z_term *= z_loss / static_cast<double>(rows);
    return l;
}

// ---- the layer check ----

struct LayerCase {
    json spec;
    Shape input;  // per sample
    int64_t batch = 3;
    Vec x;  // the batch's input values; empty: uniform in [-2, 2]
    ReferenceForward reference;
    bool input_has_gradient = true;  // false for token ids
    int64_t dataset_classes = 0;
};

// ---- PyTorch parity ----

// Debian's python3 with torch ($MPWB_PYTHON first); empty, with the reason in `why`, when none.
QString find_torch_python(QString& why) {
    QStringList candidates;
    if (qEnvironmentVariableIsSet("MPWB_PYTHON")) candidates << qEnvironmentVariable("MPWB_PYTHON");
    candidates << "/usr/bin/python3";
    for (const QString& python : candidates) {
        const ProgramResult r = run_program(python, {"-c", "import torch"}, 120000);
        if (r.exit_code == 0) return python;
        why += python + ": " + QString::fromUtf8(r.err).trimmed().split('\n').last() + "; ";
    }
    return {};
}

// A script that builds the network from its layers' PyTorch modules, loads our weights under
// the modules' state_dict names, and prints its outputs and LOSS on the inputs in argv[1].
std::string parity_script(Network& net, const Shape& input) {
    std::string classes, modules;
    Shape shape = input;
    for (size_t i = 0; i < net.size(); ++i) {
        const PytorchModule m = net.layer(i).pytorch_module(shape);
        if (!m.definition.empty() && classes.find(m.definition) == std::string::npos)
            classes += m.definition + "\n\n\n";
        modules += "    " + m.expression + ",\n";
        shape = net.layer(i).plan(shape).output;
    }
    return "import json, sys\nimport torch\nfrom torch import nn\n\n" + classes + "model = nn.Sequential(\n" +
           modules +
           ")\n"
           "data = json.load(open(sys.argv[1]))\n"
           "state = {k: torch.tensor(v[\"values\"], dtype=torch.float32).reshape(v[\"shape\"])\n"
           "         for k, v in data[\"tensors\"].items()}\n"
           "missing, unexpected = model.load_state_dict(state, strict=False)\n"
           "assert not missing and not unexpected, (missing, unexpected)\n"
           "model.eval()\n"
           "x = torch.tensor(data[\"x\"], dtype=torch.float32).reshape(data[\"x_shape\"])\n"
           "y = torch.tensor(data[\"y\"], dtype=torch.float32).reshape(data[\"y_shape\"])\n"
           "LOSS = " +
           loss_named(net.loss()).pytorch +
           "\n"
           "with torch.no_grad():\n"
           "    out = model(x)\n"
           "    loss = LOSS(out, y)\n"
           "print(json.dumps({\"out\": out.flatten().tolist(), \"shape\": list(out.shape), \"loss\": "
           "float(loss)}))\n";
}

// The weights under the modules' names, and the batch, as the script reads them.
json parity_data(Network& net, const Shape& input, const Tensor& x, const Tensor& y) {
    json tensors = json::object();
    Shape shape = input;
    for (size_t i = 0; i < net.size(); ++i) {
        const PytorchModule m = net.layer(i).pytorch_module(shape);
        for (Parameter* p : net.layer(i).parameters()) {
            std::string name = p->name;
            for (const auto& [ours, theirs] : m.renamed_tensors)
                if (name == ours) name = theirs;
            tensors[std::to_string(i) + "." + name] = {{"values", p->value.span()},
                                                       {"shape", p->value.shape()}};
        }
        shape = net.layer(i).plan(shape).output;
    }
    return {{"tensors", tensors},
            {"x", x.span()},
            {"x_shape", x.shape()},
            {"y", y.span()},
            {"y_shape", y.shape()}};
}

}  // namespace

class TestSequenceLayers : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> be_ = make_cpu_backend();

    // FP32 forward against the reference, then dL/dx and dL/dparameters of L = sum(y * R) from
    // backward against central differences of the reference.
    void check_layer(LayerCase c) {
        const std::string name = c.spec.dump();
        std::unique_ptr<Layer> layer = make_layer(c.spec);
        layer->set_dataset_classes(c.dataset_classes);
        const Shape out_shape = layer->build(c.input);
        Rng rng(11);
        layer->init(rng);
        // Gains and biases away from their initial 1 and 0, so a missing term shows.
        if (c.spec["type"] != "Embedding")
            for (Parameter* p : layer->parameters())
                for (float& v : p->value.span()) v = rng.uniform(0.5f, 1.5f);
        Tensor X(with_batch(c.batch, c.input)), Y, dX;
        if (c.x.empty())
            for (float& v : X.span()) v = rng.uniform(-2.0f, 2.0f);
        else
            for (int64_t i = 0; i < X.numel(); ++i) X[i] = static_cast<float>(c.x[i]);
        Rng dropout_rng(2024);
        LayerContext ctx{*be_, Format::FP32, true, &dropout_rng};
        layer->forward(ctx, X, Y);
        QCOMPARE(Y.shape(), with_batch(c.batch, out_shape));

        const std::vector<Parameter*> params = layer->parameters();
        Params pv;
        for (Parameter* p : params) pv.push_back(dbl(p->value));
        const Vec xd = dbl(X);
        const Vec yref = c.reference(xd, pv);
        QCOMPARE(yref.size(), static_cast<size_t>(Y.numel()));
        for (size_t i = 0; i < yref.size(); ++i)
            QVERIFY2(
                std::fabs(Y[static_cast<int64_t>(i)] - yref[i]) <= kForwardTol * (std::fabs(yref[i]) + 1),
                qPrintable(QString("%1 forward element %2: %3 vs float64 %4")
                               .arg(QString::fromStdString(name))
                               .arg(i)
                               .arg(Y[static_cast<int64_t>(i)])
                               .arg(yref[i])));

        Rng r_rng(5);
        Tensor R(Y.shape());
        for (float& v : R.span()) v = r_rng.uniform(-1.0f, 1.0f);
        const Vec rd = dbl(R);
        for (Parameter* p : params) p->grad.fill(123.0f);  // backward must overwrite
        layer->backward(ctx, X, Y, R, &dX);
        QCOMPARE(dX.shape(), X.shape());
        auto loss = [&](const Vec& xv, const Params& pvv) { return dot(c.reference(xv, pvv), rd); };
        if (c.input_has_gradient) {
            Vec analytic, numeric;
            for (size_t i = 0; i < xd.size(); ++i) {
                Vec xp = xd, xm = xd;
                xp[i] += kStep;
                xm[i] -= kStep;
                numeric.push_back((loss(xp, pv) - loss(xm, pv)) / (2 * kStep));
                analytic.push_back(dX[static_cast<int64_t>(i)]);
            }
            EXPECT_GRAD(name + " dx", analytic, numeric);
        }
        for (size_t p = 0; p < params.size(); ++p) {
            Vec analytic, numeric;
            for (size_t j = 0; j < pv[p].size(); ++j) {
                Params pp = pv, pm = pv;
                pp[p][j] += kStep;
                pm[p][j] -= kStep;
                numeric.push_back((loss(xd, pp) - loss(xd, pm)) / (2 * kStep));
                analytic.push_back(params[p]->grad[static_cast<int64_t>(j)]);
            }
            EXPECT_GRAD(name + " d" + params[p]->name, analytic, numeric);
        }
    }

    // The network of a tiny language model: Embedding -> LayerNorm -> Linear head, vocabulary
    // and head width from the dataset.
    static json tiny_language_model(int64_t context) {
        return {{"name", "tiny-lm"},
                {"loss", "token_cross_entropy"},
                {"layers",
                 {{{"type", "Embedding"}, {"d_model", 16}, {"context", context}},
                  {{"type", "LayerNorm"}},
                  {{"type", "Linear"}, {"out", 0}}}}};
    }

private slots:
    // Ids repeat within and across samples, so the token table's rows sum several gradients.
    void embedding() {
        const int64_t vocab = 5, d = 4, context = 6, positions = 4, batch = 3;
        const Vec ids{0, 3, 3, 1, 4, 0, 2, 3, 1, 1, 1, 4};
        check_layer({json{{"type", "Embedding"}, {"vocab", vocab}, {"d_model", d}, {"context", context}},
                     {positions},
                     batch,
                     ids,
                     embedding_reference(batch, positions, d),
                     false});
        // The vocabulary from the dataset: the same layer with vocab 0 built with 5 classes.
        check_layer({json{{"type", "Embedding"}, {"d_model", d}, {"context", positions}},
                     {positions},
                     batch,
                     ids,
                     embedding_reference(batch, positions, d),
                     false,
                     vocab});
    }

    // Initialised as GPT-2's tables: normal, std 0.02.
    void embeddingInitialisation() {
        auto layer = make_layer({{"type", "Embedding"}, {"vocab", 64}, {"d_model", 32}, {"context", 16}});
        layer->build({16});
        Rng rng(3);
        layer->init(rng);
        for (Parameter* p : layer->parameters()) {
            double sum = 0, square = 0;
            for (float v : p->value.span()) sum += v, square += double(v) * v;
            const double n = static_cast<double>(p->value.numel());
            const double mean = sum / n, stddev = std::sqrt(square / n - mean * mean);
            QVERIFY2(std::fabs(mean) < 0.003 && std::fabs(stddev - 0.02) < 0.002,
                     qPrintable(QString("%1: mean %2, std %3")
                                    .arg(QString::fromStdString(p->name))
                                    .arg(mean)
                                    .arg(stddev)));
            QVERIFY(p->weight_decay);  // nanoGPT decays its 2-D tables
        }
    }

    void layerNormAndRmsNorm() {
        const int64_t positions = 4, d = 6;
        for (const bool rms : {false, true})
            for (const bool affine : {true, false})
                for (const bool bias : {true, false}) {
                    if (rms && bias) continue;  // RMSNorm has no bias
                    json spec{{"type", rms ? "RMSNorm" : "LayerNorm"}, {"affine", affine}};
                    if (!rms) spec["bias"] = bias;
                    check_layer({spec,
                                 {positions, d},
                                 3,
                                 {},
                                 norm_reference(rms, double(1e-5f), affine, affine && bias && !rms, d)});
                }
        // A larger eps, and a flat [d] input (one row per sample).
        check_layer({json{{"type", "LayerNorm"}, {"eps", 0.5}},
                     {positions, d},
                     2,
                     {},
                     norm_reference(false, 0.5, true, true, d)});
        check_layer(
            {json{{"type", "RMSNorm"}}, {d}, 4, {}, norm_reference(true, double(1e-5f), true, false, d)});
    }

    // Linear, an activation and Dropout act on the last dimension of [T, d].
    void linearActivationAndDropoutOnSequences() {
        const int64_t batch = 3, positions = 4, d = 5;
        check_layer({json{{"type", "Linear"}, {"out", 7}},
                     {positions, d},
                     batch,
                     {},
                     linear_reference(batch * positions, d, 7, true)});
        check_layer({json{{"type", "Linear"}, {"out", 3}, {"bias", false}},
                     {positions, d},
                     batch,
                     {},
                     linear_reference(batch * positions, d, 3, false)});
        // The head's width from the dataset.
        check_layer({json{{"type", "Linear"}},
                     {positions, d},
                     batch,
                     {},
                     linear_reference(batch * positions, d, 9, true),
                     true,
                     9});
        check_layer({json{{"type", "Tanh"}}, {positions, d}, batch, {}, [](const Vec& x, const Params&) {
                         Vec y(x.size());
                         for (size_t i = 0; i < x.size(); ++i) y[i] = std::tanh(x[i]);
                         return y;
                     }});
        // Dropout's mask is drawn in forward: the same generator state gives the same mask.
        auto dropout = make_layer({{"type", "Dropout"}, {"p", 0.4}});
        dropout->build({positions, d});
        Tensor ones({batch, positions, d}, 1.0f), mask;
        Rng mask_rng(2024);
        LayerContext ctx{*be_, Format::FP32, true, &mask_rng};
        dropout->forward(ctx, ones, mask);
        QCOMPARE(mask.shape(), ones.shape());
        const Vec m = dbl(mask);
        check_layer({json{{"type", "Dropout"}, {"p", 0.4}},
                     {positions, d},
                     batch,
                     {},
                     [m](const Vec& x, const Params&) {
                         Vec y(x.size());
                         for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * m[i];
                         return y;
                     }});
    }

    // The language model's loss: mean cross-entropy over every position of [B, T, V], plus
    // z_loss * mean(log² Z) in the gradient, against float64, at two loss scales.
    void tokenCrossEntropyAndZLoss() {
        const int64_t batch = 2, positions = 3, vocab = 5, rows = batch * positions;
        const LossDefinition& loss = run_loss("token_cross_entropy", TargetKind::ClassPerPosition, "tokens");
        Rng rng(31);
        Tensor logits({batch, positions, vocab}), targets({batch, positions});
        std::vector<int64_t> labels(static_cast<size_t>(rows));
        // Logits with an offset, so log Z is far from 0 and the z-loss gradient is not small.
        for (float& v : logits.span()) v = rng.uniform(-3.0f, 3.0f) + 2.0f;
        for (int64_t r = 0; r < rows; ++r)
            targets[r] = static_cast<float>(labels[r] = static_cast<int64_t>(rng.below(vocab)));
        const Vec zd = dbl(logits);
        for (const float z_loss : {0.0f, 0.05f})
            for (const float scale : {1.0f, 1024.0f}) {
                Tensor dlogits(logits.shape());
                const auto r = loss.on_host(*be_, logits, targets, dlogits.data(), scale, z_loss);
                const ReferenceLoss ref = reference_loss(zd, labels, vocab, z_loss);
                QVERIFY2(std::fabs(r.loss - ref.cross_entropy) <= 1e-6 * ref.cross_entropy,
                         qPrintable(QString("loss %1 vs float64 %2").arg(r.loss).arg(ref.cross_entropy)));
                QVERIFY2(std::fabs(r.z_term - ref.z_term) <= 1e-6 * (ref.z_term + 1e-12),
                         qPrintable(QString("z term %1 vs float64 %2").arg(r.z_term).arg(ref.z_term)));
                QCOMPARE(r.correct, ref.correct);
                Vec analytic, numeric;
                for (size_t i = 0; i < zd.size(); ++i) {
                    Vec zp = zd, zm = zd;
                    zp[i] += kStep;
                    zm[i] -= kStep;
                    const ReferenceLoss lp = reference_loss(zp, labels, vocab, z_loss);
                    const ReferenceLoss lm = reference_loss(zm, labels, vocab, z_loss);
                    numeric.push_back(scale *
                                      ((lp.cross_entropy + lp.z_term) - (lm.cross_entropy + lm.z_term)) /
                                      (2 * kStep));
                    analytic.push_back(dlogits[static_cast<int64_t>(i)]);
                }
                EXPECT_GRAD("token cross-entropy, z_loss " + std::to_string(z_loss) + ", scale " +
                                std::to_string(scale),
                            analytic, numeric);
            }
        // Without a z-loss it is the per-sample loss over rows = batch x positions, bit for bit.
        Tensor d_token(logits.shape()), d_rows(logits.shape());
        const auto a = loss.on_host(*be_, logits, targets, d_token.data(), 8.0f);
        const auto b =
            be_->softmax_cross_entropy(logits.data(), targets.data(), d_rows.data(), rows, vocab, 8.0f);
        QCOMPARE(a.loss, b.loss);
        for (int64_t i = 0; i < logits.numel(); ++i) QCOMPARE(d_token[i], d_rows[i]);
    }

    // A target outside the vocabulary is refused, naming the sample and position; so is a token
    // id the Embedding cannot look up.
    void badTokenIdsAndTargets() {
        const LossDefinition& loss = *find_loss("token_cross_entropy");
        Tensor logits({2, 3, 4}, 0.5f), targets({2, 3}, 1.0f);
        targets[4] = 4.0f;
        VERIFY_MSG(error_text<DataError>([&] { (void)loss.on_host(*be_, logits, targets, nullptr, 1.0f); }),
                   "sample 1", "position 1", "is 4", "[0, 4)");
        targets[4] = 1.5f;
        VERIFY_MSG(error_text<DataError>([&] { (void)loss.on_host(*be_, logits, targets, nullptr, 1.0f); }),
                   "is 1.5");

        auto layer = make_layer({{"type", "Embedding"}, {"vocab", 10}, {"d_model", 4}, {"context", 8}});
        layer->build({3});
        LayerContext ctx{*be_, Format::FP32, false, nullptr};
        Tensor ids({2, 3}, 2.0f), y;
        layer->forward(ctx, ids, y);  // fine
        for (const auto& [bad, text] : std::vector<std::pair<float, const char*>>{
                 {10.0f, "holds 10,"}, {-1.0f, "holds -1,"}, {2.5f, "holds 2.5,"}, {NAN, "holds nan"}}) {
            ids[5] = bad;
            VERIFY_MSG(error_text<DataError>([&] { layer->forward(ctx, ids, y); }), "Embedding", "sample 1",
                       "position 2", text, "[0, 10)");
        }
    }

    // Settings whose 0 means "the dataset's classes": resolved by build and inspect with the
    // class count, written resolved by to_json, and refused naming the field without one.
    void vocabularyFromTheDataset() {
        const json description = tiny_language_model(8);
        Network net = Network::from_json(description);
        net.build({8}, 4, 11);
        QCOMPARE(net.output_shape(), (Shape{8, 11}));
        const json stored = net.to_json();
        QCOMPARE(stored["layers"][0]["vocab"].get<int64_t>(), int64_t{11});
        QCOMPARE(stored["layers"][2]["out"].get<int64_t>(), int64_t{11});
        QCOMPARE(stored["loss"].get<std::string>(), std::string("token_cross_entropy"));
        // The stored network builds without the dataset.
        Network again = Network::from_json(stored);
        again.build({8});
        QCOMPARE(again.parameter_count(), net.parameter_count());
        QCOMPARE(net.parameter_count(), (11 + 8) * 16 + 2 * 16 + 16 * 11 + 11);

        const auto reports = Network::inspect(description, {8}, 4, 11);
        QCOMPARE(reports.size(), size_t{3});
        QCOMPARE(reports[0].output, (Shape{8, 16}));
        QCOMPARE(reports[0].parameters, int64_t{(11 + 8) * 16});
        QCOMPARE(reports[2].output, (Shape{8, 11}));
        for (const auto& r : reports) QVERIFY2(r.error.empty(), r.error.c_str());

        Network without = Network::from_json(description);
        VERIFY_MSG(error_text<NetworkError>([&] { without.build({8}); }), "layer 0 (Embedding)",
                   "\"vocab\" (vocabulary) is 0", "dataset's classes");
        const auto unknown = Network::inspect(description, {8});
        VERIFY_MSG(QString::fromStdString(unknown[0].error), "\"vocab\"");
        json head_only = description;
        head_only["layers"][0]["vocab"] = 11;
        VERIFY_MSG(error_text<NetworkError>([&] { Network::from_json(head_only).build({8}); }),
                   "layer 2 (Linear)", "\"out\" (outputs) is 0");
    }

    void shapeErrorsNameTheField() {
        VERIFY_MSG(
            error_text<NetworkError>([&] { Network::from_json(tiny_language_model(4)).build({6}, 1, 5); }),
            "layer 0 (Embedding)", "\"context\" is 4 positions, the input has 6");
        json image = tiny_language_model(4);
        VERIFY_MSG(error_text<NetworkError>([&] {
                       Network::from_json(image).build({1, 4, 4}, 1, 5);
                   }),
                   "layer 0 (Embedding)", "expects [T] token ids");
        // A Linear after a convolution still asks for Flatten.
        const json cnn{
            {"layers",
             {{{"type", "Conv2d"}, {"out_channels", 2}, {"kernel", 3}}, {{"type", "Linear"}, {"out", 3}}}}};
        VERIFY_MSG(error_text<NetworkError>([&] {
                       Network::from_json(cnn).build({1, 6, 6});
                   }),
                   "layer 1 (Linear)", "add Flatten");
        const json norm_on_image{{"layers", {{{"type", "RMSNorm"}}}}};
        VERIFY_MSG(error_text<NetworkError>([&] {
                       Network::from_json(norm_on_image).build({1, 6, 6});
                   }),
                   "layer 0 (RMSNorm)", "last dimension");
    }

    void zLossSetting() {
        json lm = tiny_language_model(8);
        lm["z_loss"] = 1e-4;
        const Network net = Network::from_json(lm);
        QCOMPARE(net.z_loss(), 1e-4f);
        QCOMPARE(Network::from_json(net.to_json()).z_loss(), 1e-4f);
        QVERIFY(!Network::from_json(tiny_language_model(8)).to_json().contains("z_loss"));
        json classifier{
            {"loss", "cross_entropy"}, {"z_loss", 1e-4}, {"layers", {{{"type", "Linear"}, {"out", 2}}}}};
        VERIFY_MSG(error_text<NetworkError>([&] { (void)Network::from_json(classifier); }), "\"z_loss\"",
                   "token_cross_entropy", "not to cross_entropy");
        lm["z_loss"] = -1;
        VERIFY_MSG(error_text<NetworkError>([&] { (void)Network::from_json(lm); }),
                   "\"z_loss\" must be in [0, 1]");
        lm["z_loss"] = "small";
        VERIFY_MSG(error_text<NetworkError>([&] { (void)Network::from_json(lm); }),
                   "\"z_loss\" must be a number");
    }

    // [T, d] activations count T x d per sample: a batch that takes them over the limit is
    // refused before anything is allocated, with the numbers.
    void activationLimitCountsPositions() {
        const int64_t context = 1024;
        const json lm = tiny_language_model(context);
        // Per sample: ids 1024, Embedding 16384, LayerNorm 16384 and its mean and rstd per
        // position, head 1024 x 11.
        const int64_t per_sample = context + 2 * context * 16 + 2 * context + context * 11;
        const int64_t batch = NetworkLimits::kMaxActivations / per_sample + 1;
        Network fits = Network::from_json(lm);
        fits.build({context}, batch - 1, 11);
        Network over = Network::from_json(lm);
        const std::string at_batch = "batch " + std::to_string(batch);
        VERIFY_MSG(error_text<NetworkError>([&] { over.build({context}, batch, 11); }), "layer 2 (Linear)",
                   "the activations reach", at_batch.c_str());
    }

    // Token ids reach the Embedding unrounded whatever the activation format: 257 is not a
    // BF16 number.
    void tokenIdsAreNotRounded() {
        Network net = Network::from_json(
            {{"layers", {{{"type", "Embedding"}, {"vocab", 300}, {"d_model", 2}, {"context", 2}}}}});
        net.build({2});
        net.init(1);
        const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::BF16Mixed);
        net.prepare_weights(policy);
        LayerContext ctx{*be_, policy.gemm_operands, false, nullptr};
        Tensor ids({1, 2});
        ids[0] = 257.0f;
        ids[1] = 299.0f;
        const Tensor& y = net.forward(ctx, ids, policy);
        const Tensor& table = net.layer(0).parameters()[0]->value;
        const Tensor& position = net.layer(0).parameters()[1]->value;
        float expected = table[257 * 2] + position[0];
        round_to_format(policy.activations, &expected, &expected, 1);
        QCOMPARE(y[0], expected);
    }

    // The new kinds' PyTorch modules (TokenPositionEmbedding, RowNorm for every option, Linear
    // on [T, d]) and the loss's text compute what we compute, on our weights, within FP32.
    void pytorchModulesMatch() {
        QString why;
        const QString python = find_torch_python(why);
        if (python.isEmpty()) QSKIP(qPrintable("no python3 with torch: " + why));
        const int64_t vocab = 7, positions = 5, batch = 2;
        Network net = Network::from_json({{"loss", "token_cross_entropy"},
                                          {"layers",
                                           {{{"type", "Embedding"}, {"d_model", 8}, {"context", 6}},
                                            {{"type", "LayerNorm"}},
                                            {{"type", "Linear"}, {"out", 8}},
                                            {{"type", "GELU"}},
                                            {{"type", "RMSNorm"}, {"eps", 1e-3}},
                                            {{"type", "LayerNorm"}, {"bias", false}},
                                            {{"type", "RMSNorm"}, {"affine", false}},
                                            {{"type", "LayerNorm"}, {"affine", false}},
                                            {{"type", "Dropout"}, {"p", 0.2}},
                                            {{"type", "Linear"}, {"bias", false}}}}});
        net.build({positions}, batch, vocab);
        net.init(5);
        Rng rng(8);
        for (size_t i = 1; i < net.size(); ++i)  // norms away from 1 and 0, so a swapped name shows
            if (net.layer(i).kind() != "Linear")
                for (Parameter* p : net.layer(i).parameters())
                    for (float& v : p->value.span()) v = rng.uniform(-1.5f, 1.5f);
        Tensor x({batch, positions}), y({batch, positions});
        for (float& v : x.span()) v = static_cast<float>(rng.below(vocab));
        for (float& v : y.span()) v = static_cast<float>(rng.below(vocab));
        const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::FP32);
        LayerContext ctx{*be_, policy.gemm_operands, false, nullptr};
        const Tensor out = net.forward(ctx, x, policy);
        const double loss = loss_named(net.loss()).on_host(*be_, out, y, nullptr, 1.0f).loss;

        QTemporaryDir dir;
        const std::string script = dir.filePath("parity.py").toStdString();
        const std::string data = dir.filePath("data.json").toStdString();
        std::ofstream(script) << parity_script(net, {positions});
        std::ofstream(data) << parity_data(net, {positions}, x, y).dump();
        const ProgramResult r =
            run_program(python, {QString::fromStdString(script), QString::fromStdString(data)});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const json theirs = json::parse(r.out.toStdString());
        QCOMPARE(theirs["shape"].get<Shape>(), out.shape());
        const auto values = theirs["out"].get<std::vector<double>>();
        for (int64_t i = 0; i < out.numel(); ++i)
            QVERIFY2(std::fabs(values[i] - out[i]) <= 2e-5 * (1 + std::fabs(values[i])),
                     qPrintable(QString("output %1: PyTorch %2, ours %3").arg(i).arg(values[i]).arg(out[i])));
        QVERIFY2(
            std::fabs(theirs["loss"].get<double>() - loss) <= 1e-5 * loss,
            qPrintable(QString("loss: PyTorch %1, ours %2").arg(theirs["loss"].get<double>()).arg(loss)));
    }

    // Embedding -> LayerNorm -> Linear on "the next token is this one plus 1": the loss falls
    // and the accuracy, counted per token, reaches nearly every position.
    // Under FP32, a mixed policy and a scaled recipe, whose quantizers see the head's rows as
    // batch x positions.
    void tinyLanguageModelTrains_data() {
        QTest::addColumn<int>("precision");
        QTest::newRow("fp32") << static_cast<int>(PrecisionKind::FP32);
        QTest::newRow("bf16-mixed") << static_cast<int>(PrecisionKind::BF16Mixed);
        QTest::newRow("fp8-current") << static_cast<int>(PrecisionKind::Fp8Current);
        QTest::newRow("nvfp4") << static_cast<int>(PrecisionKind::NvFp4);
    }

    void tinyLanguageModelTrains() {
        QFETCH(int, precision);
        const int64_t vocab = 5, positions = 6;
        Dataset data;
        data.name = "plus-one";
        data.sample_shape = {positions};
        data.num_classes = static_cast<int>(vocab);
        Rng rng(9);
        auto fill = [&](Tensor& x, Tensor& y, int64_t n) {
            x.resize({n, positions});
            y.resize({n, positions});
            for (int64_t i = 0; i < n; ++i) {
                auto token = static_cast<int64_t>(rng.below(vocab));
                for (int64_t t = 0; t < positions; ++t) {
                    x[i * positions + t] = static_cast<float>(token);
                    token = (token + 1) % vocab;
                    y[i * positions + t] = static_cast<float>(token);
                }
            }
        };
        fill(data.train_x, data.train_y, 64);
        fill(data.test_x, data.test_y, 16);
        QCOMPARE(data.target_kind(), TargetKind::ClassPerPosition);

        struct Watch final : TrainingObserver {
            void on_run_start(const RunStartInfo& info) override { network = info.network; }
            void on_step(const StepMetrics& m) override {
                if (m.step == 1) first_loss = m.loss;
                accuracy_in_range &= m.accuracy >= 0 && m.accuracy <= 1;
                // Tokens per second: the step's samples x 6 positions.
                tokens_match &=
                    std::fabs(m.tokens_per_second - 6 * m.samples_per_second) <= 1e-9 * m.tokens_per_second;
            }
            void on_eval(const EvalMetrics& m) override { last = m; }
            json network;
            double first_loss = std::nan("");
            bool accuracy_in_range = true;
            bool tokens_match = true;
            EvalMetrics last;
        } watch;
        auto backend = make_cpu_backend();
        Network network = Network::from_json(tiny_language_model(positions));
        TrainConfig config;
        config.epochs = 12;
        config.batch_size = 16;
        config.lr = 0.02f;
        config.precision = static_cast<PrecisionKind>(precision);
        Trainer trainer(network, data, config, *backend);
        trainer.add_observer(&watch);
        trainer.run();
        QCOMPARE(watch.network["layers"][0]["vocab"].get<int64_t>(), vocab);
        QVERIFY2(std::fabs(watch.first_loss - std::log(double(vocab))) < 0.3,
                 qPrintable(QString("first loss %1, ln 5 is 1.609").arg(watch.first_loss)));
        QVERIFY2(watch.last.test_loss < 0.25 * watch.first_loss,
                 qPrintable(QString("test loss %1 after training, first %2")
                                .arg(watch.last.test_loss)
                                .arg(watch.first_loss)));
        QVERIFY2(watch.last.test_accuracy > 0.95 && watch.last.test_accuracy <= 1.0,
                 qPrintable(QString("test accuracy %1").arg(watch.last.test_accuracy)));
        QVERIFY2(watch.last.train_accuracy <= 1.0,
                 qPrintable(QString("train accuracy %1").arg(watch.last.train_accuracy)));
        QVERIFY(watch.accuracy_in_range);
        QVERIFY(watch.tokens_match);
        QCOMPARE(watch.last.test_bits_per_token, watch.last.test_loss / std::log(2.0));
    }
};

QTEST_APPLESS_MAIN(TestSequenceLayers)
#include "test_sequence_layers.moc"
