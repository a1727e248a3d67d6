// `mpwb --benchmark`: the workbench's own performance figures, printed as JSON.
//   throughput  the same run headless (Trainer + RunRecorder, no GUI, all cores, the backend the
//               window picks: the GPU when one answers) and in the main
//               window with live plots, in alternating rounds; the median of the paired ratios
//               (each GUI run over the headless run before it) should be >= 0.95
//   comparison  FP32 vs mixed in alternating chunks: each side's samples/s against its headless run
//   stall       the longest gap of a 5 ms QTimer on the GUI thread while training (target <= 50 ms)
//   startup     process start to the first expose of the main window (target <= 1 s)
#pragma once
#include <QStringList>

namespace mpwb {

struct GuiBenchmarkOptions {
    QString preset = QStringLiteral("spiral-mlp");
    long long epochs = 0;     // 0: the preset's
    long long max_steps = 0;  // 0: all epochs
    int repeats = 3;          // rounds of a headless run then a GUI run
    bool comparison = true;
    QString db_path;  // empty: a temporary database
};

// Runs the benchmark in the running QApplication and prints one JSON object on stdout.
// startup_seconds: the main window's time to first expose, measured by the caller (or < 0).
int run_gui_benchmark(const GuiBenchmarkOptions& options);

}  // namespace mpwb
