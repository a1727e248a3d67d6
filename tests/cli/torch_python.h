// The python3 the PyTorch export tests run their checkers with: one that imports torch and numpy.
// Shared by test_pytorch_export and test_gpt_export, so both look in the same places and skip for
// the same reason where there is none.
#pragma once
#include <QString>
#include <QStringList>

#include "tests/cli/program_runner.h"

// $MPWB_PYTHON, Debian's, then the one on PATH (a pyenv shim on PATH may lack Debian's packages).
// Empty when none imports torch and numpy; `why` then lists the tries.
inline QString find_torch_python(QString& why) {
    QStringList candidates;
    if (qEnvironmentVariableIsSet("MPWB_PYTHON")) candidates << qEnvironmentVariable("MPWB_PYTHON");
    candidates << "/usr/bin/python3"
               << "python3";
    for (const QString& python : candidates) {
        const ProgramResult r = run_program(python, {"-c", "import torch, numpy"}, 120000);
        if (r.exit_code == 0) return python;
        why += python + ": " +
               (r.exit_code < 0 ? QString("does not run")
                                : QString::fromUtf8(r.err).trimmed().split('\n').last()) +
               "; ";
    }
    return {};
}
