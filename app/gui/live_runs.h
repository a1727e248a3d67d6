// LiveRuns: the runs the workbench trains now. Each is a slot of the TrainingController's
// updates and a run on the PlotBoard; a batch of updates goes into the plots, the event list and
// the precision panel's readout (which follows the run whose loss scale can be tuned: the mixed
// side of a comparison); a text run's samples go to the Samples tab, which can generate from the
// run once it ended. A run's end and its failures come out as signals, which the window
// shows in its status bar and error boxes.
#pragma once
#include <QObject>
#include <QString>

#include <utility>
#include <vector>

#include "app/gui/training_controller.h"

namespace mpwb {

class EventList;
class PlotBoard;
class PrecisionPanel;

class LiveRuns : public QObject {
    Q_OBJECT
public:
    LiveRuns(PlotBoard* board, EventList* events, PrecisionPanel* precision, QObject* parent = nullptr);

    // New live runs, one slot each (label, precision name): the board, the event list and the
    // panel's events start empty, on the Curves tab.
    void begin(const std::vector<std::pair<QString, QString>>& runs);
    // No live runs (the board shows stored ones): updates for the old slots are dropped.
    void forget();
    // One batch of the controller's updates.
    void route(const std::vector<RunUpdate>& updates);
    // GUI-thread seconds spent in route (benchmark figure).
    double updateSeconds() const { return update_seconds_; }

signals:
    // A run ended: its status, steps, accuracy and throughput in one line.
    void runEnded(const QString& text);
    // A run failed, or its recording stopped (title says which): the error and what is kept.
    void runFailed(const QString& title, const QString& text);

private:
    void routeOne(const RunUpdate& u, bool readout_run);
    void showReadout(const RunUpdate& u);
    void addEvents(const RunUpdate& u, const QString& label, bool readout_run);
    void reportEnd(const RunUpdate& u, const QString& label);
    void reportErrors(const RunUpdate& u, const QString& label);

    PlotBoard* board_;
    EventList* events_;
    PrecisionPanel* precision_;
    std::vector<int> board_runs_;  // slot -> board index
    std::vector<QString> labels_;  // slot -> label
    std::vector<bool> text_runs_;  // slot -> trains on text
    double update_seconds_ = 0;
};

}  // namespace mpwb
