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

// Help, version and the benchmark need no screen: without a display they run offscreen
// instead of aborting in the platform plugin.
void offscreen_without_display(int argc, char** argv) {
    const bool no_display = !std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY");
    for (int i = 1; i < argc && no_display && !std::getenv("QT_QPA_PLATFORM"); ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h" || a == "--version" || a == "-v" || a == "--benchmark")
            setenv("QT_QPA_PLATFORM", "offscreen", 1);
    }
}

QString precision_list() {
    std::string names;
    for (const auto& n : mpwb::precision_names()) names += (names.empty() ? "" : ", ") + n;
    return QString::fromStdString(names);
}

// The workbench's command-line options.
struct Options {
    QCommandLineOption db{{QStringLiteral("db")},
                          QStringLiteral("Run database (default: %1)")
                              .arg(QString::fromStdString(mpwb::default_database_path())),
                          QStringLiteral("path")};
    QCommandLineOption preset{
        {QStringLiteral("preset")},
        QStringLiteral("Experiment to open: spiral-mlp, fashion-mlp, fashion-cnn, fortunes-gpt, ..."),
        QStringLiteral("name")};
    QCommandLineOption start{
        {QStringLiteral("start")}, QStringLiteral("Start at once: train or compare"), QStringLiteral("what")};
    QCommandLineOption epochs{
        {QStringLiteral("epochs")}, QStringLiteral("Override the preset's epochs"), QStringLiteral("n")};
    QCommandLineOption max_steps{
        {QStringLiteral("max-steps")},
        QStringLiteral("Override the preset's step limit (a run ends after n steps)"),
        QStringLiteral("n")};
    QCommandLineOption stats_every{
        {QStringLiteral("stats-every")},
        QStringLiteral("Override the preset's statistics steps: gradient and scaling statistics and "
                       "instability indicators every n steps (0: none)"),
        QStringLiteral("n")};
    QCommandLineOption precision{
        {QStringLiteral("precision")},
        QStringLiteral("Override the preset's precision policy: %1").arg(precision_list()),
        QStringLiteral("name")};
    QCommandLineOption tab{
        {QStringLiteral("tab")},
        QStringLiteral("Plot tab to show: Curves, Gradients, Scaling, Stability, Samples, Decision boundary"),
        QStringLiteral("title")};
    QCommandLineOption open{{QStringLiteral("open-runs")},
                            QStringLiteral("Show stored runs (comma-separated ids, at most %1 different)")
                                .arg(mpwb::kMaxOpenRuns),
                            QStringLiteral("ids")};
    QCommandLineOption sweep{{QStringLiteral("sweep")},
                             QStringLiteral("Show a sweep of the database in the hyperparameter view"),
                             QStringLiteral("id")};
    QCommandLineOption quit_after{{QStringLiteral("quit-after")},
                                  QStringLiteral("Close after this many seconds"),
                                  QStringLiteral("seconds")};
    QCommandLineOption quit_done{{QStringLiteral("quit-when-done")},
                                 QStringLiteral("Close when the runs started with --start end")};
    QCommandLineOption fresh{{QStringLiteral("default-layout")},
                             QStringLiteral("Ignore the saved window layout")};
    QCommandLineOption bench{
        {QStringLiteral("benchmark")},
        QStringLiteral(
            "Measure throughput with live plots vs headless, event-loop stalls and startup; print JSON")};
    QCommandLineOption bench_steps{{QStringLiteral("benchmark-steps")},
                                   QStringLiteral("Step limit of the benchmark runs"),
                                   QStringLiteral("n")};
    QCommandLineOption bench_rounds{
        {QStringLiteral("benchmark-rounds")},
        QStringLiteral("Rounds of headless then GUI runs (default 3; the paired ratios are compared)"),
        QStringLiteral("n")};

    void add_to(QCommandLineParser& cli) const {
        for (const auto* o :
             {&db, &preset, &start, &epochs, &max_steps, &stats_every, &precision, &tab, &open, &sweep,
              &quit_after, &quit_done, &fresh, &bench, &bench_steps, &bench_rounds})
            cli.addOption(*o);
    }
};

// Every value is checked before anything starts, so a scripted run fails at once and says why
// instead of training something else (--epochs -5 used to train 1 epoch) or never quitting
// (--quit-after -1). Returns the exit status of the first bad value, 0 when all are good.
int check_numbers(const QCommandLineParser& cli, const Options& o) {
    constexpr qlonglong kMaxEpochs = 1'000'000'000;
    constexpr double kMaxQuitAfterSeconds = 2'000'000;  // the close timer counts int milliseconds
    if (cli.isSet(o.epochs) && !whole_in(cli.value(o.epochs), 1, kMaxEpochs))
        return option_error(QStringLiteral("epochs"), cli.value(o.epochs),
                            QStringLiteral("is not a whole number from 1 to 1000000000"));
    if (cli.isSet(o.max_steps) && !whole_in(cli.value(o.max_steps), 1, kMaxEpochs))
        return option_error(QStringLiteral("max-steps"), cli.value(o.max_steps),
                            QStringLiteral("is not a whole number from 1 to 1000000000"));
    if (cli.isSet(o.stats_every) && !whole_in(cli.value(o.stats_every), 0, kMaxEpochs))
        return option_error(QStringLiteral("stats-every"), cli.value(o.stats_every),
                            QStringLiteral("is not a whole number from 0 to 1000000000"));
    if (cli.isSet(o.bench_steps) && !whole_in(cli.value(o.bench_steps), 1, kMaxEpochs))
        return option_error(QStringLiteral("benchmark-steps"), cli.value(o.bench_steps),
                            QStringLiteral("is not a whole number from 1 to 1000000000"));
    if (cli.isSet(o.bench_rounds) && !whole_in(cli.value(o.bench_rounds), 1, 1000))
        return option_error(QStringLiteral("benchmark-rounds"), cli.value(o.bench_rounds),
                            QStringLiteral("is not a whole number from 1 to 1000"));
    if (cli.isSet(o.quit_after)) {
        bool ok = false;
        const double seconds = cli.value(o.quit_after).toDouble(&ok);
        if (!ok || !(seconds >= 0) || seconds > kMaxQuitAfterSeconds)
            return option_error(QStringLiteral("quit-after"), cli.value(o.quit_after),
                                QStringLiteral("is not a number of seconds from 0 to 2000000"));
    }
    return 0;
}

// The named values (--start, --open-runs, --sweep, --precision, --preset), checked as check_numbers
// checks the numbers; the runs to open in `open_runs`.
int check_names(const QCommandLineParser& cli, const Options& o, mpwb::OpenRunsArgument& open_runs) {
    if (cli.isSet(o.start) && cli.value(o.start) != QLatin1String("train") &&
        cli.value(o.start) != QLatin1String("compare"))
        return option_error(QStringLiteral("start"), cli.value(o.start),
                            QStringLiteral("is not train or compare"));
    // Each run once and a bounded count: one id given 1,000 times loaded 1,000 copies on the GUI
    // thread, and --quit-after could not fire for minutes.
    open_runs = mpwb::parse_open_runs(cli.value(o.open));
    if (cli.isSet(o.open) && !open_runs.problem.isEmpty())
        return option_error(QStringLiteral("open-runs"), open_runs.value, open_runs.problem);
    if (cli.isSet(o.sweep) && !whole_in(cli.value(o.sweep), 1, std::numeric_limits<qlonglong>::max()))
        return option_error(QStringLiteral("sweep"), cli.value(o.sweep),
                            QStringLiteral("is not a sweep id (a positive whole number)"));
    if (cli.isSet(o.precision)) {
        try {
            mpwb::parse_precision(cli.value(o.precision).toStdString());
        } catch (const std::exception& e) {
            return option_error(QStringLiteral("precision"), cli.value(o.precision),
                                QString::fromUtf8(e.what()));
        }
    }
    if (cli.isSet(o.preset)) {
        try {
            mpwb::load_preset(cli.value(o.preset).toStdString());
        } catch (const std::exception& e) {
            return option_error(QStringLiteral("preset"), cli.value(o.preset), QString::fromUtf8(e.what()));
        }
    }
    return 0;
}

int run_benchmark(const QCommandLineParser& cli, const Options& o) {
    mpwb::GuiBenchmarkOptions bo;
    if (cli.isSet(o.preset)) bo.preset = cli.value(o.preset);
    if (cli.isSet(o.epochs)) bo.epochs = cli.value(o.epochs).toLongLong();
    if (cli.isSet(o.bench_steps)) bo.max_steps = cli.value(o.bench_steps).toLongLong();
    if (cli.isSet(o.bench_rounds)) bo.repeats = cli.value(o.bench_rounds).toInt();
    if (cli.isSet(o.db)) bo.db_path = cli.value(o.db);
    try {
        return mpwb::run_gui_benchmark(bo);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mpwb: benchmark failed: %s\n", e.what());
        return 1;
    }
}

// What the command line asks of the window once its default experiment is in place
// (screenshots, demos, scripted runs), and how that went.
class ScriptedStart {
public:
    ScriptedStart(const QCommandLineParser& cli, const Options& o, mpwb::OpenRunsArgument open_runs,
                  mpwb::MainWindow& window)
        : cli_(cli),
          o_(o),
          open_runs_(std::move(open_runs)),
          window_(window),
          scripted_(cli.isSet(o.quit_after) || cli.isSet(o.quit_done)) {}

    // Runs on the window's first expose.
    void run() {
        applyOverrides();
        // What went wrong while the window set itself up (the database, the preset) is shown in
        // the window; a scripted run also says it on stderr and fails.
        for (const QString& error :
             {window_.runBrowser()->errorText(), window_.hparamView()->errorText(), window_.lastError()}) {
            if (error.isEmpty()) continue;
            std::fprintf(stderr, "mpwb: %s\n", qPrintable(error));
            status_ = 1;
        }
        if (endedByFailure()) return;
        if (!startRequested()) status_ = 1;
        if (endedByFailure()) return;
        if (cli_.isSet(o_.tab)) window_.plots()->showTab(cli_.value(o_.tab));
        if (cli_.isSet(o_.quit_done) && window_.controller()->busy())
            QObject::connect(window_.controller(), &mpwb::TrainingController::stateChanged, &window_,
                             [this](mpwb::TrainingController::State s) {
                                 if (s == mpwb::TrainingController::State::Idle) window_.close();
                             });
        else if (cli_.isSet(o_.quit_done))
            window_.close();  // nothing was started, so nothing will end: done now
    }

    // The process's exit status once the event loop returned `loop_status`.
    int exitStatus(int loop_status) const {
        return loop_status != 0 ? loop_status : (scripted_ ? status_ : 0);
    }

private:
    // A scripted run ends at its first failure (the event loop returns status_).
    bool endedByFailure() const {
        if (status_ == 0 || !scripted_) return false;
        QCoreApplication::exit(status_);
        return true;
    }

    // --epochs, --max-steps, --stats-every, --precision, --open-runs and --sweep, through the panels so the
    // window shows them.
    void applyOverrides() {
        if (cli_.isSet(o_.epochs) || cli_.isSet(o_.max_steps) || cli_.isSet(o_.stats_every)) {
            auto c = window_.currentConfig();
            if (cli_.isSet(o_.epochs)) c.epochs = cli_.value(o_.epochs).toLongLong();
            if (cli_.isSet(o_.max_steps)) c.max_steps = cli_.value(o_.max_steps).toLongLong();
            if (cli_.isSet(o_.stats_every)) c.stats_every = cli_.value(o_.stats_every).toLongLong();
            window_.trainingPanel()->setFromConfig(c);
        }
        if (cli_.isSet(o_.precision))
            window_.precisionPanel()->setPrecision(
                mpwb::parse_precision(cli_.value(o_.precision).toStdString()));
        if (cli_.isSet(o_.open)) {
            window_.openStoredRuns(open_runs_.ids);
            window_.runBrowser()->selectRuns(open_runs_.ids);
        }
        if (cli_.isSet(o_.sweep) && window_.showSweep(cli_.value(o_.sweep).toLongLong()) &&
            cli_.isSet(o_.open))
            window_.hparamView()->selectRuns(window_.runBrowser()->selectedRunIds());
    }

    // --start train or compare; false (said on stderr) when it did not start.
    bool startRequested() {
        const QString what = cli_.value(o_.start);
        const bool started = what == QLatin1String("train")     ? window_.startTraining()
                             : what == QLatin1String("compare") ? window_.startComparison()
                                                                : true;
        if (!started) {
            const QString why =
                window_.lastError().isEmpty() ? window_.statusBar()->currentMessage() : window_.lastError();
            std::fprintf(stderr, "mpwb: --start %s failed: %s\n", qPrintable(what), qPrintable(why));
        }
        return started;
    }

    const QCommandLineParser& cli_;
    const Options& o_;
    const mpwb::OpenRunsArgument open_runs_;
    mpwb::MainWindow& window_;
    const bool scripted_;
    int status_ = 0;  // 1 when a scripted start failed
};

// The window, its scripted start and the event loop; returns the exit status.
int run_workbench(QApplication& app, const QCommandLineParser& cli, const Options& o,
                  mpwb::OpenRunsArgument open_runs) {
    mpwb::MainWindow::Options options;
    try {
        options.db_path = cli.isSet(o.db) ? QDir::current().absoluteFilePath(cli.value(o.db)).toStdString()
                                          : mpwb::default_database_path();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mpwb: %s\n", e.what());
        return 1;
    }
    options.preset = cli.value(o.preset);
    options.restore_layout = !cli.isSet(o.fresh);
    mpwb::MainWindow window(options);
    ScriptedStart scripted(cli, o, std::move(open_runs), window);
    const bool timing = std::getenv("MPWB_STARTUP_TIMING") != nullptr;
    QObject::connect(&window, &mpwb::MainWindow::firstExposed, &window, [&] {
        if (timing)
            std::fprintf(stderr, "mpwb: main window exposed %.3f s after process start\n",
                         mpwb::seconds_since_process_start());
        QTimer::singleShot(50, &window, [&] { scripted.run(); });
    });
    window.show();
    if (cli.isSet(o.quit_after)) {
        const int ms = static_cast<int>(cli.value(o.quit_after).toDouble() * 1000);  // range checked
        QTimer::singleShot(ms, &window, &QWidget::close);
    }
    return scripted.exitStatus(app.exec());
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
    offscreen_without_display(argc, argv);
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
    const Options o;
    o.add_to(cli);
    cli.process(app);

    mpwb::OpenRunsArgument open_runs;
    if (const int status = check_numbers(cli, o)) return status;
    if (const int status = check_names(cli, o, open_runs)) return status;
    if (cli.isSet(o.bench)) return run_benchmark(cli, o);
    return run_workbench(app, cli, o, std::move(open_runs));
}
