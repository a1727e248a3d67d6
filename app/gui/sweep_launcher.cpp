// SweepLauncher and SweepProgress (see sweep_launcher.h).
#include "app/gui/sweep_launcher.h"

#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

namespace mpwb {

SweepLauncher::SweepLauncher(QObject* parent) : QObject(parent), process_(new CliProcess(this)) {
    connect(process_, &CliProcess::lineReceived, this, &SweepLauncher::handleLine);
    connect(process_, &CliProcess::finished, this, &SweepLauncher::onProcessFinished);
}

bool SweepLauncher::start(const QString& spec_path, int jobs, const QString& db_path) {
    QStringList searched;
    const QString cli = CliProcess::findCli(&searched);
    if (cli.isEmpty()) {
        error_ = tr("mpwb-cli was not found next to the workbench (looked for %1); sweeps run through it. "
                    "Install MP Workbench completely or set MPWB_CLI to its path.")
                     .arg(searched.join(QStringLiteral(", ")));
        return false;
    }
    sweep_id_ = 0;
    total_ = finished_ = failed_ = 0;
    const QStringList args{
        QStringLiteral("sweep"), QStringLiteral("run"),  spec_path, QStringLiteral("--jobs"),
        QString::number(jobs),   QStringLiteral("--db"), db_path,   QStringLiteral("--progress-jsonl")};
    if (!process_->start(cli, args)) {
        error_ = process_->errorText();
        return false;
    }
    error_.clear();
    return true;
}

void SweepLauncher::cancel() { process_->cancel(); }

void SweepLauncher::handleLine(const QString& line) {
    const QJsonDocument doc = QJsonDocument::fromJson(line.toUtf8());
    if (!doc.isObject()) return;  // a message meant for a terminal
    const QJsonObject o = doc.object();
    const QString event = o.value(QStringLiteral("event")).toString();
    if (event == QStringLiteral("sweep_started")) {
        sweep_id_ = o.value(QStringLiteral("sweep_id")).toInteger();
        total_ = o.value(QStringLiteral("runs")).toInt();
        emit started(sweep_id_, total_);
    } else if (event == QStringLiteral("run_finished")) {
        const bool ok = o.value(QStringLiteral("exit_code")).toInt(-1) == 0 &&
                        o.value(QStringLiteral("status"))
                                .toString()
                                .compare(QStringLiteral("FINISHED"), Qt::CaseInsensitive) == 0;
        ++(ok ? finished_ : failed_);
    } else if (event == QStringLiteral("sweep_finished")) {
        if (!sweep_id_) sweep_id_ = o.value(QStringLiteral("sweep_id")).toInteger();
        finished_ = o.value(QStringLiteral("finished")).toInt(finished_);
        failed_ = o.value(QStringLiteral("failed")).toInt(failed_);
    } else {
        return;
    }
    emit progress(done(), failed_, total_);
}

void SweepLauncher::onProcessFinished(int exit_code) {
    QString message;
    if (process_->cancelled())
        message = tr("Sweep cancelled after %1 of %2 runs").arg(done()).arg(total_);
    else if (exit_code == 0)
        message = tr("Sweep finished: %1 of %2 runs, %3 failed").arg(done()).arg(total_).arg(failed_);
    else
        message = tr("Sweep ended with exit code %1 after %2 of %3 runs, %4 failed")
                      .arg(exit_code)
                      .arg(done())
                      .arg(total_)
                      .arg(failed_);
    const QString errors = process_->errorText().isEmpty() ? process_->stderrTail() : process_->errorText();
    if (exit_code != 0 && !errors.isEmpty()) message += QStringLiteral(":\n") + errors;
    emit finished(sweep_id_, exit_code == 0 && !process_->cancelled(), message);
}

SweepProgress::SweepProgress(SweepLauncher* launcher, QWidget* parent)
    : QWidget(parent), launcher_(launcher) {
    setObjectName(QStringLiteral("sweepProgress"));
    bar_ = new QProgressBar;
    bar_->setObjectName(QStringLiteral("sweepBar"));
    bar_->setMaximumWidth(220);
    bar_->setRange(0, 0);  // busy until the CLI says how many runs
    bar_->setFormat(tr("sweep %v/%m runs"));
    failures_ = new QLabel;
    failures_->setObjectName(QStringLiteral("sweepFailures"));
    failures_->setStyleSheet(QStringLiteral("color: #b00000;"));
    cancel_ = new QPushButton(tr("Cancel sweep"));
    cancel_->setObjectName(QStringLiteral("sweepCancel"));
    cancel_->setToolTip(tr("Stop the sweep: its training processes checkpoint and end INTERRUPTED"));
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(bar_);
    row->addWidget(failures_);
    row->addWidget(cancel_);
    hide();
    connect(cancel_, &QPushButton::clicked, launcher_, &SweepLauncher::cancel);
    connect(launcher_, &SweepLauncher::started, this, [this](qint64, int runs) {
        bar_->setRange(0, std::max(1, runs));
        bar_->setValue(0);
    });
    connect(launcher_, &SweepLauncher::progress, this, [this](int done, int failed, int total) {
        if (total > 0) bar_->setRange(0, total);
        bar_->setValue(done);
        failures_->setText(failed > 0 ? tr("%n failed", "", failed) : QString());
    });
    connect(launcher_, &SweepLauncher::finished, this, [this] { hide(); });
}

}  // namespace mpwb
