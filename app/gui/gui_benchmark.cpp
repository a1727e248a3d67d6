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
#include "core/backend/default_backend.h"
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

// The headless side trains on the backend the window's runs get (make_default_backend: the GPU
// when the CUDA module loads and a device answers), so the ratio measures the window, not a
// CPU against a GPU.
Figures headless_run(const nlohmann::json& network, const TrainConfig& config, const std::string& db) {
    const Dataset data = load_dataset(config.dataset);
    Network net = Network::from_json(network);
    std::string why_not_gpu;
    auto backend = make_default_backend(&why_not_gpu);
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

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Shows the window and waits (5 s at most) for its first expose; the seconds since process start
// then, or -1.
double show_and_time_startup(MainWindow& window) {
    double startup = -1;
    QEventLoop expose_loop;
    QObject::connect(&window, &MainWindow::firstExposed, &expose_loop, [&] {
        startup = seconds_since_process_start();
        expose_loop.quit();
    });
    window.show();
    QTimer::singleShot(5000, &expose_loop, &QEventLoop::quit);
    if (startup < 0) expose_loop.exec();
    return startup;
}

// GUI-thread time in replots, from QCustomPlot's own before/after signals.
class ReplotClock {
public:
    explicit ReplotClock(MainWindow& window) {
        clock_.start();
        for (auto* plot : window.findChildren<QCustomPlot*>()) {
            QObject::connect(plot, &QCustomPlot::beforeReplot,
                             [this, plot] { start_[plot] = clock_.nsecsElapsed(); });
            QObject::connect(plot, &QCustomPlot::afterReplot, [this, plot] {
                seconds += static_cast<double>(clock_.nsecsElapsed() - start_[plot]) * 1e-9;
                ++replots;
            });
        }
    }
    double seconds = 0;
    int replots = 0;

private:
    QElapsedTimer clock_;
    std::map<QCustomPlot*, qint64> start_;
};

// What the rounds of headless then GUI runs measured.
struct Rounds {
    std::vector<double> headless_sps, gui_sps;
    nlohmann::json list = nlohmann::json::array();
    double stall_ms = 0, mean_gap = 0;
    nlohmann::json slowest_events;  // of the round with the worst stall
    Figures headless, gui;          // the last round's
    double gui_cpu = 0, gui_wall = 0;
};

// The benchmark's window, its preset's network and settings, and the run ends it reports.
class GuiBenchmark {
public:
    GuiBenchmark(const GuiBenchmarkOptions& options, const std::string& db) : options_(options), db_(db) {}

    int run() {
        MainWindow::Options wo;
        wo.db_path = db_;
        wo.preset = options_.preset;
        wo.restore_layout = false;
        MainWindow window(wo);
        window_ = &window;
        const double shown_at = seconds_since_process_start();
        const double startup = show_and_time_startup(window);
        setUp();
        auto collect = QObject::connect(window.controller(), &TrainingController::updates,
                                        [this](const std::vector<RunUpdate>& us) {
                                            for (const auto& u : us)
                                                if (u.end) ends_[u.slot] = *u.end;
                                        });
        ReplotClock replots(window);
        // A first, uncounted headless run warms the file cache.
        headless_run(network_, config_, db_);
        const double update_before = window.updateSeconds();
        const Rounds r = runRounds();
        nlohmann::json out = throughputJson(r, replots, window.updateSeconds() - update_before);
        out["startup_to_first_expose_s"] = startup;
        out["window_show_call_s"] = shown_at;
        if (options_.comparison) out["comparison"] = comparisonJson(r.headless);
        QObject::disconnect(collect);
        std::printf("%s\n", out.dump(2).c_str());
        std::fflush(stdout);
        window.close();
        return 0;
    }

private:
    // The preset with the options' epochs and step limit, through the window's panels.
    void setUp() {
        window_->loadPreset(options_.preset);
        TrainConfig config = window_->currentConfig();
        if (options_.epochs > 0) config.epochs = options_.epochs;
        if (options_.max_steps > 0) config.max_steps = options_.max_steps;
        window_->trainingPanel()->setFromConfig(config);
        config_ = window_->currentConfig();
        network_ = window_->networkEditor()->networkJson();
    }

    // One run in the window; its figures from the run's end.
    Figures guiRun(double* stall, double* gap, nlohmann::json* events) {
        ends_.clear();
        window_->startTraining();
        *stall = run_until_idle(window_->controller(), gap, events);
        Figures g;
        if (!ends_.empty()) {
            const auto& e = ends_.begin()->second;
            g.steps = e.steps;
            g.wall_seconds = e.wall_seconds;
            g.wall_sps =
                static_cast<double>(e.steps) * static_cast<double>(config_.batch_size) / e.wall_seconds;
            g.train_sps = e.samples_per_second;
        }
        return g;
    }

    // Rounds of headless then GUI, back to back, so a slow patch of a shared machine hits both
    // sides alike.
    Rounds runRounds() {
        Rounds r;
        const int rounds = std::max(1, options_.repeats);
        for (int round = 0; round < rounds; ++round) {
            const Figures h = headless_run(network_, config_, db_);
            const double cpu_before = gui_thread_cpu_seconds();
            double stall = 0, gap = 0;
            nlohmann::json events;
            const Figures g = guiRun(&stall, &gap, &events);
            r.gui_cpu += gui_thread_cpu_seconds() - cpu_before;
            r.headless_sps.push_back(h.wall_sps);
            r.gui_sps.push_back(g.wall_sps);
            r.list.push_back({{"headless_samples_per_s", h.wall_sps},
                              {"gui_samples_per_s", g.wall_sps},
                              {"ratio", h.wall_sps > 0 ? g.wall_sps / h.wall_sps : 0},
                              {"worst_event_loop_gap_ms", stall}});
            if (stall >= r.stall_ms) {
                r.stall_ms = stall;
                r.slowest_events = events;
            }
            r.mean_gap += gap / rounds;
            r.headless = h;
            r.gui = g;
            r.gui_wall += g.wall_seconds;
        }
        return r;
    }

    nlohmann::json throughputJson(const Rounds& r, const ReplotClock& replots, double update_seconds) const {
        const double headless_median = median(r.headless_sps), gui_median = median(r.gui_sps);
        std::vector<double> ratios;
        for (size_t i = 0; i < r.gui_sps.size(); ++i)
            if (r.headless_sps[i] > 0) ratios.push_back(r.gui_sps[i] / r.headless_sps[i]);
        const int plotted = window_->plots()->lossPlot()->pointCount(0, SeriesPlot::Curve::Train);
        nlohmann::json out;
        out["preset"] = options_.preset.toStdString();
        out["steps"] = r.headless.steps;
        out["batch"] = config_.batch_size;
        out["threads_headless"] =
            config_.threads == 0 ? static_cast<int>(std::thread::hardware_concurrency()) : config_.threads;
        std::string why_not_gpu;
        const auto backend = make_default_backend(&why_not_gpu);
        out["backend"] = backend->name();
        out["device"] = backend->device_name();
        if (backend->name() != "cuda") out["why_not_gpu"] = why_not_gpu;
        out["rounds"] = r.list;
        out["headless"] = {{"median_samples_per_s", headless_median},
                           {"wall_s_last", r.headless.wall_seconds}};
        out["gui"] = {{"median_samples_per_s", gui_median},
                      {"wall_s_last", r.gui.wall_seconds},
                      {"plotted_points", plotted},
                      {"worst_event_loop_gap_ms", r.stall_ms},
                      {"gui_thread_cpu_share", r.gui_wall > 0 ? r.gui_cpu / r.gui_wall : 0},
                      {"mean_event_loop_gap_ms", r.mean_gap},
                      {"slowest_events_of_worst_round", r.slowest_events},
                      {"gui_thread_update_s", update_seconds},
                      {"gui_thread_replot_s", replots.seconds},
                      {"replots", replots.replots}};
        // Each GUI run against the headless run just before it (the machine's speed drifts
        // between rounds on a shared VM): the median of these paired ratios is the figure.
        out["gui_vs_headless"] = median(ratios);
        out["gui_median_vs_headless_median"] = headless_median > 0 ? gui_median / headless_median : 0;
        return out;
    }

    // FP32 vs FP16 mixed in the window's comparison, each side against its headless run.
    nlohmann::json comparisonJson(const Figures& headless) {
        TrainConfig mixed = config_;
        mixed.precision = PrecisionKind::FP16Mixed;
        const Figures headless_mixed = headless_run(network_, mixed, db_);
        ends_.clear();
        QElapsedTimer both;
        both.start();
        window_->startComparison();
        double cmp_mean = 0;
        nlohmann::json cmp_events;
        const double cmp_stall = run_until_idle(window_->controller(), &cmp_mean, &cmp_events);
        nlohmann::json cmp;
        cmp["wall_s_both"] = static_cast<double>(both.elapsed()) * 1e-3;
        cmp["worst_event_loop_gap_ms"] = cmp_stall;
        cmp["slowest_events"] = cmp_events;
        cmp["handovers"] = window_->controller()->gate_handovers();
        auto side = [&](int slot, const Figures& ref) {
            nlohmann::json j;
            if (!ends_.count(slot)) return j;
            const auto& e = ends_[slot];
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
        return cmp;
    }

    const GuiBenchmarkOptions& options_;
    const std::string db_;
    MainWindow* window_ = nullptr;  // while run() runs
    TrainConfig config_;
    nlohmann::json network_;
    std::map<int, RunSummary> ends_;  // by slot, of the window's last launch
};

}  // namespace

int run_gui_benchmark(const GuiBenchmarkOptions& options) {
    QTemporaryDir tmp;
    const std::string db = options.db_path.isEmpty()
                               ? (tmp.path() + QStringLiteral("/bench.sqlite")).toStdString()
                               : options.db_path.toStdString();
    return GuiBenchmark(options, db).run();
}

}  // namespace mpwb
