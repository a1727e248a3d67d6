// The GUI benchmark: headless vs live-plotted throughput, comparison throughput, event-loop stall
// and startup time, measured in this process and printed as one JSON object.
#include "app/gui/gui_benchmark.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>
#include <nlohmann/json.hpp>

#include "app/gui/main_window.h"
#include "app/gui/plot_board.h"
#include "app/gui/startup_clock.h"
#include "app/gui/workbench_application.h"
#include "core/backend/backend.h"
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

// CPU time of the calling thread (the GUI thread), for its share of a core during training.
double gui_thread_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Runs the event loop until the controller is idle, timing a 5 ms timer's worst gap and the
// slowest event deliveries (which tell a long handler from a thread that was not scheduled).
double run_until_idle(TrainingController* controller, double* mean_gap_ms, nlohmann::json* slowest_events) {
    auto* app = dynamic_cast<WorkbenchApplication*>(QCoreApplication::instance());
    if (app) app->startTiming(5);
    QElapsedTimer clock;
    clock.start();
    qint64 last = clock.nsecsElapsed(), worst = 0, sum = 0, count = 0;
    QTimer probe;
    probe.setObjectName(QStringLiteral("stallProbe"));
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
    if (app) {
        *slowest_events = nlohmann::json::array();
        for (const auto& e : app->slowest())
            slowest_events->push_back({{"ms", e.ms}, {"cpu_ms", e.cpu_ms}, {"event", e.what.toStdString()}});
        if (std::getenv("MPWB_BENCH_DEBUG")) {
            int shown = 0;
            for (const auto& e : app->totals())
                if (shown++ < 12)
                    std::fprintf(stderr, "total %8.1f ms %5d x  %s\n", e.ms, e.count, qPrintable(e.what));
        }
        app->stopTiming();
    }
    *mean_gap_ms = count ? static_cast<double>(sum) / static_cast<double>(count) * 1e-6 : 0;
    return static_cast<double>(worst) * 1e-6;
}

}  // namespace

int run_gui_benchmark(const GuiBenchmarkOptions& options) {
    QTemporaryDir tmp;
    const std::string db = options.db_path.isEmpty()
                               ? (tmp.path() + QStringLiteral("/bench.sqlite")).toStdString()
                               : options.db_path.toStdString();

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

    std::map<int, RunSummary> ends;  // by slot, of the window's last launch
    auto collect = QObject::connect(window.controller(), &TrainingController::updates,
                                    [&](const std::vector<RunUpdate>& us) {
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
        QObject::connect(plot, &QCustomPlot::beforeReplot,
                         [&, plot] { replot_start[plot] = replot_clock.nsecsElapsed(); });
        QObject::connect(plot, &QCustomPlot::afterReplot, [&, plot] {
            replot_seconds += static_cast<double>(replot_clock.nsecsElapsed() - replot_start[plot]) * 1e-9;
            ++replots;
        });
    }

    // Rounds of headless then GUI, back to back, so a slow patch of a shared machine hits both
    // sides alike. A first, uncounted headless run warms the file cache.
    headless_run(network, config, db);
    const int rounds = std::max(1, options.repeats);
    std::vector<double> headless_sps, gui_sps;
    nlohmann::json round_list = nlohmann::json::array();
    double stall_ms = 0, mean_gap = 0;
    nlohmann::json slowest_events;
    const double update_before = window.updateSeconds();
    const double replot_before = replot_seconds;
    const int replots_before = replots;
    Figures headless, gui;
    double gui_cpu = 0, gui_wall = 0;
    for (int round = 0; round < rounds; ++round) {
        const Figures h = headless_run(network, config, db);
        ends.clear();
        const double cpu_before = gui_thread_cpu_seconds();
        window.startTraining();
        double gap = 0;
        nlohmann::json events;
        const double stall = run_until_idle(window.controller(), &gap, &events);
        gui_cpu += gui_thread_cpu_seconds() - cpu_before;
        Figures g;
        if (!ends.empty()) {
            const auto& e = ends.begin()->second;
            g.steps = e.steps;
            g.wall_seconds = e.wall_seconds;
            g.wall_sps =
                static_cast<double>(e.steps) * static_cast<double>(config.batch_size) / e.wall_seconds;
            g.train_sps = e.samples_per_second;
        }
        headless_sps.push_back(h.wall_sps);
        gui_sps.push_back(g.wall_sps);
        round_list.push_back({{"headless_samples_per_s", h.wall_sps},
                              {"gui_samples_per_s", g.wall_sps},
                              {"ratio", h.wall_sps > 0 ? g.wall_sps / h.wall_sps : 0},
                              {"worst_event_loop_gap_ms", stall}});
        if (stall >= stall_ms) {
            stall_ms = stall;
            slowest_events = events;
        }
        mean_gap += gap / rounds;
        headless = h;
        gui = g;
        gui_wall += g.wall_seconds;
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        const size_t n = v.size();
        return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    };
    const double headless_median = median(headless_sps), gui_median = median(gui_sps);
    std::vector<double> ratios;
    for (size_t i = 0; i < gui_sps.size(); ++i)
        if (headless_sps[i] > 0) ratios.push_back(gui_sps[i] / headless_sps[i]);
    const int plotted = window.plots()->lossPlot()->pointCount(0, SeriesPlot::Curve::Train);

    nlohmann::json out;
    out["preset"] = options.preset.toStdString();
    out["steps"] = headless.steps;
    out["batch"] = config.batch_size;
    out["threads_headless"] =
        config.threads == 0 ? static_cast<int>(std::thread::hardware_concurrency()) : config.threads;
    out["device"] = make_cpu_backend()->device_name();
    out["startup_to_first_expose_s"] = startup;
    out["window_show_call_s"] = shown_at;
    out["rounds"] = round_list;
    out["headless"] = {{"median_samples_per_s", headless_median}, {"wall_s_last", headless.wall_seconds}};
    out["gui"] = {{"median_samples_per_s", gui_median},
                  {"wall_s_last", gui.wall_seconds},
                  {"plotted_points", plotted},
                  {"worst_event_loop_gap_ms", stall_ms},
                  {"gui_thread_cpu_share", gui_wall > 0 ? gui_cpu / gui_wall : 0},
                  {"mean_event_loop_gap_ms", mean_gap},
                  {"slowest_events_of_worst_round", slowest_events},
                  {"gui_thread_update_s", window.updateSeconds() - update_before},
                  {"gui_thread_replot_s", replot_seconds - replot_before},
                  {"replots", replots - replots_before}};
    // Each GUI run against the headless run just before it (the machine's speed drifts between
    // rounds on a shared VM): the median of these paired ratios is the figure.
    out["gui_vs_headless"] = median(ratios);
    out["gui_median_vs_headless_median"] = headless_median > 0 ? gui_median / headless_median : 0;

    if (options.comparison) {
        TrainConfig mixed = config;
        mixed.precision = PrecisionKind::FP16Mixed;
        const Figures headless_mixed = headless_run(network, mixed, db);
        ends.clear();
        QElapsedTimer both;
        both.start();
        window.startComparison();
        double cmp_mean = 0;
        nlohmann::json cmp_events;
        const double cmp_stall = run_until_idle(window.controller(), &cmp_mean, &cmp_events);
        nlohmann::json cmp;
        cmp["wall_s_both"] = static_cast<double>(both.elapsed()) * 1e-3;
        cmp["worst_event_loop_gap_ms"] = cmp_stall;
        cmp["slowest_events"] = cmp_events;
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
