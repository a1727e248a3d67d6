// RunBrowser: the run table over RunStore::list_runs, its filters, and the run actions.
#include "widgets/run_browser.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>
#include <set>

#include "sessions/run_store.h"

namespace mpwb {

namespace {

enum Column { ColId, ColName, ColStatus, ColPrecision, ColDataset, ColFinal, ColBest, ColSpeed, ColStarted,
              ColDuration, ColTags, ColCount };

const RunStatus kStatuses[] = {RunStatus::Running, RunStatus::Finished, RunStatus::Stopped, RunStatus::Failed,
                               RunStatus::Interrupted};

// Numeric sort for number columns: the display text is formatted, the sort key is the value.
class NumberItem : public QTableWidgetItem {
public:
    NumberItem(const QString& text, double key) : QTableWidgetItem(text) {
        setData(Qt::UserRole + 1, key);
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem& other) const override {
        return data(Qt::UserRole + 1).toDouble() < other.data(Qt::UserRole + 1).toDouble();
    }
};

QString duration_text(double seconds) {
    if (!(seconds >= 0)) return {};
    if (seconds < 10) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);  // short runs are common
    const qint64 s = qint64(std::llround(seconds));
    if (s < 60) return QStringLiteral("%1 s").arg(s);
    if (s < 3600) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

QString percent(double v) { return std::isfinite(v) ? QString::number(100.0 * v, 'f', 2) + " %" : QStringLiteral("–"); }

QString store_message(const StoreError& e) {
    QString hint;
    switch (e.kind()) {
    case StoreError::Kind::Locked: hint = QObject::tr(" Another program holds the database; try again when it finishes."); break;
    case StoreError::Kind::Corrupt: hint = QObject::tr(" The file was left untouched; open another database."); break;
    case StoreError::Kind::NewerSchema:
        hint = QObject::tr(" It was written by a newer MP Workbench; upgrade to open it. The file was left untouched.");
        break;
    case StoreError::Kind::ReadOnly: hint = QObject::tr(" The file cannot be written."); break;
    default: break;
    }
    return QString::fromUtf8(e.what()) + hint;
}

}  // namespace

RunBrowser::RunBrowser(QWidget* parent) : QWidget(parent) {
    // --- filters ---
    text_filter_ = new QLineEdit;
    text_filter_->setObjectName("textFilter");
    text_filter_->setPlaceholderText(tr("Search name, note, config…"));
    text_filter_->setClearButtonEnabled(true);
    precision_filter_ = new QComboBox;
    precision_filter_->setObjectName("precisionFilter");
    dataset_filter_ = new QComboBox;
    dataset_filter_->setObjectName("datasetFilter");
    status_filter_ = new QComboBox;
    status_filter_->setObjectName("statusFilter");
    status_filter_->addItem(tr("any status"), -1);
    for (RunStatus s : kStatuses) status_filter_->addItem(QString::fromLatin1(to_string(s)), int(s));
    tag_filter_ = new QLineEdit;
    tag_filter_->setObjectName("tagFilter");
    tag_filter_->setPlaceholderText(tr("tag or tag=value"));
    tag_filter_->setClearButtonEnabled(true);
    show_deleted_ = new QCheckBox(tr("Trash"));
    show_deleted_->setObjectName("showDeleted");
    show_deleted_->setToolTip(tr("Show deleted runs (restore them from here)"));
    auto* refresh = new QPushButton(tr("Refresh"));
    refresh->setObjectName("refreshButton");
    auto* filters = new QHBoxLayout;
    filters->addWidget(text_filter_, 2);
    filters->addWidget(precision_filter_);
    filters->addWidget(dataset_filter_);
    filters->addWidget(status_filter_);
    filters->addWidget(tag_filter_, 1);
    filters->addWidget(show_deleted_);
    filters->addWidget(refresh);
    connect(text_filter_, &QLineEdit::textChanged, this, &RunBrowser::onFilterChanged);
    connect(tag_filter_, &QLineEdit::textChanged, this, &RunBrowser::onFilterChanged);
    for (QComboBox* c : {precision_filter_, dataset_filter_, status_filter_})
        connect(c, &QComboBox::currentIndexChanged, this, &RunBrowser::onFilterChanged);
    connect(show_deleted_, &QCheckBox::toggled, this, &RunBrowser::onFilterChanged);
    connect(refresh, &QPushButton::clicked, this, &RunBrowser::refresh);

    // --- table ---
    table_ = new QTableWidget(0, ColCount);
    table_->setObjectName("runTable");
    table_->setHorizontalHeaderLabels({tr("ID"), tr("Name"), tr("Status"), tr("Precision"), tr("Dataset"),
                                       tr("Final test acc"), tr("Best test acc"), tr("Samples/s"), tr("Started"),
                                       tr("Duration"), tr("Tags")});
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSortingEnabled(true);
    table_->setAlternatingRowColors(true);
    table_->setWordWrap(false);  // one line per run; long tag lists end in "…" (full in the tooltip)
    table_->setTextElideMode(Qt::ElideRight);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Name gets a usable fixed start width (a stretched column collapses when the others fill
    // the view); Tags takes what is left.
    table_->horizontalHeader()->setSectionResizeMode(ColName, QHeaderView::Interactive);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setColumnWidth(ColName, 200);
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunBrowser::onSelectionChanged);
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        if (row >= 0) emit openRunRequested(runIdAt(row));
    });
    error_label_ = new QLabel;
    error_label_->setObjectName("errorLabel");
    error_label_->setWordWrap(true);
    error_label_->setStyleSheet("color: #b00000;");
    error_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_label_->hide();
    count_label_ = new QLabel;
    count_label_->setObjectName("countLabel");

    // --- actions ---
    open_ = new QPushButton(tr("Open"));
    open_->setObjectName("openButton");
    compare_ = new QPushButton(tr("Compare"));
    compare_->setObjectName("compareButton");
    report_ = new QPushButton(tr("Export report…"));
    report_->setObjectName("reportButton");
    delete_ = new QPushButton(tr("Delete"));
    delete_->setObjectName("deleteButton");
    restore_ = new QPushButton(tr("Restore"));
    restore_->setObjectName("restoreButton");
    connect(open_, &QPushButton::clicked, this, [this] {
        const auto ids = selectedRunIds();
        if (!ids.isEmpty()) emit openRunRequested(ids.first());
    });
    connect(compare_, &QPushButton::clicked, this, [this] { emit compareRequested(selectedRunIds()); });
    connect(report_, &QPushButton::clicked, this, [this] { emit reportRequested(selectedRunIds()); });
    connect(delete_, &QPushButton::clicked, this, &RunBrowser::onDeleteClicked);
    connect(restore_, &QPushButton::clicked, this, &RunBrowser::onRestoreClicked);
    auto* actions = new QHBoxLayout;
    actions->addWidget(count_label_, 1);
    for (QPushButton* b : {open_, compare_, report_, delete_, restore_}) actions->addWidget(b);

    // --- details of the selected run ---
    details_ = new QLabel;
    details_->setObjectName("detailsLabel");
    details_->setWordWrap(true);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    name_edit_ = new QLineEdit;
    name_edit_->setObjectName("nameEdit");
    rename_ = new QPushButton(tr("Rename"));
    rename_->setObjectName("renameButton");
    tag_edit_ = new QLineEdit;
    tag_edit_->setObjectName("tagEdit");
    tag_edit_->setPlaceholderText(tr("key or key=value"));
    tag_ = new QPushButton(tr("Add tag"));
    tag_->setObjectName("tagButton");
    untag_ = new QPushButton(tr("Remove tag"));
    untag_->setObjectName("untagButton");
    note_ = new QPlainTextEdit;
    note_->setObjectName("noteEdit");
    note_->setPlaceholderText(tr("Notes on this run"));
    save_note_ = new QPushButton(tr("Save note"));
    save_note_->setObjectName("saveNoteButton");
    connect(rename_, &QPushButton::clicked, this, &RunBrowser::onRenameClicked);
    connect(name_edit_, &QLineEdit::returnPressed, this, &RunBrowser::onRenameClicked);
    connect(tag_, &QPushButton::clicked, this, &RunBrowser::onTagClicked);
    connect(tag_edit_, &QLineEdit::returnPressed, this, &RunBrowser::onTagClicked);
    connect(untag_, &QPushButton::clicked, this, &RunBrowser::onUntagClicked);
    connect(save_note_, &QPushButton::clicked, this, &RunBrowser::onSaveNoteClicked);
    auto* detail_box = new QGroupBox(tr("Selected run"));
    auto* dg = new QGridLayout(detail_box);
    dg->addWidget(details_, 0, 0, 1, 3);
    // Edits take the width; the buttons keep their natural size.
    auto* name_row = new QHBoxLayout;
    name_row->addWidget(name_edit_, 1);
    name_row->addWidget(rename_);
    auto* tag_row = new QHBoxLayout;
    tag_row->addWidget(tag_edit_, 1);
    tag_row->addWidget(tag_);
    tag_row->addWidget(untag_);
    for (QPushButton* b : {rename_, tag_, untag_, save_note_}) b->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    dg->addWidget(new QLabel(tr("Name")), 1, 0);
    dg->addLayout(name_row, 1, 1);
    dg->addWidget(new QLabel(tr("Tag")), 2, 0);
    dg->addLayout(tag_row, 2, 1);
    dg->addWidget(note_, 3, 0, 1, 2);
    dg->addWidget(save_note_, 4, 1, Qt::AlignRight);
    dg->setColumnStretch(1, 1);
    dg->setRowStretch(3, 1);
    detail_box->setMinimumWidth(360);

    auto* table_host = new QWidget;
    auto* tv = new QVBoxLayout(table_host);
    tv->setContentsMargins(0, 0, 0, 0);
    tv->addWidget(table_, 1);
    tv->addLayout(actions);
    auto* split = new QSplitter;
    split->addWidget(table_host);
    split->addWidget(detail_box);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);

    auto* top = new QVBoxLayout(this);
    top->addLayout(filters);
    top->addWidget(error_label_);
    top->addWidget(split, 1);

    precision_filter_->addItem(tr("any precision"));
    dataset_filter_->addItem(tr("any dataset"));
    onSelectionChanged();
}

RunBrowser::~RunBrowser() = default;

void RunBrowser::setError(const QString& message) {
    error_ = message;
    error_label_->setText(message);
    error_label_->setVisible(!message.isEmpty());
}

bool RunBrowser::setDatabase(const QString& path) {
    store_.reset();
    runs_.clear();
    path_ = path;
    filling_ = true;
    table_->setRowCount(0);
    filling_ = false;
    try {
        store_ = std::make_unique<RunStore>(path.toStdString());
    } catch (const StoreError& e) {
        setError(tr("Cannot open the run database: %1").arg(store_message(e)));
        onSelectionChanged();
        return false;
    } catch (const std::exception& e) {
        setError(tr("Cannot open the run database %1: %2").arg(path, QString::fromUtf8(e.what())));
        onSelectionChanged();
        return false;
    }
    setError({});
    refillChoices();
    refresh();
    return error_.isEmpty();
}

// The precision and dataset filters offer the values present in the database.
void RunBrowser::refillChoices() {
    if (!store_) return;
    std::set<std::string> precisions, datasets;
    try {
        RunFilter all;
        all.include_deleted = true;
        for (const Run& r : store_->list_runs(all)) {
            if (!r.precision.empty()) precisions.insert(r.precision);
            if (!r.dataset.empty()) datasets.insert(r.dataset);
        }
    } catch (const StoreError& e) {
        setError(store_message(e));
        return;
    }
    filling_ = true;
    for (auto [combo, values] : {std::pair{precision_filter_, &precisions}, std::pair{dataset_filter_, &datasets}}) {
        const QString keep = combo->currentIndex() > 0 ? combo->currentText() : QString();
        while (combo->count() > 1) combo->removeItem(1);
        for (const auto& v : *values) combo->addItem(QString::fromStdString(v));
        const int i = keep.isEmpty() ? 0 : combo->findText(keep);
        combo->setCurrentIndex(std::max(0, i));
    }
    filling_ = false;
}

RunFilter RunBrowser::currentFilter() const {
    RunFilter f;
    f.text = text_filter_->text().trimmed().toStdString();
    if (precision_filter_->currentIndex() > 0) f.precision = precision_filter_->currentText().toStdString();
    if (dataset_filter_->currentIndex() > 0) f.dataset = dataset_filter_->currentText().toStdString();
    const int st = status_filter_->currentData().toInt();
    if (st >= 0) f.status = RunStatus(st);
    const std::string tag = tag_filter_->text().trimmed().toStdString();
    if (!tag.empty()) set_tag_filter(f, tag);
    f.deleted_only = show_deleted_->isChecked();
    return f;
}

void RunBrowser::onFilterChanged() {
    if (!filling_) refresh();
}

void RunBrowser::refresh() {
    if (!store_) return;
    const QList<qint64> keep = selectedRunIds();
    try {
        runs_ = store_->list_runs(currentFilter());
        setError({});
    } catch (const StoreError& e) {
        runs_.clear();
        setError(store_message(e));
    }
    filling_ = true;
    table_->setSortingEnabled(false);
    table_->clearContents();
    table_->setRowCount(int(runs_.size()));
    for (int i = 0; i < int(runs_.size()); ++i) fillRow(i, runs_[size_t(i)]);
    table_->setSortingEnabled(true);
    filling_ = false;
    count_label_->setText(show_deleted_->isChecked() ? tr("%n deleted run(s)", "", int(runs_.size()))
                                                     : tr("%n run(s)", "", int(runs_.size())));
    selectRuns(keep);
    onSelectionChanged();
}

void RunBrowser::fillRow(int row, const Run& r) {
    auto metric = [&](const char* key) -> const LatestMetric* {
        auto it = r.latest.find(key);
        return it == r.latest.end() ? nullptr : &it->second;
    };
    auto* id = new NumberItem(QString::number(r.id), double(r.id));
    id->setData(Qt::UserRole, qlonglong(r.id));
    table_->setItem(row, ColId, id);
    auto* name = new QTableWidgetItem(QString::fromStdString(r.name));
    if (!r.note.empty()) name->setToolTip(QString::fromStdString(r.note));
    table_->setItem(row, ColName, name);
    auto* status = new QTableWidgetItem(QString::fromLatin1(to_string(r.status)));
    if (r.status == RunStatus::Failed || r.status == RunStatus::Interrupted) status->setForeground(QColor(176, 0, 0));
    if (r.status == RunStatus::Running) status->setForeground(QColor(0, 110, 0));
    table_->setItem(row, ColStatus, status);
    table_->setItem(row, ColPrecision, new QTableWidgetItem(QString::fromStdString(r.precision)));
    table_->setItem(row, ColDataset, new QTableWidgetItem(QString::fromStdString(r.dataset)));
    const LatestMetric* acc = metric("test_accuracy");
    table_->setItem(row, ColFinal, new NumberItem(acc ? percent(acc->value) : QString(), acc ? acc->value : -1));
    table_->setItem(row, ColBest, new NumberItem(acc ? percent(acc->max) : QString(), acc ? acc->max : -1));
    const LatestMetric* sps = metric("samples_per_second");
    table_->setItem(row, ColSpeed,
                    new NumberItem(sps ? QLocale().toString(sps->value, 'f', 0) : QString(), sps ? sps->value : -1));
    const double started = r.started.value_or(r.created);
    table_->setItem(row, ColStarted,
                    new NumberItem(QDateTime::fromMSecsSinceEpoch(qint64(started * 1000)).toString("yyyy-MM-dd HH:mm"),
                                   started));
    double duration = -1;
    if (r.started) duration = r.ended ? *r.ended - *r.started : (r.status == RunStatus::Running ? store_now() - *r.started : -1);
    table_->setItem(row, ColDuration, new NumberItem(duration_text(duration), duration));
    QStringList tags;
    for (const auto& [k, v] : r.tags) tags << (v.empty() ? QString::fromStdString(k) : QString::fromStdString(k + "=" + v));
    auto* tag_item = new QTableWidgetItem(tags.join(", "));
    tag_item->setToolTip(tags.join(QLatin1Char('\n')));
    table_->setItem(row, ColTags, tag_item);
}

int RunBrowser::rowCount() const { return table_->rowCount(); }

qint64 RunBrowser::runIdAt(int row) const {
    auto* item = table_->item(row, ColId);
    return item ? item->data(Qt::UserRole).toLongLong() : -1;
}

QList<qint64> RunBrowser::selectedRunIds() const {
    QList<qint64> ids;
    for (const QModelIndex& i : table_->selectionModel()->selectedRows()) ids << runIdAt(i.row());
    std::sort(ids.begin(), ids.end());
    return ids;
}

void RunBrowser::selectRuns(const QList<qint64>& ids) {
    const bool was = filling_;
    filling_ = true;
    table_->clearSelection();
    for (int row = 0; row < table_->rowCount(); ++row) {
        if (ids.contains(runIdAt(row)))
            table_->selectionModel()->select(table_->model()->index(row, 0),
                                             QItemSelectionModel::Select | QItemSelectionModel::Rows);
    }
    filling_ = was;
    onSelectionChanged();
}

void RunBrowser::onSelectionChanged() {
    if (filling_) return;
    const QList<qint64> ids = selectedRunIds();
    const bool trash = show_deleted_->isChecked();
    open_->setEnabled(ids.size() == 1 && !trash);
    compare_->setEnabled(ids.size() >= 2 && !trash);
    report_->setEnabled(!ids.isEmpty() && !trash);
    delete_->setEnabled(!ids.isEmpty() && !trash);
    restore_->setEnabled(!ids.isEmpty() && trash);
    const bool one = ids.size() == 1 && store_;
    for (QWidget* w : std::initializer_list<QWidget*>{name_edit_, rename_, tag_edit_, tag_, untag_, note_, save_note_})
        w->setEnabled(one);
    if (!one) {
        details_->setText(ids.isEmpty() ? tr("Select a run to see and edit its details; select several to compare.")
                                        : tr("%1 runs selected.").arg(ids.size()));
        name_edit_->clear();
        note_->clear();
        emit selectionChanged(ids);
        return;
    }
    const auto it = std::find_if(runs_.begin(), runs_.end(), [&](const Run& r) { return r.id == ids.first(); });
    if (it != runs_.end()) {
        const Run& r = *it;
        details_->setText(tr("<b>Run %1</b> · %2<br>%3 on %4 (%5)<br>seed %6 · %7")
                              .arg(r.id)
                              .arg(QString::fromLatin1(to_string(r.status)))
                              .arg(QString::fromStdString(r.precision), QString::fromStdString(r.dataset),
                                   QString::fromStdString(r.device.empty() ? r.backend : r.device))
                              .arg(r.seed ? QString::number(*r.seed) : tr("–"))
                              .arg(QString::fromStdString(r.machine).toHtmlEscaped()));
        name_edit_->setText(QString::fromStdString(r.name));
        note_->setPlainText(QString::fromStdString(r.note));
    }
    emit selectionChanged(ids);
}

bool RunBrowser::renameRun(qint64 id, const QString& name) {
    if (!store_) return false;
    try {
        store_->rename(id, name.trimmed().toStdString());
    } catch (const StoreError& e) {
        setError(tr("Rename failed: %1").arg(store_message(e)));
        return false;
    }
    refresh();
    return true;
}

bool RunBrowser::tagRun(qint64 id, const QString& expression) {
    if (!store_) return false;
    const QString e = expression.trimmed();
    const int eq = e.indexOf('=');
    const QString key = (eq < 0 ? e : e.left(eq)).trimmed();
    const QString value = eq < 0 ? QString() : e.mid(eq + 1).trimmed();
    if (key.isEmpty()) {
        setError(tr("A tag needs a name: write key or key=value."));
        return false;
    }
    try {
        store_->set_tag(id, key.toStdString(), value.toStdString());
    } catch (const StoreError& err) {
        setError(tr("Tagging failed: %1").arg(store_message(err)));
        return false;
    }
    refresh();
    return true;
}

bool RunBrowser::untagRun(qint64 id, const QString& key) {
    if (!store_) return false;
    QString k = key.trimmed();
    if (k.contains('=')) k = k.left(k.indexOf('=')).trimmed();
    try {
        store_->remove_tag(id, k.toStdString());
    } catch (const StoreError& e) {
        setError(tr("Removing the tag failed: %1").arg(store_message(e)));
        return false;
    }
    refresh();
    return true;
}

bool RunBrowser::setRunNote(qint64 id, const QString& note) {
    if (!store_) return false;
    try {
        store_->set_note(id, note.toStdString());
    } catch (const StoreError& e) {
        setError(tr("Saving the note failed: %1").arg(store_message(e)));
        return false;
    }
    refresh();
    return true;
}

bool RunBrowser::deleteRuns(const QList<qint64>& ids) {
    if (!store_) return false;
    try {
        for (qint64 id : ids) store_->soft_delete(id);
    } catch (const StoreError& e) {
        setError(tr("Delete failed: %1").arg(store_message(e)));
        refresh();
        return false;
    }
    refresh();
    return true;
}

bool RunBrowser::restoreRuns(const QList<qint64>& ids) {
    if (!store_) return false;
    try {
        for (qint64 id : ids) store_->restore(id);
    } catch (const StoreError& e) {
        setError(tr("Restore failed: %1").arg(store_message(e)));
        refresh();
        return false;
    }
    refresh();
    return true;
}

void RunBrowser::setShowDeleted(bool on) { show_deleted_->setChecked(on); }

void RunBrowser::onDeleteClicked() {
    const QList<qint64> ids = selectedRunIds();
    if (ids.isEmpty()) return;
    if (confirm_delete_) {
        const auto answer = QMessageBox::question(
            this, tr("Delete runs"),
            tr("Move %n run(s) to the trash? They can be restored from the Trash view until it is purged.", "",
               int(ids.size())),
            QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) return;
    }
    deleteRuns(ids);
}

void RunBrowser::onRestoreClicked() { restoreRuns(selectedRunIds()); }

void RunBrowser::onRenameClicked() {
    const auto ids = selectedRunIds();
    if (ids.size() == 1) renameRun(ids.first(), name_edit_->text());
}

void RunBrowser::onTagClicked() {
    const auto ids = selectedRunIds();
    if (ids.size() == 1 && tagRun(ids.first(), tag_edit_->text())) tag_edit_->clear();
}

void RunBrowser::onUntagClicked() {
    const auto ids = selectedRunIds();
    if (ids.size() == 1 && untagRun(ids.first(), tag_edit_->text())) tag_edit_->clear();
}

void RunBrowser::onSaveNoteClicked() {
    const auto ids = selectedRunIds();
    if (ids.size() == 1) setRunNote(ids.first(), note_->toPlainText());
}

}  // namespace mpwb
