// `mpwb --benchmark` (app/gui/gui_benchmark.h) on the backend a window's run gets: its headless
// runs and its window runs are recorded with the backend make_default_backend picks, and the JSON
// names that backend, its device and, on the CPU, why not the GPU. On a GPU machine the headless
// side once trained on the CPU while the window trained on the GPU, so the ratio compared the two.
#include <QTemporaryDir>
#include <QTemporaryFile>
#include <QtTest>

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "app/gui/gui_benchmark.h"
#include "core/backend/default_backend.h"
#include "sessions/run_store.h"

using namespace mpwb;

namespace {

// Runs the benchmark with its stdout captured; the exit status and the text from the JSON object's
// first line on (Qt Test's own lines, its QWARN ones, share stdout).
int run_captured(const GuiBenchmarkOptions& options, QByteArray* printed) {
    QTemporaryFile capture;
    if (!capture.open()) qFatal("cannot open a temporary file for the benchmark's output");
    std::fflush(stdout);
    const int saved = dup(STDOUT_FILENO);
    dup2(capture.handle(), STDOUT_FILENO);
    const int status = run_gui_benchmark(options);
    std::fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    capture.seek(0);
    *printed = capture.readAll();
    const qsizetype start = printed->startsWith('{') ? 0 : printed->indexOf("\n{");
    if (start > 0) printed->remove(0, start + 1);
    return status;
}

}  // namespace

class TestGuiBenchmark : public QObject {
    Q_OBJECT

private slots:
    void bothSidesTrainOnTheWindowsBackend() {
        QTemporaryDir dir;
        GuiBenchmarkOptions options;
        options.max_steps = 20;
        options.repeats = 1;
        options.db_path = dir.filePath(QStringLiteral("bench.sqlite"));
        QByteArray printed;
        QCOMPARE(run_captured(options, &printed), 0);
        const auto doc = nlohmann::json::parse(printed.toStdString(), nullptr, false);
        QVERIFY2(doc.is_object(), printed.constData());

        std::string why_not_gpu;
        const auto expected = make_default_backend(&why_not_gpu);
        QCOMPARE(QString::fromStdString(doc.value("backend", "")), QString::fromStdString(expected->name()));
        QCOMPARE(QString::fromStdString(doc.value("device", "")),
                 QString::fromStdString(expected->device_name()));
        if (expected->name() != "cuda")
            QCOMPARE(QString::fromStdString(doc.value("why_not_gpu", "")),
                     QString::fromStdString(why_not_gpu));
        QVERIFY2(doc.contains("comparison") && doc["comparison"].contains("fp16-mixed"), printed.constData());

        // Warm-up, one round of headless then window, the comparison's headless FP16 run and its
        // two window runs: every one on the same backend.
        RunStore store(options.db_path.toStdString());
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), size_t{6});
        int headless = 0;
        for (const auto& run : runs) {
            QCOMPARE(QString::fromStdString(run.backend), QString::fromStdString(expected->name()));
            headless += run.name == "benchmark headless";
        }
        QCOMPARE(headless, 3);
    }
};

QTEST_MAIN(TestGuiBenchmark)
#include "test_gui_benchmark.moc"
