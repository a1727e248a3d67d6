// HparamView: the source and metric pickers, the column chooser, and the links between the
// parallel-coordinates plot and the table (see hparam_view.h).
#include "widgets/hparam_view.h"

#include <QAction>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "sessions/run_store.h"
#include "widgets/hparam_table_model.h"
#include "widgets/parallel_coordinates_plot.h"

namespace mpwb {

namespace {
// More differing settings than this start hidden (a precision sweep also changes the derived
// scaler and format settings); the column chooser shows them.
constexpr int kMaxInitialAxes = 8;
constexpr int kSelectedRunsSource = -1;

// The view only reads, and leaves crash detection to the run browser's writable connection.
RunStore::Options reading() {
    RunStore::Options o;
    o.read_only = true;
    o.detect_interrupted = false;
    return o;
}
}  // namespace

HparamView::HparamView(QWidget* parent) : QWidget(parent) {
    model_ = new HparamTableModel(this);
    proxy_ = new HparamFilterProxy(this);
    proxy_->setSourceModel(model_);
    table_ = new QTableView;
    table_->setObjectName(QStringLiteral("hparamTable"));
    table_->setModel(proxy_);
    table_->setSortingEnabled(true);
    table_->sortByColumn(0, Qt::AscendingOrder);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setAlternatingRowColors(true);
    table_->setWordWrap(false);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setContextMenuPolicy(Qt::CustomContextMenu);
    // The run's name can be long ("<sweep> #3 lr=0.1 precision=fp16-mixed"): a fixed start
    // width, the rest in its tooltip.
    table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Interactive);
    table_->setColumnWidth(0, 190);
    table_->setTextElideMode(Qt::ElideRight);
    plot_ = new ParallelCoordinatesPlot;
    plot_->setMinimumSize(320, 140);
    error_label_ = new QLabel;
    error_label_->setObjectName(QStringLiteral("hparamError"));
    error_label_->setWordWrap(true);
    error_label_->setStyleSheet(QStringLiteral("color: #b00000;"));
    error_label_->hide();

    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(plot_);
    split->addWidget(table_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(makeBar());
    layout->addWidget(error_label_);
    layout->addWidget(split, 1);

    connect(table_->horizontalHeader(), &QHeaderView::customContextMenuRequested, this,
            [this](const QPoint& p) { column_menu_->popup(table_->horizontalHeader()->mapToGlobal(p)); });
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &HparamView::onTableSelectionChanged);
    connect(plot_, &ParallelCoordinatesPlot::runSelectionChanged, this, &HparamView::onPlotSelectionChanged);
    connect(plot_, &ParallelCoordinatesPlot::filterChanged, this, &HparamView::onFilterChanged);
    showData({});
}

QWidget* HparamView::makeBar() {
    source_ = new QComboBox;
    source_->setObjectName(QStringLiteral("hparamSource"));
    source_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    source_->addItem(tr("Runs from the run browser"), kSelectedRunsSource);
    metric_ = new QComboBox;
    metric_->setObjectName(QStringLiteral("hparamMetric"));
    for (const HparamFigure& f : hparam_figures()) metric_->addItem(tr(f.header));
    columns_ = new QToolButton;
    columns_->setObjectName(QStringLiteral("hparamColumns"));
    columns_->setText(tr("Columns"));
    columns_->setToolTip(tr("Choose the table's columns; the settings shown are the plot's axes"));
    columns_->setPopupMode(QToolButton::InstantPopup);
    column_menu_ = new QMenu(columns_);
    columns_->setMenu(column_menu_);
    clear_filters_ = new QPushButton(tr("Clear filters"));
    clear_filters_->setObjectName(QStringLiteral("hparamClearFilters"));
    clear_filters_->setToolTip(tr("Remove every range drawn on the plot's axes"));
    count_label_ = new QLabel;
    count_label_->setObjectName(QStringLiteral("hparamCount"));
    auto* bar = new QWidget;
    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(new QLabel(tr("Runs:")));
    row->addWidget(source_);
    row->addWidget(new QLabel(tr("Metric:")));
    row->addWidget(metric_);
    row->addWidget(columns_);
    row->addWidget(clear_filters_);
    row->addWidget(count_label_, 1);
    connect(source_, &QComboBox::activated, this, [this](int index) {
        const qint64 id = source_->itemData(index).toLongLong();
        if (id == kSelectedRunsSource)
            showRuns(last_runs_);
        else
            showSweep(id);
    });
    connect(metric_, &QComboBox::currentIndexChanged, this,
            [this](int index) { setMetricColumn(model_->firstFigureColumn() + index); });
    connect(clear_filters_, &QPushButton::clicked, plot_, &ParallelCoordinatesPlot::clearBrushes);
    return bar;
}

void HparamView::setError(const QString& message) {
    error_ = message;
    error_label_->setText(message);
    error_label_->setVisible(!message.isEmpty());
}

void HparamView::setDatabase(const QString& path) {
    path_ = path;
    refreshSweeps();
}

bool HparamView::load(const std::function<HparamData(RunStore&)>& read) {
    try {
        RunStore store(path_.toStdString(), reading());
        showData(read(store));
        setError({});
        return true;
    } catch (const std::exception& e) {
        setError(tr("Cannot show the runs: %1").arg(QString::fromUtf8(e.what())));
        return false;
    }
}

void HparamView::refreshSweeps() {
    const QVariant shown = source_->currentData();
    while (source_->count() > 1) source_->removeItem(1);
    if (path_.isEmpty()) return;
    try {
        RunStore store(path_.toStdString(), reading());
        for (const SweepRecord& s : store.list_sweeps())
            source_->addItem(tr("Sweep #%1 %2 (%3 of %4 runs)")
                                 .arg(s.id)
                                 .arg(QString::fromStdString(s.name))
                                 .arg(s.runs.size())
                                 .arg(s.run_count),
                             qlonglong(s.id));
    } catch (const std::exception& e) {
        setError(tr("Cannot list the sweeps: %1").arg(QString::fromUtf8(e.what())));
    }
    source_->setCurrentIndex(std::max(0, source_->findData(shown)));
}

void HparamView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    refreshSweeps();  // sweeps run from a terminal meanwhile appear in the picker
}

bool HparamView::showRuns(const QList<qint64>& ids) {
    last_runs_ = ids;
    source_->setCurrentIndex(0);
    const std::vector<std::int64_t> run_ids(ids.begin(), ids.end());
    return load([&](RunStore& store) { return load_hparam_data(store, run_ids); });
}

bool HparamView::showSweep(qint64 sweep_id) {
    refreshSweeps();
    const int index = source_->findData(qlonglong(sweep_id));
    if (index >= 0) source_->setCurrentIndex(index);
    return load([&](RunStore& store) { return load_sweep_hparam_data(store, sweep_id); });
}

void HparamView::showData(HparamData data) {
    const std::vector<std::string> swept = data.swept;
    model_->setRuns(std::move(data));
    metric_column_ = model_->firstFigureColumn() + std::max(0, metric_->currentIndex());
    for (int c = 0; c < model_->columnCount(); ++c) {
        const bool setting = model_->columnKind(c) == HparamTableModel::ColumnKind::Setting;
        const std::string path = model_->headerData(c, Qt::Horizontal).toString().toStdString();
        const bool shown =
            !setting || (swept.empty() ? c <= kMaxInitialAxes
                                       : std::find(swept.begin(), swept.end(), path) != swept.end());
        table_->setColumnHidden(c, !shown);
    }
    rebuildColumnMenu();
    rebuildPlot();
}

void HparamView::rebuildColumnMenu() {
    column_menu_->clear();
    for (int c = 1; c < model_->columnCount(); ++c) {
        if (c == model_->firstFigureColumn()) column_menu_->addSeparator();
        QAction* a = column_menu_->addAction(model_->headerData(c, Qt::Horizontal).toString());
        a->setObjectName(QStringLiteral("column_%1").arg(c));
        a->setCheckable(true);
        a->setChecked(columnShown(c));
        connect(a, &QAction::toggled, this, [this, c](bool on) { setColumnShown(c, on); });
    }
}

void HparamView::setColumnShown(int column, bool shown) {
    if (column <= 0 || column >= model_->columnCount() || columnShown(column) == shown) return;
    table_->setColumnHidden(column, !shown);
    for (QAction* a : column_menu_->actions())
        if (a->objectName() == QStringLiteral("column_%1").arg(column)) a->setChecked(shown);
    if (model_->columnKind(column) == HparamTableModel::ColumnKind::Setting) rebuildPlot();
}

bool HparamView::columnShown(int column) const { return !table_->isColumnHidden(column); }

void HparamView::setMetricColumn(int figure_column) {
    if (model_->columnKind(figure_column) != HparamTableModel::ColumnKind::Figure) return;
    metric_column_ = figure_column;
    const int index = figure_column - model_->firstFigureColumn();
    if (metric_->currentIndex() != index) metric_->setCurrentIndex(index);  // comes back here
    rebuildPlot();
}

void HparamView::rebuildPlot() {
    std::vector<HparamAxis> axes;
    for (int c = 1; c < model_->firstFigureColumn(); ++c)
        if (columnShown(c)) axes.push_back(model_->axisFor(c));
    if (model_->rowCount() > 0 && metric_column_ >= 0) axes.push_back(model_->axisFor(metric_column_));
    std::vector<qint64> ids;
    for (int r = 0; r < model_->rowCount(); ++r) ids.push_back(model_->runIdAt(r));
    const QList<qint64> keep = selectedRunIds();
    plot_->setAxes(std::move(axes), std::move(ids));
    plot_->setSelectedRuns(keep);
    onFilterChanged();
}

void HparamView::onFilterChanged() {
    if (plot_->filtered())
        proxy_->setVisibleRuns(plot_->visibleRuns());
    else
        proxy_->setVisibleRuns(std::nullopt);
    clear_filters_->setEnabled(plot_->filtered());
    const int total = model_->rowCount();
    count_label_->setText(proxy_->rowCount() == total
                              ? tr("%n run(s)", "", total)
                              : tr("%1 of %n run(s) inside the ranges", "", total).arg(proxy_->rowCount()));
}

QList<qint64> HparamView::selectedRunIds() const {
    QList<qint64> ids;
    for (const QModelIndex& index : table_->selectionModel()->selectedRows())
        ids << index.data(HparamTableModel::kRunIdRole).toLongLong();
    return ids;
}

void HparamView::selectRuns(const QList<qint64>& ids) {
    QItemSelection selection;
    for (int r = 0; r < proxy_->rowCount(); ++r) {
        const QModelIndex index = proxy_->index(r, 0);
        if (ids.contains(index.data(HparamTableModel::kRunIdRole).toLongLong()))
            selection.select(index, index);
    }
    table_->selectionModel()->select(selection,
                                     QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

void HparamView::onTableSelectionChanged() {
    if (syncing_) return;
    const QList<qint64> ids = selectedRunIds();
    plot_->setSelectedRuns(ids);
    if (!ids.isEmpty()) emit overlayRequested(ids);
}

void HparamView::onPlotSelectionChanged(const QList<qint64>& ids) {
    syncing_ = true;
    selectRuns(ids);
    syncing_ = false;
    if (!ids.isEmpty()) emit overlayRequested(ids);
}

}  // namespace mpwb
