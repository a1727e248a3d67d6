// CliProcess: runs `mpwb-cli` for the workbench (a sweep, a resumed run) in its own process
// group, hands over its standard output line by line, and cancels it cleanly: SIGTERM to the
// whole group (the CLI and every training process it started, which checkpoint or stop on it),
// then SIGKILL to the group if it is still there after a grace period.
#pragma once
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTimer>

namespace mpwb {

class CliProcess : public QObject {
    Q_OBJECT
public:
    explicit CliProcess(QObject* parent = nullptr);
    ~CliProcess() override;

    // mpwb-cli next to the running program (an installed bin/ folder), or in the build tree's
    // app/cli beside app/gui; $MPWB_CLI overrides both. Empty when none is there; `searched`
    // then lists where it looked.
    static QString findCli(QStringList* searched = nullptr);

    // Starts `program arguments`; false (with the reason in errorText) when it cannot start or
    // one is already running.
    bool start(const QString& program, const QStringList& arguments);
    bool running() const { return process_.state() != QProcess::NotRunning; }
    // SIGTERM to the process group; SIGKILL after `grace_ms` if it has not ended.
    void cancel(int grace_ms = 10000);
    bool cancelled() const { return cancelled_; }
    QString errorText() const { return error_; }
    // The last lines it wrote to standard error (its messages).
    QString stderrTail() const { return stderr_tail_.join(QLatin1Char('\n')); }

signals:
    void lineReceived(const QString& line);
    // It ended: its exit code (-1 when it crashed or could not start).
    void finished(int exit_code);

private:
    void readLines();
    void readErrors();
    void signalGroup(int signal);

    QProcess process_;
    QTimer kill_timer_;
    QByteArray pending_;
    QStringList stderr_tail_;
    QString error_;
    bool cancelled_ = false;
};

}  // namespace mpwb
