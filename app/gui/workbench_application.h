// WorkbenchApplication: the QApplication of `mpwb`, which can time every event it delivers.
// The event loop's worst stall is a benchmark target (issue 6); when it is missed, the slowest
// deliveries name the culprit (receiver class, object name, event type) instead of a guess.
// Timing is off unless asked for: `mpwb --benchmark` turns it on, or MPWB_SLOW_EVENT_MS=N prints
// every delivery slower than N ms on stderr.
#pragma once
#include <QApplication>
#include <QHash>
#include <QString>

#include <vector>

namespace mpwb {

struct SlowEvent {
    double ms = 0;
    QString what;       // "mpwb::SeriesPlot 'plot' Paint"
    int count = 1;      // deliveries summed in ms (totals())
    double cpu_ms = 0;  // the GUI thread's CPU time in it (slowest() only)
};

class WorkbenchApplication : public QApplication {
public:
    WorkbenchApplication(int& argc, char** argv);

    bool notify(QObject* receiver, QEvent* event) override;

    // Keeps the `count` slowest top-level deliveries from now on (nested ones count in their outer one).
    void startTiming(int count = 8);
    // The slowest deliveries since startTiming(), slowest first; timing goes on.
    std::vector<SlowEvent> slowest() const;
    // Time spent per kind of delivery (receiver class and event type) since startTiming(),
    // largest first: where the GUI thread's time goes.
    std::vector<SlowEvent> totals() const;
    void stopTiming();

private:
    bool timing_ = false;
    size_t keep_ = 8;
    int depth_ = 0;
    double print_over_ms_ = -1;
    std::vector<SlowEvent> slowest_;
    QHash<QString, double> totals_;
    QHash<QString, int> counts_;
};

}  // namespace mpwb
