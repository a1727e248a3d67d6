// mpwb: the MP Workbench desktop app. `mpwb` opens the workbench with a default experiment ready
// to train; `mpwb report ...` writes a comparison report headless; `mpwb --benchmark` prints the
// GUI's performance figures as JSON.
#include <QApplication>
#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QDir>
#include <QIcon>
#include <QStatusBar>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "app/gui/gui_benchmark.h"
#include "app/gui/main_window.h"
#include "app/gui/plot_board.h"
#include "app/gui/run_id_list.h"
#include "app/gui/startup_clock.h"
#include "app/gui/workbench_application.h"
#include "app/report/report.h"
#include "core/backend/cpu/blas_kernel.h"
#include "core/precision/precision_policy.h"
#include "resources/presets.h"
#include "sessions/run_store.h"
#include "widgets/precision_panel.h"
#include "widgets/hparam_view.h"
#include "widgets/run_browser.h"
#include "widgets/training_settings_panel.h"

namespace {
// A command-line value outside its range: said on stderr naming the option, exit status 2.
int option_error(const QString& option, const QString& value, const QString& expected) {
    std::fprintf(stderr, "mpwb: --%s: '%s' %s\n", qPrintable(option), qPrintable(value),
                 qPrintable(expected));
    return 2;
}

// Whole numbers are read with toLongLong, which refuses (ok = false) text beyond int64 instead
// of clamping it.
bool whole_in(const QString& text, qlonglong lo, qlonglong hi, qlonglong* out = nullptr) {
    bool ok = false;
    const qlonglong v = text.trimmed().toLongLong(&ok);
    if (out) *out = v;
    return ok && v >= lo && v <= hi;
}

void set_identity() {
    QApplication::setOrganizationName(QStringLiteral("mpwb"));
    QApplication::setApplicationName(QStringLiteral("MP Workbench"));
    QApplication::setApplicationVersion(QStringLiteral(MPWB_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("io.github.mpwb.Workbench"));
}
}  // namespace

int main(int argc, char** argv) {
    mpwb::ensure_fast_blas_kernels(argv);
    if (argc > 1 && std::strcmp(argv[1], "report") == 0) {
        // Headless: no display needed to render the report's plots.
        if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
        QApplication app(argc, argv);
        set_identity();
        return mpwb::run_report_command(argc, argv);
    }
    // Help, version and the benchmark need no screen: without a display they run offscreen
    // instead of aborting in the platform plugin.
    const bool no_display = !std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY");
    for (int i = 1; i < argc && no_display && !std::getenv("QT_QPA_PLATFORM"); ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h" || a == "--version" || a == "-v" || a == "--benchmark")
            setenv("QT_QPA_PLATFORM", "offscreen", 1);
    }
    mpwb::WorkbenchApplication app(argc, argv);
    set_identity();
    // The installed theme icon when there is one; else the compiled-in copy (PNG: it needs no
    // SVG plugin).
    QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("io.github.mpwb.Workbench"),
                                                 QIcon(QStringLiteral(":/mpwb/icon.png"))));

    QCommandLineParser cli;
    cli.setApplicationDescription(QStringLiteral(
        "MP Workbench: build a network, train it in FP32 and mixed precision side by side, watch "
        "the loss scale and the gradients' exponents.\n"
        "  mpwb report --runs 3,4 --out report.html   writes a comparison report (see mpwb report --help)"));
    cli.addHelpOption();
    cli.addVersionOption();
    QCommandLineOption db({QStringLiteral("db")},
                          QStringLiteral("Run database (default: %1)")
                              .arg(QString::fromStdString(mpwb::default_database_path())),
                          QStringLiteral("path"));
    QCommandLineOption preset({QStringLiteral("preset")},
                              QStringLiteral("Experiment to open: spiral-mlp, fashion-mlp, fashion-cnn"),
                              QStringLiteral("name"));
    QCommandLineOption start({QStringLiteral("start")}, QStringLiteral("Start at once: train or compare"),
                             QStringLiteral("what"));
    QCommandLineOption epochs({QStringLiteral("epochs")}, QStringLiteral("Override the preset's epochs"),
                              QStringLiteral("n"));
    QCommandLineOption precision(
        {QStringLiteral("precision")},
        QStringLiteral("Override the preset's precision policy: %1").arg(QString::fromStdString([] {
            std::string names;
            for (const auto& n : mpwb::precision_names()) names += (names.empty() ? "" : ", ") + n;
            return names;
        }())),
        QStringLiteral("name"));
    QCommandLineOption tab({QStringLiteral("tab")},
                           QStringLiteral("Plot tab to show: Curves, Gradients, Scaling, Decision boundary"),
                           QStringLiteral("title"));
    QCommandLineOption open({QStringLiteral("open-runs")},
                            QStringLiteral("Show stored runs (comma-separated ids, at most %1 different)")
                                .arg(mpwb::kMaxOpenRuns),
                            QStringLiteral("ids"));
    QCommandLineOption sweep({QStringLiteral("sweep")},
                             QStringLiteral("Show a sweep of the database in the hyperparameter view"),
                             QStringLiteral("id"));
    QCommandLineOption quit_after({QStringLiteral("quit-after")},
                                  QStringLiteral("Close after this many seconds"), QStringLiteral("seconds"));
    QCommandLineOption quit_done({QStringLiteral("quit-when-done")},
                                 QStringLiteral("Close when the runs started with --start end"));
    QCommandLineOption fresh({QStringLiteral("default-layout")},
                             QStringLiteral("Ignore the saved window layout"));
    QCommandLineOption bench(
        {QStringLiteral("benchmark")},
        QStringLiteral(
            "Measure throughput with live plots vs headless, event-loop stalls and startup; print JSON"));
    QCommandLineOption bench_steps({QStringLiteral("benchmark-steps")},
                                   QStringLiteral("Step limit of the benchmark runs"), QStringLiteral("n"));
    QCommandLineOption bench_rounds(
        {QStringLiteral("benchmark-rounds")},
        QStringLiteral("Rounds of headless then GUI runs (default 3; the paired ratios are compared)"),
        QStringLiteral("n"));
    for (const auto* o : {&db, &preset, &start, &epochs, &precision, &tab, &open, &sweep, &quit_after,
                          &quit_done, &fresh, &bench, &bench_steps, &bench_rounds})
        cli.addOption(*o);
    cli.process(app);

    // Every value is checked before anything starts, so a scripted run fails at once and says
    // why instead of training something else (--epochs -5 used to train 1 epoch) or never
    // quitting (--quit-after -1).
    constexpr qlonglong kMaxEpochs = 1'000'000'000;
    constexpr double kMaxQuitAfterSeconds = 2'000'000;  // the close timer counts int milliseconds
    if (cli.isSet(epochs) && !whole_in(cli.value(epochs), 1, kMaxEpochs))
        return option_error(QStringLiteral("epochs"), cli.value(epochs),
                            QStringLiteral("is not a whole number from 1 to 1000000000"));
    if (cli.isSet(bench_steps) && !whole_in(cli.value(bench_steps), 1, kMaxEpochs))
        return option_error(QStringLiteral("benchmark-steps"), cli.value(bench_steps),
                            QStringLiteral("is not a whole number from 1 to 1000000000"));
    if (cli.isSet(bench_rounds) && !whole_in(cli.value(bench_rounds), 1, 1000))
        return option_error(QStringLiteral("benchmark-rounds"), cli.value(bench_rounds),
                            QStringLiteral("is not a whole number from 1 to 1000"));
    if (cli.isSet(quit_after)) {
        bool ok = false;
        const double seconds = cli.value(quit_after).toDouble(&ok);
        if (!ok || !(seconds >= 0) || seconds > kMaxQuitAfterSeconds)
            return option_error(QStringLiteral("quit-after"), cli.value(quit_after),
                                QStringLiteral("is not a number of seconds from 0 to 2000000"));
    }
    if (cli.isSet(start) && cli.value(start) != QLatin1String("train") &&
        cli.value(start) != QLatin1String("compare"))
        return option_error(QStringLiteral("start"), cli.value(start),
                            QStringLiteral("is not train or compare"));
    // Each run once and a bounded count: one id given 1,000 times loaded 1,000 copies on the GUI
    // thread, and --quit-after could not fire for minutes.
    const mpwb::OpenRunsArgument open_runs = mpwb::parse_open_runs(cli.value(open));
    if (cli.isSet(open) && !open_runs.problem.isEmpty())
        return option_error(QStringLiteral("open-runs"), open_runs.value, open_runs.problem);
    if (cli.isSet(sweep) && !whole_in(cli.value(sweep), 1, std::numeric_limits<qlonglong>::max()))
        return option_error(QStringLiteral("sweep"), cli.value(sweep),
                            QStringLiteral("is not a sweep id (a positive whole number)"));
    if (cli.isSet(precision)) {
        try {
            mpwb::parse_precision(cli.value(precision).toStdString());
        } catch (const std::exception& e) {
            return option_error(QStringLiteral("precision"), cli.value(precision),
                                QString::fromUtf8(e.what()));
        }
    }
    if (cli.isSet(preset)) {
        try {
            mpwb::load_preset(cli.value(preset).toStdString());
        } catch (const std::exception& e) {
            return option_error(QStringLiteral("preset"), cli.value(preset), QString::fromUtf8(e.what()));
        }
    }
    const bool scripted = cli.isSet(quit_after) || cli.isSet(quit_done);
    int startup_status = 0;  // 1 when a scripted start failed: the process's exit status

    if (cli.isSet(bench)) {
        mpwb::GuiBenchmarkOptions bo;
        if (cli.isSet(preset)) bo.preset = cli.value(preset);
        if (cli.isSet(epochs)) bo.epochs = cli.value(epochs).toLongLong();
        if (cli.isSet(bench_steps)) bo.max_steps = cli.value(bench_steps).toLongLong();
        if (cli.isSet(bench_rounds)) bo.repeats = cli.value(bench_rounds).toInt();
        if (cli.isSet(db)) bo.db_path = cli.value(db);
        try {
            return mpwb::run_gui_benchmark(bo);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "mpwb: benchmark failed: %s\n", e.what());
            return 1;
        }
    }

    mpwb::MainWindow::Options options;
    try {
        options.db_path = cli.isSet(db) ? QDir::current().absoluteFilePath(cli.value(db)).toStdString()
                                        : mpwb::default_database_path();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mpwb: %s\n", e.what());
        return 1;
    }
    options.preset = cli.value(preset);
    options.restore_layout = !cli.isSet(fresh);
    mpwb::MainWindow window(options);
    const bool timing = std::getenv("MPWB_STARTUP_TIMING") != nullptr;
    QObject::connect(&window, &mpwb::MainWindow::firstExposed, &window, [&] {
        if (timing)
            std::fprintf(stderr, "mpwb: main window exposed %.3f s after process start\n",
                         mpwb::seconds_since_process_start());
        // Scripted starts (screenshots, demos) run once the default experiment is in place.
        QTimer::singleShot(50, &window, [&] {
            if (cli.isSet(epochs)) {
                // Through the panel, so the window shows what runs.
                auto c = window.currentConfig();
                c.epochs = cli.value(epochs).toLongLong();
                window.trainingPanel()->setFromConfig(c);
            }
            if (cli.isSet(precision))
                window.precisionPanel()->setPrecision(
                    mpwb::parse_precision(cli.value(precision).toStdString()));
            if (cli.isSet(open)) {
                window.openStoredRuns(open_runs.ids);
                window.runBrowser()->selectRuns(open_runs.ids);
            }
            if (cli.isSet(sweep) && window.showSweep(cli.value(sweep).toLongLong()) && cli.isSet(open))
                window.hparamView()->selectRuns(window.runBrowser()->selectedRunIds());
            // What went wrong while the window set itself up (the database, the preset) is
            // shown in the window; a scripted run also says it on stderr and fails.
            for (const QString& error :
                 {window.runBrowser()->errorText(), window.hparamView()->errorText(), window.lastError()}) {
                if (error.isEmpty()) continue;
                std::fprintf(stderr, "mpwb: %s\n", qPrintable(error));
                startup_status = 1;
            }
            if (startup_status != 0 && scripted) {
                QCoreApplication::exit(startup_status);
                return;
            }
            const QString what = cli.value(start);
            const bool started = what == QLatin1String("train")     ? window.startTraining()
                                 : what == QLatin1String("compare") ? window.startComparison()
                                                                    : true;
            if (!started) {
                const QString why =
                    window.lastError().isEmpty() ? window.statusBar()->currentMessage() : window.lastError();
                std::fprintf(stderr, "mpwb: --start %s failed: %s\n", qPrintable(what), qPrintable(why));
                startup_status = 1;
                if (scripted) {
                    QCoreApplication::exit(startup_status);
                    return;
                }
            }
            if (cli.isSet(tab)) window.plots()->showTab(cli.value(tab));
            if (cli.isSet(quit_done) && window.controller()->busy())
                QObject::connect(window.controller(), &mpwb::TrainingController::stateChanged, &window,
                                 [&](mpwb::TrainingController::State s) {
                                     if (s == mpwb::TrainingController::State::Idle) window.close();
                                 });
            else if (cli.isSet(quit_done))
                window.close();  // nothing was started, so nothing will end: done now
        });
    });
    window.show();
    if (cli.isSet(quit_after)) {
        const int ms = static_cast<int>(cli.value(quit_after).toDouble() * 1000);  // range checked above
        QTimer::singleShot(ms, &window, &QWidget::close);
    }
    const int status = app.exec();
    return status != 0 ? status : (scripted ? startup_status : 0);
}
