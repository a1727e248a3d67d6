// run_report_command: the `report` subcommand (mpwb report).
#include "app/report/report.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QStringList>
#include <cstdio>
#include <memory>

namespace mpwb {

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

    QStringList args;
    for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
    if (args.size() >= 2 && args[1] == QLatin1String("report")) args.removeAt(1);
    if (args.isEmpty()) args << QStringLiteral("mpwb");

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Writes a comparison report of stored runs: a self-contained HTML file and/or an A4 PDF, "
        "plus the series as CSV beside the first output."));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")},
                                  QStringLiteral("Show this help."));
    const QCommandLineOption runs(QStringLiteral("runs"),
                                  QStringLiteral("Run ids, comma-separated (e.g. 3,4)."),
                                  QStringLiteral("IDS"));
    const QCommandLineOption out(QStringLiteral("out"),
                                 QStringLiteral("Output file, .html or .pdf; repeat for both."),
                                 QStringLiteral("FILE"));
    const QCommandLineOption db(QStringLiteral("db"),
                                QStringLiteral("Run database (default: the workbench's own)."),
                                QStringLiteral("PATH"));
    const QCommandLineOption target(
        QStringLiteral("target-accuracy"),
        QStringLiteral(
            "Test accuracy to time, as a fraction or percent (default: 95% of the best final accuracy)."),
        QStringLiteral("X"));
    const QCommandLineOption title(QStringLiteral("title"), QStringLiteral("Report title."),
                                   QStringLiteral("TEXT"));
    const QCommandLineOption smoothing(
        QStringLiteral("smoothing"),
        QStringLiteral(
            "EMA smoothing of the training curves, 0 (none, the default) up to but not including 1, "
            "as the workbench's smoothing slider."),
        QStringLiteral("ALPHA"));
    parser.addOptions({help, runs, out, db, target, title, smoothing});
    auto usage_error = [&](const QString& message) {
        std::fprintf(stderr,
                     "mpwb report: %s\nusage: mpwb report --runs ID,ID --out report.html|report.pdf "
                     "[--db PATH] [--target-accuracy X] [--smoothing ALPHA]\n",
                     qPrintable(message));
        return 2;
    };
    if (!parser.parse(args)) return usage_error(parser.errorText());
    if (parser.isSet(help)) {
        std::printf("%s", qPrintable(parser.helpText()));
        return 0;
    }
    if (!parser.positionalArguments().isEmpty())
        return usage_error(
            QStringLiteral("unexpected argument \"%1\"").arg(parser.positionalArguments().first()));

    ReportRequest request;
    if (!parser.isSet(runs)) return usage_error(QStringLiteral("--runs is required"));
    for (const QString& part : parser.value(runs).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qlonglong id = part.trimmed().toLongLong(&ok);
        if (!ok || id <= 0) return usage_error(QStringLiteral("--runs: \"%1\" is not a run id").arg(part));
        request.run_ids.push_back(id);
    }
    const QStringList outs = parser.values(out);
    if (outs.isEmpty()) return usage_error(QStringLiteral("--out is required (a .html or .pdf file)"));
    request.output = outs.first().toStdString();
    for (int i = 1; i < outs.size(); ++i) request.extra_outputs.push_back(outs[i].toStdString());
    if (parser.isSet(db)) request.database = parser.value(db).toStdString();
    if (parser.isSet(title)) request.title = parser.value(title).toStdString();
    if (parser.isSet(target)) {
        bool ok = false;
        request.target_accuracy = parser.value(target).toDouble(&ok);
        if (!ok || request.target_accuracy < 0 || request.target_accuracy > 100)
            return usage_error(QStringLiteral("--target-accuracy: \"%1\" is not an accuracy (0..1 or 0..100)")
                                   .arg(parser.value(target)));
    }
    if (parser.isSet(smoothing)) {
        bool ok = false;
        request.smoothing = parser.value(smoothing).toDouble(&ok);
        if (!ok || !(request.smoothing >= 0 && request.smoothing < 1))
            return usage_error(
                QStringLiteral(
                    "--smoothing: \"%1\" is not an EMA weight (a number from 0 up to but not including 1)")
                    .arg(parser.value(smoothing)));
    }
    try {
        for (const std::string& f : write_report(request)) std::printf("wrote %s\n", f.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mpwb report: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace mpwb
