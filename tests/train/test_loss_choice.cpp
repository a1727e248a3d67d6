// The loss of a run is chosen in one place, from the network's loss setting and the dataset's
// target kind, and a loss that does not fit the dataset is refused before anything trains. The
// planted defect this guards against: a regression set with the network's default loss
// (cross_entropy) trained with MSE on the CPU engine and with cross-entropy on the CUDA engine,
// because each engine chose from its own input.
// The engine's headers come before Qt's: core/train/trainer.h declares a member named emit(),
// which Qt's `emit` keyword macro would otherwise erase.
#include "core/backend/backend.h"
#include "core/common/error.h"
#include "core/nn/loss_registry.h"
#include "core/train/trainer.h"
#include "tests/common/test_support.h"

#include <QtTest/QtTest>

#include <cmath>

using namespace mpwb;
using mpwb::test::error_text;

namespace {

// y = sin(x0) + x1 / 2 over a seeded grid of points: a regression set of one target per sample.
Dataset sine_regression() {
    Dataset d;
    d.name = "sine-regression";
    d.sample_shape = {2};
    auto fill = [](Tensor& x, Tensor& y, int64_t n, float offset) {
        x.resize({n, 2});
        y.resize({n, 1});
        for (int64_t i = 0; i < n; ++i) {
            const float a = -2.0f + 4.0f * float(i % 17) / 16.0f + offset;
            const float b = -1.0f + 2.0f * float(i % 7) / 6.0f;
            x[2 * i] = a;
            x[2 * i + 1] = b;
            y[i] = std::sin(a) + b / 2;
        }
    };
    fill(d.train_x, d.train_y, 64, 0.0f);
    fill(d.test_x, d.test_y, 16, 0.05f);
    return d;
}

// Two classes split by the sign of x0.
Dataset two_classes() {
    Dataset d = sine_regression();
    d.name = "sign-classes";
    d.num_classes = 2;
    d.class_names = {"negative", "positive"};
    for (Tensor* y : {&d.train_y, &d.test_y}) {
        const Tensor& x = y == &d.train_y ? d.train_x : d.test_x;
        y->resize({x.dim(0)});
        for (int64_t i = 0; i < x.dim(0); ++i) (*y)[i] = x[2 * i] < 0 ? 0.0f : 1.0f;
    }
    return d;
}

// An MLP of `outputs` outputs; `loss` empty: the description names none (the default).
nlohmann::json mlp(int outputs, const std::string& loss) {
    nlohmann::json net = {
        {"name", "mlp"},
        {"layers",
         {{{"type", "Linear"}, {"out", 8}}, {{"type", "Tanh"}}, {{"type", "Linear"}, {"out", outputs}}}}};
    if (!loss.empty()) net["loss"] = loss;
    return net;
}

TrainConfig short_run() {
    TrainConfig c;
    c.epochs = 1;
    c.max_steps = 1;
    c.batch_size = 16;
    c.optimizer.kind = "sgd";
    return c;
}

// What the Trainer says about this network on this dataset: its error, or "" when it accepts it.
QString trainer_refusal(const nlohmann::json& description, const Dataset& data) {
    auto backend = make_cpu_backend();
    Network network = Network::from_json(description);
    const QString message = error_text<Error>([&] { Trainer trainer(network, data, short_run(), *backend); });
    return message == "<no exception>" ? QString() : message;
}

class FirstLoss final : public TrainingObserver {
public:
    void on_step(const StepMetrics& m) override {
        if (m.step == 1) loss = m.loss;
    }
    double loss = std::nan("");
};

}  // namespace

class TestLossChoice : public QObject {
    Q_OBJECT

private slots:
    void lossChoiceIsOneAndRefusesMisfits() {
        // The planted defect: a regression set with the default loss. The CPU engine would have
        // trained it with MSE, the CUDA engine with cross-entropy; now the trainer refuses it
        // and says what the set needs.
        const QString defect = trainer_refusal(mlp(1, ""), sine_regression());
        VERIFY_MSG(defect, "cross_entropy", "sine-regression", "regression", "mse");
        // Named explicitly, the same.
        VERIFY_MSG(trainer_refusal(mlp(1, "cross_entropy"), sine_regression()), "cross_entropy",
                   "sine-regression", "mse");
        // MSE on a classification set: refused, naming the loss, the set and what it needs.
        VERIFY_MSG(trainer_refusal(mlp(2, "mse"), two_classes()), "mse", "sign-classes", "class",
                   "cross_entropy");
        // The fitting pairs train.
        QCOMPARE(trainer_refusal(mlp(1, "mse"), sine_regression()), QString());
        QCOMPARE(trainer_refusal(mlp(2, ""), two_classes()), QString());
    }

    // Each loss is one registry entry: its targets, its op on each engine and its PyTorch text;
    // run_loss gives it for the targets it reads and refuses it, naming both, for the others.
    void everyLossIsOneEntry() {
        QCOMPARE(default_loss().name, std::string("cross_entropy"));
        QCOMPARE(Network::from_json(mlp(2, "")).loss(), default_loss().name);
        QCOMPARE(find_loss("cross_entropy")->targets, TargetKind::ClassPerSample);
        QCOMPARE(find_loss("mse")->targets, TargetKind::Regression);
        QVERIFY(find_loss("hinge") == nullptr);
        for (const LossDefinition& loss : loss_registry()) {
            QCOMPARE(find_loss(loss.name), &loss);
            // Every loss but the per-position one (which has no CUDA kernel yet) has a device op.
            QVERIFY2(loss.host && !loss.help.empty(), loss.name.c_str());
            QVERIFY2((loss.device != DeviceLoss::None) == (loss.targets != TargetKind::ClassPerPosition),
                     loss.name.c_str());
            QVERIFY2(loss.pytorch.find("nn.") != std::string::npos && !loss.pytorch_outputs.empty(),
                     loss.name.c_str());
            for (const TargetKind targets :
                 {TargetKind::ClassPerSample, TargetKind::ClassPerPosition, TargetKind::Regression}) {
                if (targets == loss.targets) {
                    QCOMPARE(&run_loss(loss.name, targets, "d"), &loss);
                    continue;
                }
                VERIFY_MSG(error_text<NetworkError>([&] { (void)run_loss(loss.name, targets, "set-x"); }),
                           loss.name.c_str(), "'set-x'", target_kind_text(loss.targets),
                           target_kind_text(targets));
            }
        }
        // A class per position is the language model's loss: the refusal names it.
        QCOMPARE(find_loss("token_cross_entropy")->targets, TargetKind::ClassPerPosition);
        VERIFY_MSG(error_text<NetworkError>(
                       [] { (void)run_loss("cross_entropy", TargetKind::ClassPerPosition, "tokens"); }),
                   "class per position", "set the network's \"loss\" to token_cross_entropy");
        VERIFY_MSG(error_text<NetworkError>([] { (void)run_loss("hinge", TargetKind::Regression, "d"); }),
                   "unknown loss \"hinge\"", "cross_entropy, mse or token_cross_entropy");
    }

    // A dataset states its targets, which is what the choice reads.
    void datasetsStateTheirTargets() {
        QCOMPARE(sine_regression().target_kind(), TargetKind::Regression);
        QCOMPARE(two_classes().target_kind(), TargetKind::ClassPerSample);
        Dataset tokens = two_classes();
        tokens.train_y.resize({tokens.train_size(), 4});  // a class per position of 4
        QCOMPARE(tokens.target_kind(), TargetKind::ClassPerPosition);
    }

    // The loss the run trains with is the one its setting names: a regression run's first step
    // reports the MSE of the network's output on its first batch.
    void regressionTrainsWithMeanSquaredError() {
        const Dataset data = sine_regression();
        auto backend = make_cpu_backend();
        Network network = Network::from_json(mlp(1, "mse"));
        TrainConfig config = short_run();
        config.batch_size = data.train_size();  // one batch of every sample, whatever the order
        Trainer trainer(network, data, config, *backend);
        FirstLoss first;
        trainer.add_observer(&first);
        // The weights before the step: the trainer initialised them in its constructor.
        LayerContext ctx{*backend, Format::FP32, false, nullptr};
        const Tensor out = network.forward(ctx, data.train_x, config.policy());
        double sum = 0;
        for (int64_t i = 0; i < out.numel(); ++i)
            sum += std::pow(double(out[i]) - double(data.train_y[i]), 2);
        const double mse = sum / double(out.numel());
        trainer.run();
        QVERIFY2(std::fabs(first.loss - mse) <= 1e-5 * (1 + mse),
                 qPrintable(QString("first loss %1, MSE %2").arg(first.loss).arg(mse)));
    }
};

QTEST_APPLESS_MAIN(TestLossChoice)
#include "test_loss_choice.moc"
