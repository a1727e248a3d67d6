// CliProcess: mpwb-cli in its own process group (see cli_process.h).
#include "app/gui/cli_process.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <signal.h>
#include <unistd.h>

namespace mpwb {

namespace {
constexpr int kStderrLines = 20;
}

CliProcess::CliProcess(QObject* parent) : QObject(parent) {
    // A group of its own, so cancel() reaches the training processes the CLI starts and
    // nothing else of the workbench.
    process_.setChildProcessModifier([] { ::setpgid(0, 0); });
    kill_timer_.setSingleShot(true);
    connect(&kill_timer_, &QTimer::timeout, this, [this] { signalGroup(SIGKILL); });
    connect(&process_, &QProcess::readyReadStandardOutput, this, &CliProcess::readLines);
    connect(&process_, &QProcess::readyReadStandardError, this, &CliProcess::readErrors);
    connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        kill_timer_.stop();
        readLines();
        if (!pending_.isEmpty()) emit lineReceived(QString::fromUtf8(std::exchange(pending_, {})));
        readErrors();
        emit finished(status == QProcess::NormalExit ? code : -1);
    });
    connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        error_ = tr("%1 could not start: %2").arg(process_.program(), process_.errorString());
        emit finished(-1);
    });
}

CliProcess::~CliProcess() {
    if (running()) {
        signalGroup(SIGTERM);
        if (!process_.waitForFinished(5000)) signalGroup(SIGKILL);
        process_.waitForFinished(2000);
    }
}

QString CliProcess::findCli(QStringList* searched) {
    QStringList candidates;
    const QString env = qEnvironmentVariable("MPWB_CLI");
    if (!env.isEmpty()) candidates << env;
    const QDir here(QCoreApplication::applicationDirPath());
    candidates << here.filePath(QStringLiteral("mpwb-cli"))
               << QDir::cleanPath(here.filePath(QStringLiteral("../cli/mpwb-cli")))
               << QDir::cleanPath(here.filePath(QStringLiteral("../app/cli/mpwb-cli")));
    if (searched) *searched = candidates;
    for (const QString& c : candidates) {
        const QFileInfo info(c);
        if (info.isFile() && info.isExecutable()) return info.absoluteFilePath();
    }
    return {};
}

bool CliProcess::start(const QString& program, const QStringList& arguments) {
    if (running()) {
        error_ = tr("mpwb-cli is already running");
        return false;
    }
    error_.clear();
    stderr_tail_.clear();
    pending_.clear();
    cancelled_ = false;
    process_.start(program, arguments);
    if (!process_.waitForStarted(10000)) {
        error_ = tr("%1 could not start: %2").arg(program, process_.errorString());
        return false;
    }
    return true;
}

void CliProcess::cancel(int grace_ms) {
    if (!running()) return;
    cancelled_ = true;
    signalGroup(SIGTERM);
    kill_timer_.start(grace_ms);
}

void CliProcess::signalGroup(int signal) {
    const qint64 pid = process_.processId();
    if (pid > 0) ::kill(-pid_t(pid), signal);
}

void CliProcess::readLines() {
    pending_ += process_.readAllStandardOutput();
    for (qsizetype end = pending_.indexOf('\n'); end >= 0; end = pending_.indexOf('\n')) {
        const QByteArray line = pending_.left(end);
        pending_.remove(0, end + 1);
        emit lineReceived(QString::fromUtf8(line));
    }
}

void CliProcess::readErrors() {
    const QString text = QString::fromUtf8(process_.readAllStandardError());
    for (const QString& line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) stderr_tail_ << line;
    while (stderr_tail_.size() > kStderrLines) stderr_tail_.removeFirst();
}

}  // namespace mpwb
