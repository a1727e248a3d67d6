// The run ids one Open shows together, from the run browser's selection or `mpwb --open-runs`:
// each run once, and at most kMaxOpenRuns of them. Every run's curves, histograms and events load
// on the GUI thread, and each added run rescales the plots over all runs shown, so an unbounded
// list (one id given 1,000 times) kept the window busy for minutes, --quit-after included.
#pragma once
#include <QList>
#include <QString>

namespace mpwb {

// More runs than fit a legend; opening this many takes a second or two.
inline constexpr int kMaxOpenRuns = 64;

// Each id once, in the order it first appears.
QList<qint64> distinct_run_ids(const QList<qint64>& ids);

struct OpenRunsArgument {
    QList<qint64> ids;  // distinct, in the order given
    QString value;      // what is wrong, as the message quotes it (the part, or the list cut short)
    QString problem;    // empty when ids is the list to open
};

// `--open-runs 3,4,4,7`: comma-separated run ids (positive whole numbers), a repeat counting once;
// a part that is no run id, no id at all, or more than kMaxOpenRuns distinct ids is a problem.
OpenRunsArgument parse_open_runs(const QString& text);

}  // namespace mpwb
