// The device engine's entry (core/engine/device_steps.h): a CPU backend keeps no steps on a
// device, asking does not load the CUDA module, and once the module is loaded its second entry
// point is found by name and tells its own backends from others. Loading the module needs no
// GPU; only a machine with one gets a CUDA backend to ask about.
#include <QtTest>

#include <stdexcept>

#include "core/backend/default_backend.h"
#include "core/engine/device_steps.h"

using namespace mpwb;

class TestDeviceSteps : public QObject {
    Q_OBJECT
private slots:
    // First: nothing in this process has loaded the module yet.
    void askingDoesNotLoadTheModule() {
        auto cpu = make_cpu_backend();
        QVERIFY(!has_device_steps(*cpu));
        QVERIFY(cuda_module_symbol(MPWB_CUDA_MODULE_ENTRY) == nullptr);
        QVERIFY(cuda_module_symbol(MPWB_CUDA_ENGINE_ENTRY) == nullptr);
    }

    void aCpuBackendGetsNoDeviceEngine() {
        auto cpu = make_cpu_backend();
        Network network;
        Dataset data;
        QVERIFY_THROWS_EXCEPTION(std::logic_error, make_device_step_engine(*cpu, network, data, {}));
    }

    void theLoadedModuleOffersTheEngineEntry() {
#ifndef MPWB_TEST_CUDA_MODULE
        QSKIP("this build has no CUDA module");
#else
        qputenv("MPWB_CUDA_MODULE", MPWB_TEST_CUDA_MODULE);
        std::string why_not;
        auto cuda = make_cuda_backend(&why_not);
        if (!cuda_module_symbol(MPWB_CUDA_MODULE_ENTRY))
            QSKIP(qPrintable(QStringLiteral("the module does not load here: ") +
                             QString::fromStdString(why_not)));
        QVERIFY(cuda_module_symbol(MPWB_CUDA_ENGINE_ENTRY) != nullptr);
        QVERIFY(!has_device_steps(*make_cpu_backend()));
        if (cuda) QVERIFY(has_device_steps(*cuda));  // a machine with a GPU
#endif
    }
};

QTEST_GUILESS_MAIN(TestDeviceSteps)
#include "test_device_steps.moc"
