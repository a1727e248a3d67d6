// The Trainer on a backend that offers a device engine: a network holding a kind with no device
// op (Layer::device_op) trains on the host engine, and the run start says so in one line naming
// the layer; a network the device can run goes to the device engine. The device here is a stand-in
// that counts the engines asked of it, so the test needs no GPU.
// The engine's headers come before Qt's: core/train/trainer.h declares a member named emit(),
// which Qt's `emit` keyword macro would otherwise erase.
#include "core/backend/cpu/cpu_backend.h"
#include "core/engine/device_steps.h"
#include "core/common/error.h"
#include "core/nn/linear.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "tests/nn/host_only_layer.h"

#include <QtTest/QtTest>

using namespace mpwb;

namespace {

// The CPU backend, offering a device engine it never delivers (through the device engines' entry).
class StandInDevice final : public CpuBackend {
public:
    StandInDevice() {
        current = this;
        set_device_engine_entry_for_tests(&entry);
    }
    ~StandInDevice() override {
        set_device_engine_entry_for_tests(nullptr);
        current = nullptr;
    }
    std::string name() const override { return "stand-in"; }
    int engines_asked = 0;

private:
    static inline StandInDevice* current = nullptr;
    static bool runs_on(const Backend& backend) { return &backend == current; }
    static std::unique_ptr<StepEngine> make(Backend&, Network&, const Dataset&, const StepEngineConfig&) {
        ++current->engines_asked;
        throw Error("the stand-in device has no engine");
    }
    const CudaEngineEntryV1 entry{&runs_on, &make};
};

class StartRecorder final : public TrainingObserver {
public:
    void on_run_start(const RunStartInfo& info) override { start = info; }
    void on_step(const StepMetrics&) override { ++steps; }
    RunStartInfo start;
    int steps = 0;
};

struct Spiral {
    Preset preset = load_preset("spiral-mlp");
    Dataset data = load_dataset(preset.training.dataset);
};

RunSummary train(Network& net, const Spiral& spiral, StandInDevice& device, StartRecorder& recorder,
                 PrecisionKind precision = PrecisionKind::FP32, int accumulator_bits = 0) {
    TrainConfig config = spiral.preset.training;
    config.max_steps = 5;
    config.precision = precision;
    config.recipe.accumulator_bits = accumulator_bits;
    Trainer trainer(net, spiral.data, config, device);
    trainer.add_observer(&recorder);
    return trainer.run();
}

}  // namespace

class TestDeviceFallback : public QObject {
    Q_OBJECT

private slots:
    void aLayerWithoutADeviceOpTrainsOnTheHostEngine() {
        const Spiral spiral;
        std::vector<std::unique_ptr<Layer>> layers;
        layers.push_back(std::make_unique<Linear>(16));
        layers.push_back(std::make_unique<test::HostOnlyLayer>());
        layers.push_back(std::make_unique<Linear>(spiral.data.num_classes));
        Network net = Network::from_layers(std::move(layers));
        StandInDevice device;
        StartRecorder recorder;
        const RunSummary summary = train(net, spiral, device, recorder);
        QCOMPARE(summary.status, RunStatus::Finished);
        QCOMPARE(recorder.steps, 5);
        QCOMPARE(device.engines_asked, 0);
        QCOMPARE(recorder.start.backend, std::string("cpu"));
        QVERIFY2(recorder.start.device.find("(the CUDA engine has no op for layer 1 (HostOnly): it trains on "
                                            "the host engine)") != std::string::npos,
                 recorder.start.device.c_str());
    }

    // The control: a network of registered kinds goes to the device engine.
    void aNetworkTheDeviceRunsGoesToIt() {
        const Spiral spiral;
        Network net = Network::from_json(spiral.preset.network);
        StandInDevice device;
        StartRecorder recorder;
        const RunSummary summary = train(net, spiral, device, recorder);
        QCOMPARE(device.engines_asked, 1);
        QCOMPARE(summary.status, RunStatus::Failed);
        QCOMPARE(recorder.start.backend, std::string("stand-in"));
    }

    // Per-tensor FP8 on an MLP goes to the device engine (its FP8 tensor cores) when asked for:
    // the path has not yet passed its selftest on a GPU ...
    void perTensorFp8OnAnMlpGoesToTheDevice() {
        qputenv("MPWB_CUDA_FP8", "1");
        for (PrecisionKind p : {PrecisionKind::Fp8Delayed, PrecisionKind::Fp8Current}) {
            const Spiral spiral;
            Network net = Network::from_json(spiral.preset.network);
            StandInDevice device;
            StartRecorder recorder;
            train(net, spiral, device, recorder, p);
            QCOMPARE(device.engines_asked, 1);
            QCOMPARE(recorder.start.backend, std::string("stand-in"));
        }
        qunsetenv("MPWB_CUDA_FP8");
        const Spiral spiral;
        Network net = Network::from_json(spiral.preset.network);
        StandInDevice device;
        StartRecorder recorder;
        train(net, spiral, device, recorder, PrecisionKind::Fp8Delayed);
        QCOMPARE(device.engines_asked, 0);
        QVERIFY2(recorder.start.device.find("MPWB_CUDA_FP8=1") != std::string::npos,
                 recorder.start.device.c_str());
    }

    // ... while a recipe or a setting the device has no path for trains on the host, saying why.
    void otherScaledRecipesTrainOnTheHostEngine() {
        const Spiral spiral;
        struct Case {
            PrecisionKind precision;
            int accumulator_bits;
            const char* reason;
        };
        const Case cases[] = {
            {PrecisionKind::MxFp8, 0, "runs the scaled recipes fp8-delayed and fp8-current only"},
            {PrecisionKind::MxFp4, 0, "runs the scaled recipes fp8-delayed and fp8-current only"},
            {PrecisionKind::Fp8Delayed, 8, "no emulation of a narrow accumulator (accumulator_bits 8)"}};
        qputenv("MPWB_CUDA_FP8", "1");
        for (const Case& c : cases) {
            Network net = Network::from_json(spiral.preset.network);
            StandInDevice device;
            StartRecorder recorder;
            const RunSummary summary = train(net, spiral, device, recorder, c.precision, c.accumulator_bits);
            QCOMPARE(summary.status, RunStatus::Finished);
            QCOMPARE(device.engines_asked, 0);
            QCOMPARE(recorder.start.backend, std::string("cpu"));
            QVERIFY2(recorder.start.device.find(c.reason) != std::string::npos,
                     recorder.start.device.c_str());
            QVERIFY2(recorder.start.device.find("it trains on the host engine") != std::string::npos,
                     recorder.start.device.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestDeviceFallback)
#include "test_device_fallback.moc"
