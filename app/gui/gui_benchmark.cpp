// The GUI benchmark: headless vs live-plotted throughput, comparison throughput, event-loop stall
// and startup time, measured in this process and printed as one JSON object.
#include "app/gui/gui_benchmark.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "app/gui/main_window.h"
#include "app/gui/plot_board.h"
#include "app/gui/startup_clock.h"
#include "core/backend/backend.h"
#include "core/common/parallel.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"
#include "resources/presets.h"
#include "sessions/run_recorder.h"
#include "widgets/network_editor.h"
#include "widgets/plots/series_plot.h"
#include "widgets/training_settings_panel.h"

namespace mpwb {
namespace {

struct Figures {
    double wall_sps = 0;   // trained samples / the run's wall time (what the user waits for)
    double train_sps = 0;  // the trainer's own samples/s over its step time
    double wall_seconds = 0;
    int64_t steps = 0;
};

Figures headless_run(const nlohmann::json& network, const TrainConfig& config, const std::string& db) {
    const Dataset data = load_dataset(config.dataset);
    Network net = Network::from_json(network);
    auto backend = make_cpu_backend();
    RunRecorder::Options ro;
    ro.db_path = db;
    ro.name = "benchmark headless";
    RunRecorder recorder(ro);
    Trainer trainer(net, data, config, *backend);
    trainer.add_observer(&recorder);
    const RunSummary s = trainer.run();
    const double samples = static_cast<double>(s.steps) * static_cast<double>(config.batch_size);
    return {samples / s.wall_seconds, s.samples_per_second, s.wall_seconds, s.steps};
}

// Runs the event loop until the controller is idle, timing a 5 ms timer's worst gap.
double run_until_idle(TrainingController* controller, double* mean_gap_ms) {
    QElapsedTimer clock;
    clock.start();
    qint64 last = clock.nsecsElapsed(), worst = 0, sum = 0, count = 0;
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    probe.setInterval(5);
    QObject::connect(&probe, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        if (now - last > worst) {
            worst = now - last;
            if (std::getenv("MPWB_BENCH_DEBUG"))
                std::fprintf(stderr, "gap %.1f ms ending at %.3f s\n", worst * 1e-6, now * 1e-9);
        }
        sum += now - last;
        ++count;
        last = now;
    });
    probe.start();
    QEventLoop loop;
    QObject::connect(controller, &TrainingController::stateChanged, &loop, [&](TrainingController::State s) {
        if (s == TrainingController::State::Idle) loop.quit();
    });
    if (controller->busy()) loop.exec();
    probe.stop();
    *mean_gap_ms = count ? static_cast<double>(sum) / static_cast<double>(count) * 1e-6 : 0;
    return static_cast<double>(worst) * 1e-6;
}

}  // namespace

int run_gui_benchmark(const GuiBenchmarkOptions& options) {
    QTemporaryDir tmp;
    const std::string db =
        options.db_path.isEmpty() ? (tmp.path() + QStringLiteral("/bench.sqlite")).toStdString() : options.db_path.toStdString();

    MainWindow::Options wo;
    wo.db_path = db;
    wo.preset = options.preset;
    wo.restore_layout = false;
    MainWindow window(wo);
    double startup = -1;
    const double shown_at = seconds_since_process_start();
    QEventLoop expose_loop;
    QObject::connect(&window, &MainWindow::firstExposed, &expose_loop, [&] {
        startup = seconds_since_process_start();
        expose_loop.quit();
    });
    window.show();
    QTimer::singleShot(5000, &expose_loop, &QEventLoop::quit);
    if (startup < 0) expose_loop.exec();
    window.loadPreset(options.preset);
    TrainConfig config = window.currentConfig();
    if (options.epochs > 0) config.epochs = options.epochs;
    if (options.max_steps > 0) config.max_steps = options.max_steps;
    window.trainingPanel()->setFromConfig(config);
    config = window.currentConfig();
    const nlohmann::json network = window.networkEditor()->networkJson();

    // Headless first (and the dataset's first load, so the file cache is warm for both sides).
    Figures headless;
    for (int i = 0; i < std::max(1, options.repeats); ++i) {
        const Figures f = headless_run(network, config, db);
        if (f.wall_sps > headless.wall_sps) headless = f;
    }

    // The same run in the window with live plots.
    Figures gui;
    std::map<int, RunSummary> ends;  // by slot
    auto collect = QObject::connect(window.controller(), &TrainingController::updates, [&](const std::vector<RunUpdate>& us) {
        for (const auto& u : us)
            if (u.end) ends[u.slot] = *u.end;
    });
    // GUI-thread time in replots, from QCustomPlot's own before/after signals.
    QElapsedTimer replot_clock;
    replot_clock.start();
    double replot_seconds = 0;
    int replots = 0;
    std::map<QCustomPlot*, qint64> replot_start;
    for (auto* plot : window.findChildren<QCustomPlot*>()) {
        QObject::connect(plot, &QCustomPlot::beforeReplot, [&, plot] { replot_start[plot] = replot_clock.nsecsElapsed(); });
        QObject::connect(plot, &QCustomPlot::afterReplot, [&, plot] {
            replot_seconds += static_cast<double>(replot_clock.nsecsElapsed() - replot_start[plot]) * 1e-9;
            ++replots;
        });
    }
    const double update_before = window.updateSeconds();
    window.startTraining();
    double mean_gap = 0;
    const double stall_ms = run_until_idle(window.controller(), &mean_gap);
    if (!ends.empty()) {
        const auto& s = ends.begin()->second;
        gui.steps = s.steps;
        gui.wall_seconds = s.wall_seconds;
        gui.wall_sps = static_cast<double>(s.steps) * static_cast<double>(config.batch_size) / s.wall_seconds;
        gui.train_sps = s.samples_per_second;
    }
    const int plotted = window.plots()->lossPlot()->pointCount(0, SeriesPlot::Curve::Train);

    nlohmann::json out;
    out["preset"] = options.preset.toStdString();
    out["steps"] = headless.steps;
    out["batch"] = config.batch_size;
    out["threads"] = thread_count();
    out["device"] = make_cpu_backend()->device_name();
    out["startup_to_first_expose_s"] = startup;
    out["window_show_call_s"] = shown_at;
    out["headless"] = {{"wall_samples_per_s", headless.wall_sps}, {"train_samples_per_s", headless.train_sps},
                       {"wall_s", headless.wall_seconds}};
    out["gui"] = {{"wall_samples_per_s", gui.wall_sps}, {"train_samples_per_s", gui.train_sps},
                  {"wall_s", gui.wall_seconds}, {"plotted_points", plotted},
                  {"worst_event_loop_gap_ms", stall_ms}, {"mean_event_loop_gap_ms", mean_gap},
                  {"gui_thread_update_s", window.updateSeconds() - update_before},
                  {"gui_thread_replot_s", replot_seconds}, {"replots", replots}};
    out["gui_vs_headless"] = headless.wall_sps > 0 ? gui.wall_sps / headless.wall_sps : 0;

    if (options.comparison) {
        TrainConfig mixed = config;
        mixed.precision = PrecisionKind::FP16Mixed;
        const Figures headless_mixed = headless_run(network, mixed, db);
        ends.clear();
        QElapsedTimer both;
        both.start();
        window.startComparison();
        double cmp_mean = 0;
        const double cmp_stall = run_until_idle(window.controller(), &cmp_mean);
        nlohmann::json cmp;
        cmp["wall_s_both"] = static_cast<double>(both.elapsed()) * 1e-3;
        cmp["worst_event_loop_gap_ms"] = cmp_stall;
        cmp["handovers"] = window.controller()->gate_handovers();
        auto side = [&](int slot, const Figures& ref) {
            nlohmann::json j;
            if (!ends.count(slot)) return j;
            const auto& e = ends[slot];
            j["train_samples_per_s"] = e.samples_per_second;
            j["headless_train_samples_per_s"] = ref.train_sps;
            j["vs_headless"] = ref.train_sps > 0 ? e.samples_per_second / ref.train_sps : 0;
            j["wall_s"] = e.wall_seconds;
            return j;
        };
        cmp["fp32"] = side(0, headless);
        cmp["fp16-mixed"] = side(1, headless_mixed);
        // Both runs together took this long; one after the other headless they take the sum.
        cmp["headless_sequential_wall_s"] = headless.wall_seconds + headless_mixed.wall_seconds;
        out["comparison"] = cmp;
    }
    QObject::disconnect(collect);
    std::printf("%s\n", out.dump(2).c_str());
    std::fflush(stdout);
    window.close();
    return 0;
}

}  // namespace mpwb
