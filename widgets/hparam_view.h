// HparamView: the hyperparameter view of the workbench, for a sweep or any selection of stored
// runs. A bar on top picks the source (a sweep of the database, or the runs last sent from the
// run browser), the metric the plot ends in and colours by, and the columns; below, the
// parallel-coordinates plot and the table side by side. Brushes on the plot filter the table;
// selecting runs in either selects them in the other and asks (overlayRequested) for their
// curves on the usual plots. It reads the database read-only and never drives training.
// The settings a sweep's spec names as axes are shown first; the others that differ (derived
// from them, like a precision's weight-gradient format) wait in the column chooser.
#pragma once
#include <QList>
#include <QString>
#include <QWidget>
#include <functional>

#include "widgets/hparam_data.h"

class QComboBox;
class QLabel;
class QMenu;
class QPushButton;
class QTableView;
class QToolButton;

namespace mpwb {

class HparamFilterProxy;
class RunStore;
class HparamTableModel;
class ParallelCoordinatesPlot;

class HparamView : public QWidget {
    Q_OBJECT
public:
    explicit HparamView(QWidget* parent = nullptr);

    // The run database; refreshes the list of sweeps.
    void setDatabase(const QString& path);
    QString databasePath() const { return path_; }
    // Shows these runs (the "Compare hyperparameters" of the run browser).
    bool showRuns(const QList<qint64>& ids);
    // Shows a sweep's runs; false (with the reason in errorText) when it cannot be read.
    bool showSweep(qint64 sweep_id);
    // Re-reads the sweeps the source picker offers.
    void refreshSweeps();
    // Shows data already loaded (tests, and the loaders above).
    void showData(HparamData data);
    QString errorText() const { return error_; }

    // The columns the chooser shows; setting columns also become plot axes.
    void setColumnShown(int column, bool shown);
    bool columnShown(int column) const;
    // Makes `figure_column` the metric axis of the plot.
    void setMetricColumn(int figure_column);
    QList<qint64> selectedRunIds() const;
    void selectRuns(const QList<qint64>& ids);

    HparamTableModel* model() const { return model_; }
    HparamFilterProxy* proxy() const { return proxy_; }
    QTableView* table() const { return table_; }
    ParallelCoordinatesPlot* plot() const { return plot_; }
    QMenu* columnMenu() const { return column_menu_; }

protected:
    void showEvent(QShowEvent* event) override;

signals:
    // Runs selected in the table or the plot: show their curves.
    void overlayRequested(const QList<qint64>& ids);

private:
    QWidget* makeBar();
    bool load(const std::function<HparamData(RunStore&)>& read);
    void rebuildColumnMenu();
    void rebuildPlot();
    void onTableSelectionChanged();
    void onPlotSelectionChanged(const QList<qint64>& ids);
    void onFilterChanged();
    void setError(const QString& message);

    QString path_;
    QString error_;
    QList<qint64> last_runs_;
    bool syncing_ = false;
    int metric_column_ = -1;
    HparamTableModel* model_ = nullptr;
    HparamFilterProxy* proxy_ = nullptr;
    QTableView* table_ = nullptr;
    ParallelCoordinatesPlot* plot_ = nullptr;
    QComboBox* source_ = nullptr;
    QComboBox* metric_ = nullptr;
    QToolButton* columns_ = nullptr;
    QMenu* column_menu_ = nullptr;
    QPushButton* clear_filters_ = nullptr;
    QLabel* count_label_ = nullptr;
    QLabel* error_label_ = nullptr;
};

}  // namespace mpwb
