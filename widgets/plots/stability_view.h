// StabilityView: the workbench's "Stability" tab. The instability indicators of the runs on the
// board (core/nn/stability_values.h), one plot per family (kStabilityPlots) with one line per
// run and block, the output's one line per run; a comparison overlays its runs. Live runs hand
// their records in batches (appendRecords, from the board's GUI drain tick) and the plots take
// them at refresh(), at most a few times a second and only while the tab is shown; stored runs
// come with their series (setStoredSeries). Without any indicator the tab says how to get them.
#pragma once
#include <QElapsedTimer>
#include <QString>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/train/run_records.h"
#include "sessions/stability_series.h"

class QCPGraph;
class QLabel;
class QStackedWidget;

namespace mpwb {

class PlotWidget;

class StabilityView : public QWidget {
    Q_OBJECT
public:
    explicit StabilityView(QWidget* parent = nullptr);

    // Runs in the board's order: the index addRun returns is the board's index.
    int addRun(const QString& label);
    void clear();
    // Live records, in step order; batched until refresh().
    void appendRecords(int run, const std::vector<StabilityRecord>& records);
    // A stored run's series (read_stability_series); batched until refresh().
    void setStoredSeries(int run, const std::vector<StabilitySeries>& series);
    // Hands the batched points to their plots, one queued replot each, when the last refresh is
    // at least kMinRefreshMs old or force is set; a refresh that comes too soon is retried once
    // the interval is up, so points that arrive with no live run to tick (a stored run opened
    // just after another refresh) are drawn too. Call while the tab is shown.
    void refresh(bool force = false);
    bool hasPending() const { return pending_; }

    PlotWidget* plot(size_t family) const { return plots_.at(family); }
    size_t plotCount() const { return plots_.size(); }
    // Lines with at least one point drawn (tests).
    int lineCount() const;
    QLabel* emptyLabel() const { return empty_; }
    bool emptyShown() const;

    static constexpr qint64 kMinRefreshMs = 200;
    static const char* const kEmptyText;

private:
    struct Line {
        QCPGraph* graph = nullptr;
        QVector<double> steps, values;  // not drawn yet
    };
    void add(int run, const std::string& source, const std::string& indicator, double step, double value);
    Line* line(int run, const std::string& source, const std::string& indicator);
    QString legendName(int run, const std::string& source) const;
    void renameLegends();

    std::vector<QString> runs_;
    std::vector<PlotWidget*> plots_;
    // (run, source, indicator) -> its line; colours per (run, source).
    std::map<std::tuple<int, std::string, std::string>, Line> lines_;
    std::map<std::pair<int, std::string>, int> colour_index_;
    QStackedWidget* stack_ = nullptr;
    QLabel* empty_ = nullptr;
    QElapsedTimer last_refresh_;
    QTimer deferred_refresh_;  // single shot: the refresh that came too soon
    bool pending_ = false;
};

}  // namespace mpwb
