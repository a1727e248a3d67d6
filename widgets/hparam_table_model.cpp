// HparamTableModel and HparamFilterProxy (see hparam_table_model.h).
#include "widgets/hparam_table_model.h"

#include <limits>

namespace mpwb {

HparamTableModel::HparamTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void HparamTableModel::setRuns(HparamData data) {
    beginResetModel();
    data_ = std::move(data);
    numeric_setting_.clear();
    for (const auto& setting : data_.settings) {
        bool numeric = true;
        for (const auto& v : setting.values) numeric = numeric && (!v || hparam_value_number(v));
        numeric_setting_.push_back(numeric);
    }
    endResetModel();
}

int HparamTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(data_.runs.size());
}

int HparamTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : firstFigureColumn() + int(hparam_figures().size());
}

HparamTableModel::ColumnKind HparamTableModel::columnKind(int column) const {
    if (column == 0) return ColumnKind::Run;
    return column < firstFigureColumn() ? ColumnKind::Setting : ColumnKind::Figure;
}

int HparamTableModel::columnOf(const QString& header) const {
    for (int c = 0; c < columnCount(); ++c)
        if (headerData(c, Qt::Horizontal).toString() == header) return c;
    return -1;
}

QVariant HparamTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (columnKind(section)) {
        case ColumnKind::Run:
            return tr("Run");
        case ColumnKind::Setting:
            return QString::fromStdString(data_.settings.at(size_t(section - 1)).path);
        case ColumnKind::Figure:
            return tr(hparam_figures().at(size_t(section - firstFigureColumn())).header);
    }
    return {};
}

QVariant HparamTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    const int row = index.row(), column = index.column();
    switch (role) {
        case Qt::DisplayRole:
            return display(row, column);
        case kSortRole:
            return sortKey(row, column);
        case kRunIdRole:
            return runIdAt(row);
        case Qt::TextAlignmentRole: {
            const bool numeric =
                columnKind(column) == ColumnKind::Figure ||
                (columnKind(column) == ColumnKind::Setting && numeric_setting_[size_t(column - 1)]);
            return numeric ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                           : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
        }
        case Qt::ToolTipRole:
            if (columnKind(column) == ColumnKind::Run)
                return tr("%1 (%2)").arg(display(row, column).toString(),
                                         QString::fromLatin1(to_string(data_.runs[size_t(row)].status)));
            return {};
        default:
            return {};
    }
}

QVariant HparamTableModel::display(int row, int column) const {
    const HparamRun& run = data_.runs.at(size_t(row));
    switch (columnKind(column)) {
        case ColumnKind::Run:
            return QStringLiteral("#%1 %2").arg(run.id).arg(QString::fromStdString(run.name));
        case ColumnKind::Setting:
            return QString::fromStdString(
                hparam_value_text(data_.settings[size_t(column - 1)].values[size_t(row)]));
        case ColumnKind::Figure: {
            const HparamFigure& f = hparam_figures()[size_t(column - firstFigureColumn())];
            const auto v = f.value(run.figures);
            return v ? QString::fromStdString(f.text(*v)) : QString();
        }
    }
    return {};
}

QVariant HparamTableModel::sortKey(int row, int column) const {
    constexpr double kMissing = -std::numeric_limits<double>::infinity();
    const HparamRun& run = data_.runs.at(size_t(row));
    switch (columnKind(column)) {
        case ColumnKind::Run:
            return double(run.id);
        case ColumnKind::Setting: {
            const auto& v = data_.settings[size_t(column - 1)].values[size_t(row)];
            if (numeric_setting_[size_t(column - 1)]) return hparam_value_number(v).value_or(kMissing);
            return v ? QString::fromStdString(hparam_value_text(v)) : QString();
        }
        case ColumnKind::Figure:
            return hparam_figures()[size_t(column - firstFigureColumn())]
                .value(run.figures)
                .value_or(kMissing);
    }
    return {};
}

HparamAxis HparamTableModel::axisFor(int column) const {
    const std::string name = headerData(column, Qt::Horizontal).toString().toStdString();
    if (columnKind(column) == ColumnKind::Setting)
        return HparamAxis::from_json_values(name, data_.settings[size_t(column - 1)].values);
    const HparamFigure& f = hparam_figures()[size_t(column - firstFigureColumn())];
    std::vector<std::optional<double>> values;
    for (const auto& run : data_.runs) values.push_back(f.value(run.figures));
    return HparamAxis::from_numbers(name, values, f.text);
}

HparamFilterProxy::HparamFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
    setSortRole(HparamTableModel::kSortRole);
}

void HparamFilterProxy::setVisibleRuns(const std::optional<QSet<qint64>>& runs) {
    visible_ = runs;
    invalidateFilter();
}

bool HparamFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
    if (!visible_) return true;
    const QModelIndex index = sourceModel()->index(source_row, 0, source_parent);
    return visible_->contains(index.data(HparamTableModel::kRunIdRole).toLongLong());
}

}  // namespace mpwb
