// HparamTableModel: the hyperparameter view's table, one row per run: the run, then one column
// per setting that differs across the runs, then the summary figures (hparam_data.h). Sorting
// uses kSortRole, which holds numbers for numeric columns (so 0.1 sorts after 0.01), text
// otherwise; a run without a value sorts first. HparamFilterProxy sorts it and hides the runs
// the parallel-coordinates brushes leave out.
#pragma once
#include <QAbstractTableModel>
#include <QSet>
#include <QSortFilterProxyModel>
#include <optional>

#include "widgets/hparam_axis.h"
#include "widgets/hparam_data.h"

namespace mpwb {

class HparamTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    static constexpr int kSortRole = Qt::UserRole + 1;
    static constexpr int kRunIdRole = Qt::UserRole + 2;
    enum class ColumnKind { Run, Setting, Figure };

    explicit HparamTableModel(QObject* parent = nullptr);

    void setRuns(HparamData data);
    const HparamData& runs() const { return data_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    ColumnKind columnKind(int column) const;
    int firstFigureColumn() const { return 1 + int(data_.settings.size()); }
    // The column of a setting path or figure header; -1 when there is none.
    int columnOf(const QString& header) const;
    qint64 runIdAt(int row) const { return data_.runs.at(size_t(row)).id; }
    // The parallel-coordinates axis of a setting or figure column (not the Run column).
    HparamAxis axisFor(int column) const;

private:
    QVariant display(int row, int column) const;
    QVariant sortKey(int row, int column) const;

    HparamData data_;
    std::vector<bool> numeric_setting_;  // per setting: every run's value is a number
};

class HparamFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit HparamFilterProxy(QObject* parent = nullptr);
    // Only these runs pass; nullopt lets every run through.
    void setVisibleRuns(const std::optional<QSet<qint64>>& runs);

protected:
    bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

private:
    std::optional<QSet<qint64>> visible_;
};

}  // namespace mpwb
