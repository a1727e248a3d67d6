// run_report_command: the `report` subcommand (mpwb report).
#include "app/report/report.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QStringList>
#include <cstdio>
#include <memory>

namespace mpwb {

namespace {

struct ReportOptions {
    QCommandLineOption help{{QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help.")};
    QCommandLineOption runs{QStringLiteral("runs"), QStringLiteral("Run ids, comma-separated (e.g. 3,4)."),
                            QStringLiteral("IDS")};
    QCommandLineOption out{QStringLiteral("out"),
                           QStringLiteral("Output file, .html or .pdf; repeat for both."),
                           QStringLiteral("FILE")};
    QCommandLineOption db{QStringLiteral("db"),
                          QStringLiteral("Run database (default: the workbench's own)."),
                          QStringLiteral("PATH")};
    QCommandLineOption target{
        QStringLiteral("target-accuracy"),
        QStringLiteral(
            "Test accuracy to time, as a fraction or percent (default: 95% of the best final accuracy)."),
        QStringLiteral("X")};
    QCommandLineOption title{QStringLiteral("title"), QStringLiteral("Report title."),
                             QStringLiteral("TEXT")};
    QCommandLineOption smoothing{
        QStringLiteral("smoothing"),
        QStringLiteral(
            "EMA smoothing of the training curves, 0 (none, the default) up to but not including 1, "
            "as the workbench's smoothing slider."),
        QStringLiteral("ALPHA")};
};

// The command line without the "report" word, as QCommandLineParser reads it.
QStringList report_arguments(int argc, char** argv) {
    QStringList args;
    for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
    if (args.size() >= 2 && args[1] == QLatin1String("report")) args.removeAt(1);
    if (args.isEmpty()) args << QStringLiteral("mpwb");
    return args;
}

// Fills `request` from the parsed options; returns what is wrong with them (empty when nothing).
QString read_report_request(const QCommandLineParser& parser, const ReportOptions& o,
                            ReportRequest& request) {
    if (!parser.isSet(o.runs)) return QStringLiteral("--runs is required");
    for (const QString& part : parser.value(o.runs).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qlonglong id = part.trimmed().toLongLong(&ok);
        if (!ok || id <= 0) return QStringLiteral("--runs: \"%1\" is not a run id").arg(part);
        request.run_ids.push_back(id);
    }
    const QStringList outs = parser.values(o.out);
    if (outs.isEmpty()) return QStringLiteral("--out is required (a .html or .pdf file)");
    request.output = outs.first().toStdString();
    for (int i = 1; i < outs.size(); ++i) request.extra_outputs.push_back(outs[i].toStdString());
    if (parser.isSet(o.db)) request.database = parser.value(o.db).toStdString();
    if (parser.isSet(o.title)) request.title = parser.value(o.title).toStdString();
    if (parser.isSet(o.target)) {
        bool ok = false;
        request.target_accuracy = parser.value(o.target).toDouble(&ok);
        if (!ok || request.target_accuracy < 0 || request.target_accuracy > 100)
            return QStringLiteral("--target-accuracy: \"%1\" is not an accuracy (0..1 or 0..100)")
                .arg(parser.value(o.target));
    }
    if (parser.isSet(o.smoothing)) {
        bool ok = false;
        request.smoothing = parser.value(o.smoothing).toDouble(&ok);
        if (!ok || !(request.smoothing >= 0 && request.smoothing < 1))
            return QStringLiteral(
                       "--smoothing: \"%1\" is not an EMA weight (a number from 0 up to but not including 1)")
                .arg(parser.value(o.smoothing));
    }
    return {};
}

int usage_error(const QString& message) {
    std::fprintf(stderr,
                 "mpwb report: %s\nusage: mpwb report --runs ID,ID --out report.html|report.pdf "
                 "[--db PATH] [--target-accuracy X] [--smoothing ALPHA]\n",
                 qPrintable(message));
    return 2;
}

}  // namespace

int run_report_command(int argc, char** argv) {
    // Plots are widgets: a QApplication is needed even headless, on the offscreen platform
    // unless the caller chose one.
    std::unique_ptr<QApplication> app;
    static int app_argc = 1;
    static char app_name[] = "mpwb";
    static char* app_argv[] = {app_name, nullptr};
    if (!QCoreApplication::instance()) {
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
        app = std::make_unique<QApplication>(app_argc, app_argv);
    }

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Writes a comparison report of stored runs: a self-contained HTML file and/or an A4 PDF, "
        "plus the series as CSV beside the first output."));
    const ReportOptions o;
    parser.addOptions({o.help, o.runs, o.out, o.db, o.target, o.title, o.smoothing});
    if (!parser.parse(report_arguments(argc, argv))) return usage_error(parser.errorText());
    if (parser.isSet(o.help)) {
        std::printf("%s", qPrintable(parser.helpText()));
        return 0;
    }
    if (!parser.positionalArguments().isEmpty())
        return usage_error(
            QStringLiteral("unexpected argument \"%1\"").arg(parser.positionalArguments().first()));
    ReportRequest request;
    if (const QString problem = read_report_request(parser, o, request); !problem.isEmpty())
        return usage_error(problem);
    try {
        for (const std::string& f : write_report(request)) std::printf("wrote %s\n", f.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mpwb report: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace mpwb
