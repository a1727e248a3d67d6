// SweepLauncher: starts a sweep from the workbench through `mpwb-cli sweep run SPEC --jobs N
// --db DB --progress-jsonl` (CliProcess) and follows its JSON lines (docs/SWEEPS.md):
// sweep_started {sweep_id, runs}, run_started {index}, run_finished {index, run_id, status,
// exit_code}, sweep_finished {sweep_id, finished, failed}. SweepProgress is the status-bar
// strip that shows it: a progress bar over the whole sweep (runs done of all), the failures,
// and Cancel.
#pragma once
#include <QObject>
#include <QString>
#include <QWidget>

#include "app/gui/cli_process.h"

class QLabel;
class QProgressBar;
class QPushButton;

namespace mpwb {

class SweepLauncher : public QObject {
    Q_OBJECT
public:
    explicit SweepLauncher(QObject* parent = nullptr);

    // False (with the reason in errorText) when mpwb-cli is missing, cannot start, or a sweep is
    // already running.
    bool start(const QString& spec_path, int jobs, const QString& db_path);
    void cancel();
    bool running() const { return process_->running(); }
    QString errorText() const { return error_; }
    int total() const { return total_; }
    int done() const { return finished_ + failed_; }
    int failed() const { return failed_; }
    // One JSON line of the CLI (public for tests); malformed lines are ignored.
    void handleLine(const QString& line);

signals:
    void started(qint64 sweep_id, int runs);
    // done: runs that ended (finished or failed) of total.
    void progress(int done, int failed, int total);
    // The sweep ended: ok when the CLI exited 0; message says how it ended.
    void finished(qint64 sweep_id, bool ok, const QString& message);

private:
    void onProcessFinished(int exit_code);

    CliProcess* process_ = nullptr;
    QString error_;
    qint64 sweep_id_ = 0;
    int total_ = 0, finished_ = 0, failed_ = 0;
};

class SweepProgress : public QWidget {
    Q_OBJECT
public:
    explicit SweepProgress(SweepLauncher* launcher, QWidget* parent = nullptr);
    QProgressBar* bar() const { return bar_; }
    QPushButton* cancelButton() const { return cancel_; }

private:
    SweepLauncher* launcher_;
    QProgressBar* bar_ = nullptr;
    QLabel* failures_ = nullptr;
    QPushButton* cancel_ = nullptr;
};

}  // namespace mpwb
