// Runs a built program as a user would (QProcess) and keeps what it said: the one runner of the
// CLI tests. The limits only end a program that would never finish (waitForFinished returns at
// its end), so they are generous enough for a sanitizer build on a loaded machine.
#pragma once
#include <QByteArray>
#include <QProcess>
#include <QString>
#include <QStringList>

struct ProgramResult {
    int exit_code = -1;  // -1: did not start, crashed or was killed at the limit
    bool finished = false;
    QByteArray out, err;
};

inline ProgramResult run_program(const QString& program, const QStringList& args, int timeout_ms = 300000) {
    QProcess p;
    p.start(program, args);
    ProgramResult r;
    if (!p.waitForStarted(60000)) return r;
    r.finished = p.waitForFinished(timeout_ms);
    if (!r.finished) {
        p.kill();
        p.waitForFinished();
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}
