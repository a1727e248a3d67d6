// The safety net of the step-loop refactor (issue 13): every preset the app ships for training
// (spiral-mlp, fashion-mlp on 2,000 images, fashion-cnn on 500) under every precision policy,
// 200 CPU steps each, must reproduce the recorded trajectory bit for bit: each step's loss, loss
// scale, skip decision and retries, each evaluation, the gradient statistics taken every 20
// steps, the events, and a hash of the final weights.
//
// The record lives in tests/train/golden_trajectories.json. OpenBLAS picks its GEMM kernels by
// CPU model, and different kernels sum in a different order, so CTest pins them with
// OPENBLAS_CORETYPE=Haswell (any x86-64 CPU with AVX2 and FMA runs them); a CPU without those
// SKIPs with the reason. To record again after an intended change of numerics:
//   MPWB_GOLDEN_RECORD=tests/train/golden_trajectories.json build/tests/train/test_golden_trajectories
// The engine's headers come before Qt's (core/train/trainer.h declares a member named emit()).
#include "core/backend/backend.h"
#include "core/backend/cpu/blas_kernel.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "tests/train/first_rows.h"

#include <QtTest/QtTest>

#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

using namespace mpwb;
using mpwb::test::first_rows;

namespace {

constexpr int64_t kSteps = 200;
const char* const kGoldenFile = MPWB_SOURCE_DIR "/tests/train/golden_trajectories.json";

std::string hex(uint64_t bits) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
    return text;
}

// One line per step: loss bits, scale bits, skipped, retries.
class TrajectoryRecorder final : public TrainingObserver {
public:
    void on_step(const StepMetrics& m) override {
        steps.push_back(hex(std::bit_cast<uint64_t>(m.loss)) + " " +
                        hex(std::bit_cast<uint32_t>(m.loss_scale)) + (m.skipped ? " skip " : " apply ") +
                        std::to_string(m.retries));
    }
    void on_eval(const EvalMetrics& m) override {
        evals.push_back(std::to_string(m.step) + " " + hex(std::bit_cast<uint64_t>(m.test_loss)) + " " +
                        hex(std::bit_cast<uint64_t>(m.test_accuracy)));
    }
    // Gradient statistics: when, of what, and a hash of the histogram's bins.
    void on_gradient_stats(const GradientStatsRecord& r) override {
        uint64_t h = 0;
        for (uint64_t count : r.histogram.bins) h = h * 1000003ull + count;
        stats.push_back(std::to_string(r.step) + " " + r.layer_label + " " + r.parameter + " " +
                        std::to_string(int(r.kind)) + " " + hex(h) + " " +
                        hex(std::bit_cast<uint32_t>(r.loss_scale)));
    }
    void on_event(const TrainingEvent& e) override {
        events.push_back(std::to_string(e.step) + " " + e.kind + " " + e.source);
    }
    std::vector<std::string> steps, evals, stats, events;
};

// FNV-1a over every parameter's name and FP32 value bytes.
std::string weights_hash(const Network& network) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](const void* data, size_t size) {
        for (size_t i = 0; i < size; ++i)
            h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
    };
    for (const Parameter* p : network.parameters()) {
        mix(p->name.data(), p->name.size());
        mix(p->value.data(), static_cast<size_t>(p->value.numel()) * sizeof(float));
    }
    return hex(h);
}

struct Case {
    const char* preset;
    int64_t train_images;  // 0: the whole (synthetic) set
};
const Case kCases[] = {{"spiral-mlp", 0}, {"fashion-mlp", 2000}, {"fashion-cnn", 500}};
const PrecisionKind kPolicies[] = {PrecisionKind::FP32, PrecisionKind::TF32, PrecisionKind::FP16Mixed,
                                   PrecisionKind::BF16Mixed, PrecisionKind::FP16Pure};

nlohmann::json run_case(const Preset& preset, const Dataset& data, PrecisionKind policy) {
    TrainConfig config = preset.training;
    config.precision = policy;
    config.max_steps = kSteps;
    config.threads = 2;
    config.stats_every = 20;
    auto backend = make_cpu_backend();
    Network network = Network::from_json(preset.network);
    Trainer trainer(network, data, config, *backend);
    TrajectoryRecorder recorder;
    trainer.add_observer(&recorder);
    const RunSummary summary = trainer.run();
    if (summary.status != RunStatus::Finished) throw std::runtime_error("run ended " + summary.error);
    return {{"steps", recorder.steps},
            {"evals", recorder.evals},
            {"stats", recorder.stats},
            {"events", recorder.events},
            {"weights", weights_hash(network)}};
}

// The first difference between two trajectories, in words.
QString first_difference(const nlohmann::json& want, const nlohmann::json& got) {
    for (const char* part : {"steps", "evals", "stats", "events"}) {
        const auto& a = want.at(part);
        const auto& b = got.at(part);
        for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
            if (a[i] != b[i])
                return QString("%1[%2]: recorded '%3', now '%4'")
                    .arg(part)
                    .arg(i)
                    .arg(QString::fromStdString(a[i].get<std::string>()),
                         QString::fromStdString(b[i].get<std::string>()));
        if (a.size() != b.size())
            return QString("%1: %2 recorded, %3 now").arg(part).arg(a.size()).arg(b.size());
    }
    return QString("final weights hash: recorded %1, now %2")
        .arg(QString::fromStdString(want.at("weights").get<std::string>()),
             QString::fromStdString(got.at("weights").get<std::string>()));
}

}  // namespace

class TestGoldenTrajectories : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (blas_core_name() != "Haswell")
            QSKIP(qPrintable(
                "the trajectories were recorded with OpenBLAS's Haswell kernels; this process has '" +
                QString::fromStdString(blas_core_name()) +
                "' (set OPENBLAS_CORETYPE=Haswell on a CPU with AVX2 and FMA, as CTest does)"));
        if (const char* path = std::getenv("MPWB_GOLDEN_RECORD")) {
            record_path_ = path;
            return;
        }
        std::ifstream in(kGoldenFile);
        QVERIFY2(in, kGoldenFile);
        golden_ = nlohmann::json::parse(in);
    }

    void trajectories_are_unchanged_data() {
        QTest::addColumn<int>("case_index");
        QTest::addColumn<int>("policy");
        for (int c = 0; c < int(std::size(kCases)); ++c)
            for (PrecisionKind p : kPolicies)
                QTest::newRow((std::string(kCases[c].preset) + "/" + precision_name(p)).c_str())
                    << c << int(p);
    }

    void trajectories_are_unchanged() {
        QFETCH(int, case_index);
        QFETCH(int, policy);
        const Case& c = kCases[case_index];
        const Preset& preset = preset_for(c);
        if (preset.training.dataset.kind == "fashion-mnist" && !QFileInfo::exists(kDefaultFashionMnistPath))
            QSKIP(
                "Fashion-MNIST is not installed at /usr/share/datasets/fashion-mnist (Debian package "
                "dataset-fashion-mnist)");
        const std::string key = std::string(c.preset) + "/" + precision_name(PrecisionKind(policy));
        const nlohmann::json got = run_case(preset, dataset_for(c), PrecisionKind(policy));
        QCOMPARE(got.at("steps").size(), size_t(kSteps));
        if (!record_path_.empty()) {
            recorded_[key] = got;
            return;
        }
        QVERIFY2(golden_.contains(key), ("no recorded trajectory for " + key).c_str());
        const nlohmann::json& want = golden_.at(key);
        QVERIFY2(want == got, qPrintable(QString::fromStdString(key) + ": " + first_difference(want, got)));
    }

    void cleanupTestCase() {
        if (record_path_.empty()) return;
        std::ofstream out(record_path_);
        out << recorded_.dump(1) << "\n";
        QVERIFY2(out.good(), record_path_.c_str());
        std::printf("recorded %zu trajectories in %s\n", recorded_.size(), record_path_.c_str());
    }

private:
    const Preset& preset_for(const Case& c) {
        auto [it, fresh] = presets_.try_emplace(c.preset);
        if (fresh) it->second = load_preset(c.preset);
        return it->second;
    }
    const Dataset& dataset_for(const Case& c) {
        auto [it, fresh] = datasets_.try_emplace(c.preset);
        if (fresh) {
            Dataset data = load_dataset(preset_for(c).training.dataset);
            if (c.train_images > 0) {
                data.train_x = first_rows(data.train_x, c.train_images);
                data.train_y = first_rows(data.train_y, c.train_images);
                data.test_x = first_rows(data.test_x, c.train_images / 4);
                data.test_y = first_rows(data.test_y, c.train_images / 4);
            }
            it->second = std::move(data);
        }
        return it->second;
    }

    nlohmann::json golden_;
    nlohmann::json recorded_ = nlohmann::json::object();
    std::string record_path_;
    std::map<std::string, Preset> presets_;
    std::map<std::string, Dataset> datasets_;
};

QTEST_GUILESS_MAIN(TestGoldenTrajectories)
#include "test_golden_trajectories.moc"
