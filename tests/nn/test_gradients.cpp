// Gradient checks of every layer and both losses: the engine's FP32 backward pass against
// float64 central differences of an independent float64 forward pass (tests/nn/reference_network.h).
// For L = sum(y * R) with a fixed random R, dL/dx and dL/dparam from Layer::backward must match
// (L(v + h) - L(v - h)) / 2h taken on the float64 forward, element by element. The FP32 forward
// is checked against the same float64 forward, so the two describe one function. Inputs stay
// away from the kinks of ReLU and the ties of max pooling. Whole networks (an MLP and a small
// CNN) are checked through Network::forward/backward under the fp32 policy.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "core/backend/backend.h"
#include "core/common/rng.h"
#include "core/nn/network.h"
#include "core/precision/precision_policy.h"
#include "tests/nn/reference_network.h"

using namespace mpwb;
using nlohmann::json;
using ref::Vec;

namespace {

constexpr double kStep = 1e-5;        // central-difference step on the float64 forward
constexpr double kGradTol = 2e-4;     // FP32 backward vs float64 differences
constexpr double kForwardTol = 2e-5;  // FP32 forward vs float64 forward

enum class InputKind { Smooth, AwayFromZero, Distinct };

std::vector<float> make_input(Rng& rng, int64_t n, InputKind kind) {
    std::vector<float> x(static_cast<size_t>(n));
    if (kind == InputKind::Distinct) {
        // A shuffled ladder: every value differs from every other by at least 0.04, so no
        // pooling window has a near-tie for a step of 1e-5 to flip.
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        for (int64_t i = n - 1; i > 0; --i)
            std::swap(order[i], order[rng.below(static_cast<uint64_t>(i + 1))]);
        for (int64_t i = 0; i < n; ++i)
            x[i] = -2.0f + 4.0f * static_cast<float>(order[i]) / static_cast<float>(n) +
                   rng.uniform(0.0f, 0.01f);
        return x;
    }
    for (float& v : x) {
        do v = rng.uniform(-2.0f, 2.0f);
        while (kind == InputKind::AwayFromZero && std::fabs(v) < 0.05f);
    }
    return x;
}

Vec dbl(const float* p, int64_t n) { return Vec(p, p + n); }

double dot(const Vec& a, const Vec& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// |analytic - numeric| / (|numeric| + rms(numeric)) over all checked elements.
struct GradCompare {
    double worst = 0;
    size_t worst_index = 0;
    double worst_analytic = 0, worst_numeric = 0;
};

// floor: the magnitude below which a difference is FP32 rounding of sums that cancel (a bias
// feeding BatchNorm has an exact gradient of 0 that FP32 gets as ~1e-8).
GradCompare compare(const std::vector<double>& analytic, const std::vector<double>& numeric,
                    double floor = 0) {
    double rms = 0;
    for (double v : numeric) rms += v * v;
    rms = std::sqrt(rms / std::max<size_t>(numeric.size(), 1)) + floor + 1e-12;
    GradCompare c;
    for (size_t i = 0; i < numeric.size(); ++i) {
        const double e = std::fabs(analytic[i] - numeric[i]) / (std::fabs(numeric[i]) + rms);
        if (!(e <= c.worst)) {
            c.worst = std::isnan(e) ? INFINITY : e;
            c.worst_index = i;
            c.worst_analytic = analytic[i];
            c.worst_numeric = numeric[i];
        }
    }
    return c;
}

#define EXPECT_GRAD(what, analytic, numeric, ...)                                                           \
    do {                                                                                                    \
        const GradCompare c_ = compare((analytic), (numeric)__VA_OPT__(, ) __VA_ARGS__);                    \
        QVERIFY2(c_.worst <= kGradTol,                                                                      \
                 qPrintable(QString("%1: element %2 analytic %3, finite difference %4 (relative error %5)") \
                                .arg(QString::fromStdString(what))                                          \
                                .arg(c_.worst_index)                                                        \
                                .arg(c_.worst_analytic, 0, 'g', 9)                                          \
                                .arg(c_.worst_numeric, 0, 'g', 9)                                           \
                                .arg(c_.worst)));                                                           \
    } while (0)

// Indices to check: all of them for small tensors, an even spread for large ones.
std::vector<int64_t> sample_indices(int64_t n, int64_t max_count = 160) {
    std::vector<int64_t> idx;
    const int64_t step = std::max<int64_t>(1, n / max_count);
    for (int64_t i = 0; i < n; i += step) idx.push_back(i);
    if (idx.back() != n - 1) idx.push_back(n - 1);
    return idx;
}

struct LayerCheck {
    json spec;
    Shape input;
    int64_t batch = 3;
    InputKind inputs = InputKind::Smooth;
};

}  // namespace

class TestGradients : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> be_ = make_cpu_backend();

    void check_layer(const LayerCheck& lc) {
        const std::string name = lc.spec.dump();
        std::unique_ptr<Layer> layer = make_layer(lc.spec);
        const Shape out_shape = layer->build(lc.input);
        Rng init_rng(7);
        layer->init(init_rng);
        Rng rng(11);
        // Non-trivial affine parameters for BatchNorm (its init is gamma 1, beta 0).
        if (lc.spec["type"] == "BatchNorm")
            for (Parameter* p : layer->parameters())
                for (float& v : p->value.span()) v = rng.uniform(0.5f, 1.5f);
        const auto x = make_input(rng, lc.batch * shape_numel(lc.input), lc.inputs);
        Tensor X(with_batch(lc.batch, lc.input)), Y, dX;
        std::copy(x.begin(), x.end(), X.data());

        // Dropout draws its mask in forward: the same generator state gives the same mask, and
        // a forward pass over ones reads it out.
        const Rng dropout_state(2024);
        Rng mask_rng = dropout_state;
        Vec mask;
        const bool is_dropout = lc.spec["type"] == "Dropout";
        if (is_dropout) {
            LayerContext mctx{*be_, Format::FP32, true, &mask_rng};
            Tensor ones(X.shape(), 1.0f), m;
            layer->forward(mctx, ones, m);
            mask = dbl(m.data(), m.numel());
            const double keep = 1.0 / (1.0 - lc.spec["p"].get<double>());
            int64_t dropped = 0;
            for (double v : mask) {
                QVERIFY2(v == 0.0 || std::fabs(v - keep) < 1e-6, "dropout mask holds 0 or 1/(1-p)");
                dropped += v == 0.0;
            }
            QVERIFY2(dropped > 0 && dropped < static_cast<int64_t>(mask.size()),
                     "mask drops some, keeps some");
        }
        Rng forward_rng = dropout_state;
        LayerContext ctx{*be_, Format::FP32, true, &forward_rng};
        layer->forward(ctx, X, Y);
        QCOMPARE(Y.shape(), with_batch(lc.batch, out_shape));

        std::vector<Parameter*> params = layer->parameters();
        std::vector<Vec> pv;
        for (Parameter* p : params) pv.push_back(dbl(p->value.data(), p->value.numel()));
        const Vec* maskp = is_dropout ? &mask : nullptr;
        const Vec xd = dbl(X.data(), X.numel());
        const Vec yref = ref::layer_forward(lc.spec, lc.input, lc.batch, xd, pv, maskp);
        {
            double rms = 0;
            for (double v : yref) rms += v * v;
            rms = std::sqrt(rms / yref.size()) + 1e-30;
            for (size_t i = 0; i < yref.size(); ++i)
                QVERIFY2(std::fabs(Y[static_cast<int64_t>(i)] - yref[i]) <=
                             kForwardTol * (std::fabs(yref[i]) + rms),
                         qPrintable(QString("%1 forward element %2: %3 vs float64 %4")
                                        .arg(QString::fromStdString(name))
                                        .arg(i)
                                        .arg(Y[static_cast<int64_t>(i)])
                                        .arg(yref[i])));
        }

        Rng r_rng(5);
        Tensor R(Y.shape());
        for (float& v : R.span()) v = r_rng.uniform(-1.0f, 1.0f);
        const Vec rd = dbl(R.data(), R.numel());
        for (Parameter* p : params) p->grad.fill(123.0f);  // backward must overwrite
        layer->backward(ctx, X, Y, R, &dX);
        QCOMPARE(dX.shape(), X.shape());

        auto loss = [&](const Vec& xv, const std::vector<Vec>& pvv) {
            return dot(ref::layer_forward(lc.spec, lc.input, lc.batch, xv, pvv, maskp), rd);
        };
        {
            std::vector<double> analytic, numeric;
            for (int64_t i : sample_indices(X.numel())) {
                Vec xp = xd, xm = xd;
                xp[i] += kStep;
                xm[i] -= kStep;
                numeric.push_back((loss(xp, pv) - loss(xm, pv)) / (2 * kStep));
                analytic.push_back(dX[i]);
            }
            EXPECT_GRAD(name + " dx", analytic, numeric);
        }
        for (size_t p = 0; p < params.size(); ++p) {
            std::vector<double> analytic, numeric;
            for (int64_t j : sample_indices(params[p]->value.numel())) {
                auto pp = pv, pm = pv;
                pp[p][j] += kStep;
                pm[p][j] -= kStep;
                numeric.push_back((loss(xd, pp) - loss(xd, pm)) / (2 * kStep));
                analytic.push_back(params[p]->grad[j]);
            }
            EXPECT_GRAD(name + " d" + params[p]->name, analytic, numeric);
        }
    }

    // Whole network under fp32: parameter gradients of the mean loss against differences of
    // the float64 network built from the same layer descriptions and weights.
    void check_network(const json& description, const Shape& input, int64_t batch, InputKind inputs) {
        Network net = Network::from_json(description);
        net.build(input);
        net.init(3);
        const PrecisionPolicy policy = PrecisionPolicy::make(PrecisionKind::FP32);
        net.prepare_weights(policy);
        const auto reports = Network::inspect(description, input);
        QCOMPARE(reports.size(), net.size());
        Rng rng(17);
        const auto x = make_input(rng, batch * shape_numel(input), inputs);
        Tensor X(with_batch(batch, input));
        std::copy(x.begin(), x.end(), X.data());
        const int64_t k = shape_numel(net.output_shape());
        std::vector<int64_t> labels(static_cast<size_t>(batch));
        Tensor labels_f({batch}), target(with_batch(batch, net.output_shape()));
        for (int64_t i = 0; i < batch; ++i) {
            labels[i] = static_cast<int64_t>(rng.below(static_cast<uint64_t>(k)));
            labels_f[i] = static_cast<float>(labels[i]);
        }
        for (float& v : target.span()) v = rng.uniform(-1.0f, 1.0f);
        const bool ce = net.loss() == "cross_entropy";

        LayerContext ctx{*be_, policy.gemm_operands, true, nullptr};
        const Tensor& out = net.forward(ctx, X, policy);
        Tensor dout(out.shape());
        const auto lr =
            ce ? be_->softmax_cross_entropy(out.data(), labels_f.data(), dout.data(), batch, k, 1.0f)
               : be_->mse(out.data(), target.data(), dout.data(), batch, k, 1.0f);
        net.backward(ctx, dout, policy, nullptr);

        std::vector<std::vector<Vec>> pv(net.size());
        for (size_t i = 0; i < net.size(); ++i)
            for (Parameter* p : net.layer(i).parameters())
                pv[i].push_back(dbl(p->value.data(), p->value.numel()));
        const Vec xd = dbl(X.data(), X.numel());
        const Vec td = dbl(target.data(), target.numel());
        const auto& layers = description["layers"];
        auto loss = [&](const std::vector<std::vector<Vec>>& params) {
            Vec a = xd;
            Shape shape = input;
            for (size_t i = 0; i < layers.size(); ++i) {
                a = ref::layer_forward(layers[i], shape, batch, a, params[i]);
                shape = reports[i].output;
            }
            return ce ? ref::softmax_cross_entropy(a, labels, batch, k) : ref::mse(a, td);
        };
        const double lref = loss(pv);
        QVERIFY2(std::fabs(lr.loss - lref) <= 1e-5 * std::fabs(lref),
                 qPrintable(QString("network loss %1 vs float64 %2").arg(lr.loss).arg(lref)));
        struct Checked {
            std::string what;
            std::vector<double> analytic, numeric;
        };
        std::vector<Checked> checked;
        double sum_sq = 0;
        size_t count = 0;
        for (size_t i = 0; i < net.size(); ++i) {
            const auto params = net.layer(i).parameters();
            for (size_t p = 0; p < params.size(); ++p) {
                Checked c{description.value("name", std::string("net")) + " " + net.layer_label(i) + " " +
                              params[p]->name,
                          {},
                          {}};
                for (int64_t j : sample_indices(params[p]->value.numel(), 80)) {
                    auto pp = pv, pm = pv;
                    pp[i][p][j] += kStep;
                    pm[i][p][j] -= kStep;
                    c.numeric.push_back((loss(pp) - loss(pm)) / (2 * kStep));
                    c.analytic.push_back(params[p]->grad[j]);
                    sum_sq += c.numeric.back() * c.numeric.back();
                    ++count;
                }
                checked.push_back(std::move(c));
            }
        }
        QVERIFY(checked.size() >= 4);
        const double floor = 1e-2 * std::sqrt(sum_sq / static_cast<double>(count));
        for (const auto& c : checked) EXPECT_GRAD(c.what, c.analytic, c.numeric, floor);
    }

private slots:
    void linear() {
        check_layer({json{{"type", "Linear"}, {"out", 5}}, {7}, 4});
        check_layer({json{{"type", "Linear"}, {"out", 3}, {"bias", false}}, {6}, 2});
    }

    void conv2d() {
        check_layer({json{{"type", "Conv2d"}, {"out_channels", 3}, {"kernel", 3}}, {2, 6, 5}, 2});
        check_layer(
            {json{{"type", "Conv2d"}, {"out_channels", 2}, {"kernel", 3}, {"stride", 2}, {"padding", 1}},
             {3, 7, 6},
             2});
        check_layer(
            {json{{"type", "Conv2d"}, {"out_channels", 2}, {"kernel", 5}, {"padding", 2}}, {1, 5, 6}, 3});
        check_layer(
            {json{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 1}, {"bias", false}}, {3, 4, 4}, 2});
    }

    void pooling() {
        check_layer({json{{"type", "MaxPool2d"}, {"kernel", 2}}, {2, 6, 6}, 2, InputKind::Distinct});
        check_layer({json{{"type", "MaxPool2d"}, {"kernel", 3}, {"stride", 2}, {"padding", 1}},
                     {2, 7, 5},
                     2,
                     InputKind::Distinct});
        check_layer({json{{"type", "AvgPool2d"}, {"kernel", 2}}, {2, 6, 4}, 2});
        check_layer(
            {json{{"type", "AvgPool2d"}, {"kernel", 3}, {"stride", 2}, {"padding", 1}}, {1, 7, 8}, 2});
    }

    // Every entry of the activation table, away from ReLU's and LeakyReLU's kink at 0.
    void activations() {
        for (const ActivationInfo& a : activation_infos()) {
            json spec{{"type", a.name}};
            if (a.has_slope) spec["slope"] = 0.2;
            check_layer({spec, {40}, 3, InputKind::AwayFromZero});
        }
        check_layer({json{{"type", "Sigmoid"}}, {2, 3, 4}, 2});  // an image keeps its shape
    }

    void flattenDropoutAndIdentity() {
        check_layer({json{{"type", "Flatten"}}, {2, 3, 4}, 2});
        check_layer({json{{"type", "Identity"}}, {2, 3, 4}, 2});
        check_layer({json{{"type", "Dropout"}, {"p", 0.3}}, {50}, 4});
        check_layer({json{{"type", "Dropout"}, {"p", 0.5}}, {2, 4, 4}, 2});
    }

    void batchNorm() {
        check_layer({json{{"type", "BatchNorm"}}, {6}, 8});
        check_layer({json{{"type", "BatchNorm"}, {"eps", 1e-3}}, {3, 4, 5}, 3});
    }

    void softmaxCrossEntropyLoss() {
        Rng rng(31);
        const int64_t n = 6, k = 5;
        std::vector<float> z(n * k), labels(n);
        std::vector<int64_t> li(n);
        for (float& v : z) v = rng.uniform(-3.0f, 3.0f);
        for (int64_t i = 0; i < n; ++i)
            labels[i] = static_cast<float>(li[i] = static_cast<int64_t>(rng.below(k)));
        for (float scale : {1.0f, 4096.0f}) {
            std::vector<float> d(z.size());
            be_->softmax_cross_entropy(z.data(), labels.data(), d.data(), n, k, scale);
            std::vector<double> analytic, numeric;
            const Vec zd(z.begin(), z.end());
            for (int64_t i = 0; i < n * k; ++i) {
                Vec zp = zd, zm = zd;
                zp[i] += kStep;
                zm[i] -= kStep;
                numeric.push_back(
                    scale *
                    (ref::softmax_cross_entropy(zp, li, n, k) - ref::softmax_cross_entropy(zm, li, n, k)) /
                    (2 * kStep));
                analytic.push_back(d[i]);
            }
            EXPECT_GRAD("softmax cross-entropy, scale " + std::to_string(scale), analytic, numeric);
        }
    }

    void mseLoss() {
        Rng rng(37);
        const int64_t n = 5, k = 3;
        std::vector<float> p(n * k), t(n * k);
        for (float& v : p) v = rng.uniform(-2.0f, 2.0f);
        for (float& v : t) v = rng.uniform(-2.0f, 2.0f);
        const Vec pd(p.begin(), p.end()), td(t.begin(), t.end());
        for (float scale : {1.0f, 256.0f}) {
            std::vector<float> d(p.size());
            be_->mse(p.data(), t.data(), d.data(), n, k, scale);
            std::vector<double> analytic, numeric;
            for (int64_t i = 0; i < n * k; ++i) {
                Vec pp = pd, pm = pd;
                pp[i] += kStep;
                pm[i] -= kStep;
                numeric.push_back(scale * (ref::mse(pp, td) - ref::mse(pm, td)) / (2 * kStep));
                analytic.push_back(d[i]);
            }
            EXPECT_GRAD("mse, scale " + std::to_string(scale), analytic, numeric);
        }
    }

    void wholeMlp() {
        const json mlp = {{"name", "mlp"},
                          {"loss", "cross_entropy"},
                          {"layers",
                           {{{"type", "Linear"}, {"out", 8}},
                            {{"type", "BatchNorm"}},
                            {{"type", "Tanh"}},
                            {{"type", "Linear"}, {"out", 8}},
                            {{"type", "GELU"}},
                            {{"type", "Linear"}, {"out", 3}}}}};
        check_network(mlp, {4}, 6, InputKind::Smooth);
        json regression = mlp;
        regression["name"] = "mlp-mse";
        regression["loss"] = "mse";
        regression["layers"][4] = {{"type", "Sigmoid"}};
        check_network(regression, {4}, 5, InputKind::Smooth);
    }

    void wholeCnn() {
        const json cnn = {
            {"name", "cnn"},
            {"loss", "cross_entropy"},
            {"layers",
             {{{"type", "Conv2d"}, {"out_channels", 4}, {"kernel", 3}, {"padding", 1}},
              {{"type", "LeakyReLU"}, {"slope", 0.1}},
              {{"type", "MaxPool2d"}, {"kernel", 2}},
              {{"type", "Conv2d"}, {"out_channels", 3}, {"kernel", 3}, {"stride", 1}, {"padding", 1}},
              {{"type", "BatchNorm"}},
              {{"type", "AvgPool2d"}, {"kernel", 2}},
              {{"type", "Flatten"}},
              {{"type", "Linear"}, {"out", 5}}}}};
        check_network(cnn, {1, 8, 8}, 4, InputKind::Distinct);
    }
};

QTEST_APPLESS_MAIN(TestGradients)
#include "test_gradients.moc"
