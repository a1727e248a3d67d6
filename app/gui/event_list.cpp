// EventList: the event table and its kind and run filters.
#include "app/gui/event_list.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace mpwb {

namespace {
constexpr int kMaxRows = 5000;  // the list keeps the newest; the store keeps them all
enum Column { kRun, kStep, kKind, kSource, kDetail, kColumnCount };

QComboBox* make_filter(const char* object_name, const QString& all, const QString& tip) {
    auto* combo = new QComboBox;
    combo->setObjectName(object_name);
    combo->addItem(all);
    combo->setToolTip(tip);
    combo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    return combo;
}
}  // namespace

EventList::EventList(QWidget* parent) : QWidget(parent) {
    table_ = new QTableWidget(0, kColumnCount);
    table_->setObjectName(QStringLiteral("eventList"));
    table_->setHorizontalHeaderLabels({tr("Run"), tr("Step"), tr("Event"), tr("Source"), tr("Detail")});
    // The short columns fit their content; Detail takes the rest of the width.
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(kDetail, QHeaderView::Stretch);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    kind_filter_ = make_filter("eventKindFilter", tr("all events"), tr("Show only events of this kind"));
    run_filter_ = make_filter("eventRunFilter", tr("all runs"), tr("Show only this run's events"));
    for (QComboBox* f : {kind_filter_, run_filter_})
        connect(f, &QComboBox::currentIndexChanged, this, &EventList::applyFilters);
    auto* filters = new QHBoxLayout;
    filters->addWidget(new QLabel(tr("Show")));
    filters->addWidget(kind_filter_);
    filters->addWidget(new QLabel(tr("of")));
    filters->addWidget(run_filter_);
    filters->addStretch(1);
    auto* column = new QVBoxLayout(this);
    column->setContentsMargins(0, 0, 0, 0);
    column->addLayout(filters);
    column->addWidget(table_, 1);
}

void EventList::offer(QComboBox* filter, const QString& value) {
    if (filter->findText(value) < 0) filter->addItem(value);
}

bool EventList::shown(int row) const {
    const auto matches = [&](QComboBox* filter, int column) {
        return filter->currentIndex() <= 0 || table_->item(row, column)->text() == filter->currentText();
    };
    return matches(kind_filter_, kKind) && matches(run_filter_, kRun);
}

void EventList::applyFilters() {
    for (int row = 0; row < table_->rowCount(); ++row) table_->setRowHidden(row, !shown(row));
}

int EventList::visibleRowCount() const {
    int n = 0;
    for (int row = 0; row < table_->rowCount(); ++row) n += table_->isRowHidden(row) ? 0 : 1;
    return n;
}

void EventList::addEvent(const QString& run, int64_t step, const QString& kind, const QString& source,
                         const QString& text, const QString& json) {
    if (table_->rowCount() >= kMaxRows) table_->removeRow(0);
    const int row = table_->rowCount();
    table_->insertRow(row);
    const QString cells[kColumnCount] = {run, QString::number(step), kind, source, text};
    for (int c = 0; c < kColumnCount; ++c) table_->setItem(row, c, new QTableWidgetItem(cells[c]));
    table_->item(row, kDetail)->setToolTip(json.isEmpty() ? text : json);  // the numbers as recorded
    offer(kind_filter_, kind);
    offer(run_filter_, run);
    table_->setRowHidden(row, !shown(row));
}

// A chosen filter stays chosen (the next run's events of that kind show, the others hide); the
// other choices go with the rows.
void EventList::clear() {
    table_->setRowCount(0);
    for (QComboBox* f : {kind_filter_, run_filter_}) {
        const QSignalBlocker quiet(f);
        for (int i = f->count() - 1; i > 0; --i)
            if (i != f->currentIndex()) f->removeItem(i);
    }
}

void EventList::beginBatch() { table_->setUpdatesEnabled(false); }

void EventList::endBatch() {
    table_->setUpdatesEnabled(true);
    table_->scrollToBottom();
}

}  // namespace mpwb
