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
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>
#include <set>

#include "sessions/run_figures.h"
#include "sessions/run_store.h"

namespace mpwb {

namespace {

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

QString store_message(const StoreError& e) {
    QString hint;
    switch (e.kind()) {
        case StoreError::Kind::Locked:
            hint = QObject::tr(" Another program holds the database; try again when it finishes.");
            break;
        case StoreError::Kind::Corrupt:
            hint = QObject::tr(" The file was left untouched; open another database.");
            break;
        case StoreError::Kind::NewerSchema:
            hint = QObject::tr(
                " It was written by a newer MP Workbench; upgrade to open it. The file was left untouched.");
            break;
        case StoreError::Kind::ReadOnly:
            hint = QObject::tr(" The file cannot be written.");
            break;
        default:
            break;
    }
    return QString::fromUtf8(e.what()) + hint;
}

QTableWidgetItem* text_item(const std::string& text) {
    return new QTableWidgetItem(QString::fromStdString(text));
}

QTableWidgetItem* accuracy_item(const std::optional<double>& v) {
    return new NumberItem(v ? QString::fromStdString(percent_text(*v)) : QString(), v.value_or(-1));
}

QTableWidgetItem* id_item(const Run& r, const RunFigures&) {
    auto* id = new NumberItem(QString::number(r.id), double(r.id));
    id->setData(Qt::UserRole, qlonglong(r.id));
    return id;
}

QTableWidgetItem* name_item(const Run& r, const RunFigures&) {
    auto* name = text_item(r.name);
    if (!r.note.empty()) name->setToolTip(QString::fromStdString(r.note));
    return name;
}

QTableWidgetItem* status_item(const Run& r, const RunFigures&) {
    auto* status = new QTableWidgetItem(QString::fromLatin1(to_string(r.status)));
    if (r.status == RunStatus::Failed || r.status == RunStatus::Interrupted)
        status->setForeground(QColor(176, 0, 0));
    if (r.status == RunStatus::Running) status->setForeground(QColor(0, 110, 0));
    return status;
}

QTableWidgetItem* speed_item(const Run&, const RunFigures& f) {
    const auto& v = f.samples_per_second;
    return new NumberItem(v ? QString::fromStdString(samples_per_second_text(*v)) : QString(),
                          v.value_or(-1));
}

QTableWidgetItem* started_item(const Run& r, const RunFigures&) {
    const double started = r.started.value_or(r.created);
    return new NumberItem(QDateTime::fromMSecsSinceEpoch(qint64(started * 1000)).toString("yyyy-MM-dd HH:mm"),
                          started);
}

QTableWidgetItem* duration_item(const Run&, const RunFigures& f) {
    const double duration = f.duration_seconds.value_or(-1);
    return new NumberItem(duration_text(duration), duration);
}

QTableWidgetItem* tags_item(const Run& r, const RunFigures&) {
    QStringList tags;
    for (const auto& [k, v] : r.tags)
        tags << (v.empty() ? QString::fromStdString(k) : QString::fromStdString(k + "=" + v));
    auto* item = new QTableWidgetItem(tags.join(", "));
    item->setToolTip(tags.join(QLatin1Char('\n')));
    return item;
}

// The run table's columns, in order: header and the cell made from a run and its figures
// (sessions/run_figures.h, so the table reads as `runs compare` and the report do).
struct ColumnSpec {
    const char* header;
    QTableWidgetItem* (*cell)(const Run&, const RunFigures&);
};
const ColumnSpec kColumns[] = {
    {QT_TR_NOOP("ID"), id_item},
    {QT_TR_NOOP("Name"), name_item},
    {QT_TR_NOOP("Status"), status_item},
    {QT_TR_NOOP("Precision"), [](const Run& r, const RunFigures&) { return text_item(r.precision); }},
    {QT_TR_NOOP("Dataset"), [](const Run& r, const RunFigures&) { return text_item(r.dataset); }},
    {QT_TR_NOOP("Final test acc"),
     [](const Run&, const RunFigures& f) { return accuracy_item(f.final_test_accuracy); }},
    {QT_TR_NOOP("Best test acc"),
     [](const Run&, const RunFigures& f) { return accuracy_item(f.best_test_accuracy); }},
    {QT_TR_NOOP("Samples/s"), speed_item},
    {QT_TR_NOOP("Started"), started_item},
    {QT_TR_NOOP("Duration"), duration_item},
    {QT_TR_NOOP("Tags"), tags_item},
};
constexpr int kColumnCount = int(std::size(kColumns));
constexpr int kIdColumn = 0;
constexpr int kNameColumn = 1;

QPushButton* make_button(const QString& text, const char* object_name) {
    auto* b = new QPushButton(text);
    b->setObjectName(object_name);
    return b;
}

QLineEdit* make_edit(const char* object_name, const QString& placeholder, bool clear_button = false) {
    auto* e = new QLineEdit;
    e->setObjectName(object_name);
    e->setPlaceholderText(placeholder);
    e->setClearButtonEnabled(clear_button);
    return e;
}

QComboBox* make_combo(const char* object_name, const QString& first_item) {
    auto* c = new QComboBox;
    c->setObjectName(object_name);
    c->addItem(first_item, -1);
    return c;
}

QHBoxLayout* row_of(std::initializer_list<QWidget*> widgets) {
    auto* row = new QHBoxLayout;
    for (QWidget* w : widgets) row->addWidget(w);
    return row;
}

}  // namespace

RunBrowser::RunBrowser(QWidget* parent) : QWidget(parent) {
    auto* split = new QSplitter;
    split->addWidget(makeTablePane());
    split->addWidget(makeDetailsPane());
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    error_label_ = new QLabel;
    error_label_->setObjectName("errorLabel");
    error_label_->setWordWrap(true);
    error_label_->setStyleSheet("color: #b00000;");
    error_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_label_->hide();
    auto* top = new QVBoxLayout(this);
    top->addLayout(makeFilterBar());
    top->addWidget(error_label_);
    top->addWidget(split, 1);
    onSelectionChanged();
}

QLayout* RunBrowser::makeFilterBar() {
    text_filter_ = make_edit("textFilter", tr("Search name, note, config…"), true);
    tag_filter_ = make_edit("tagFilter", tr("tag or tag=value"), true);
    precision_filter_ = make_combo("precisionFilter", tr("any precision"));
    dataset_filter_ = make_combo("datasetFilter", tr("any dataset"));
    status_filter_ = make_combo("statusFilter", tr("any status"));
    for (RunStatus s : kStatuses) status_filter_->addItem(QString::fromLatin1(to_string(s)), int(s));
    show_deleted_ = new QCheckBox(tr("Trash"));
    show_deleted_->setObjectName("showDeleted");
    show_deleted_->setToolTip(tr("Show deleted runs (restore them from here)"));
    auto* refresh_button = make_button(tr("Refresh"), "refreshButton");
    auto* filters = new QHBoxLayout;
    filters->addWidget(text_filter_, 2);
    for (QWidget* w : std::initializer_list<QWidget*>{precision_filter_, dataset_filter_, status_filter_})
        filters->addWidget(w);
    filters->addWidget(tag_filter_, 1);
    filters->addWidget(show_deleted_);
    filters->addWidget(refresh_button);
    for (QLineEdit* e : {text_filter_, tag_filter_})
        connect(e, &QLineEdit::textChanged, this, &RunBrowser::onFilterChanged);
    for (QComboBox* c : {precision_filter_, dataset_filter_, status_filter_})
        connect(c, &QComboBox::currentIndexChanged, this, &RunBrowser::onFilterChanged);
    connect(show_deleted_, &QCheckBox::toggled, this, &RunBrowser::onFilterChanged);
    connect(refresh_button, &QPushButton::clicked, this, &RunBrowser::refresh);
    return filters;
}

QWidget* RunBrowser::makeTablePane() {
    table_ = new QTableWidget(0, kColumnCount);
    table_->setObjectName("runTable");
    QStringList headers;
    for (const ColumnSpec& c : kColumns) headers << tr(c.header);
    table_->setHorizontalHeaderLabels(headers);
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
    // the view); Tags, the last, takes what is left.
    table_->horizontalHeader()->setSectionResizeMode(kNameColumn, QHeaderView::Interactive);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setColumnWidth(kNameColumn, 200);
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &RunBrowser::onSelectionChanged);
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        if (row >= 0) emit openRunsRequested({runIdAt(row)});
    });
    table_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(table_, &QWidget::customContextMenuRequested, this, &RunBrowser::showContextMenu);
    count_label_ = new QLabel;
    count_label_->setObjectName("countLabel");
    open_ = make_button(tr("Open"), "openButton");
    open_->setToolTip(
        tr("Show the selected runs' curves together; the first run's network and "
           "settings load into the panels"));
    train_again_ = make_button(tr("Train again"), "trainAgainButton");
    train_again_->setToolTip(tr("Train a new run with the selected run's network and settings"));
    compare_ = make_button(tr("Compare"), "compareButton");
    report_ = make_button(tr("Export report…"), "reportButton");
    delete_ = make_button(tr("Delete"), "deleteButton");
    restore_ = make_button(tr("Restore"), "restoreButton");
    hparams_ = make_button(tr("Hyperparameters"), "hparamsButton");
    hparams_->setToolTip(tr("Compare the selected runs' settings and results in the hyperparameter view"));
    resume_ = make_button(tr("Resume"), "resumeButton");
    connect(hparams_, &QPushButton::clicked, this, [this] { emit hparamsRequested(selectedRunIds()); });
    connect(resume_, &QPushButton::clicked, this, [this] {
        if (resumeBlockReason().isEmpty()) emit resumeRequested(selectedRunIds().first());
    });
    connect(open_, &QPushButton::clicked, this, [this] {
        const auto ids = selectedRunIds();
        if (!ids.isEmpty()) emit openRunsRequested(ids);
    });
    connect(train_again_, &QPushButton::clicked, this, [this] {
        const auto ids = selectedRunIds();
        if (ids.size() == 1) emit trainAgainRequested(ids.first());
    });
    connect(compare_, &QPushButton::clicked, this, [this] { emit compareRequested(selectedRunIds()); });
    connect(report_, &QPushButton::clicked, this, [this] { emit reportRequested(selectedRunIds()); });
    connect(delete_, &QPushButton::clicked, this, &RunBrowser::onDeleteClicked);
    connect(restore_, &QPushButton::clicked, this, &RunBrowser::onRestoreClicked);
    auto* actions = row_of({open_, train_again_, compare_, hparams_, resume_, report_, delete_, restore_});
    actions->insertWidget(0, count_label_, 1);
    auto* pane = new QWidget;
    auto* v = new QVBoxLayout(pane);
    v->setContentsMargins(0, 0, 0, 0);
    v->addWidget(table_, 1);
    v->addLayout(actions);
    return pane;
}

QWidget* RunBrowser::makeDetailsPane() {
    details_ = new QLabel;
    details_->setObjectName("detailsLabel");
    details_->setWordWrap(true);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    details_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    name_edit_ = make_edit("nameEdit", {});
    tag_edit_ = make_edit("tagEdit", tr("key or key=value"));
    note_ = new QPlainTextEdit;
    note_->setObjectName("noteEdit");
    note_->setPlaceholderText(tr("Notes on this run"));
    rename_ = make_button(tr("Rename"), "renameButton");
    tag_ = make_button(tr("Add tag"), "tagButton");
    untag_ = make_button(tr("Remove tag"), "untagButton");
    save_note_ = make_button(tr("Save note"), "saveNoteButton");
    connect(rename_, &QPushButton::clicked, this, &RunBrowser::onRenameClicked);
    connect(name_edit_, &QLineEdit::returnPressed, this, &RunBrowser::onRenameClicked);
    connect(tag_, &QPushButton::clicked, this, &RunBrowser::onTagClicked);
    connect(tag_edit_, &QLineEdit::returnPressed, this, &RunBrowser::onTagClicked);
    connect(untag_, &QPushButton::clicked, this, &RunBrowser::onUntagClicked);
    connect(save_note_, &QPushButton::clicked, this, &RunBrowser::onSaveNoteClicked);
    // Edits take the width; the buttons keep their natural size.
    for (QPushButton* b : {rename_, tag_, untag_, save_note_})
        b->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    auto* name_row = row_of({name_edit_, rename_});
    name_row->setStretch(0, 1);
    auto* tag_row = row_of({tag_edit_, tag_, untag_});
    tag_row->setStretch(0, 1);
    auto* box = new QGroupBox(tr("Selected run"));
    auto* grid = new QGridLayout(box);
    grid->addWidget(details_, 0, 0, 1, 3);
    grid->addWidget(new QLabel(tr("Name")), 1, 0);
    grid->addLayout(name_row, 1, 1);
    grid->addWidget(new QLabel(tr("Tag")), 2, 0);
    grid->addLayout(tag_row, 2, 1);
    grid->addWidget(note_, 3, 0, 1, 2);
    grid->addWidget(save_note_, 4, 1, Qt::AlignRight);
    grid->setColumnStretch(1, 1);
    grid->setRowStretch(3, 1);
    box->setMinimumWidth(360);
    // The dock shares the bottom strip with the network editor: the table and the note give up
    // height before the buttons under them do.
    note_->setMinimumHeight(note_->fontMetrics().lineSpacing() * 2 + 8);
    table_->setMinimumHeight(table_->verticalHeader()->defaultSectionSize() * 3);
    return box;
}

RunBrowser::~RunBrowser() = default;

// The buttons' actions for the row under the mouse (selected first when it was not).
void RunBrowser::showContextMenu(const QPoint& at) {
    const int row = table_->rowAt(at.y());
    if (row < 0) return;
    if (!selectedRunIds().contains(runIdAt(row))) selectRuns({runIdAt(row)});
    QMenu menu(this);
    for (QPushButton* b : {open_, train_again_, compare_, hparams_, resume_, report_, delete_, restore_}) {
        QAction* a = menu.addAction(b->text(), b, &QPushButton::click);
        a->setObjectName(b->objectName() + QStringLiteral("Action"));
        a->setEnabled(b->isEnabled());
        a->setToolTip(b->toolTip());
    }
    const QList<qint64> ids = selectedRunIds();
    QAction* pytorch = menu.addAction(tr("Export for PyTorch…"), this, [this, ids] {
        if (ids.size() == 1) emit pytorchExportRequested(ids.first());
    });
    pytorch->setObjectName(QStringLiteral("pytorchExportAction"));
    pytorch->setEnabled(ids.size() == 1);
    pytorch->setToolTip(tr("The run's final weights as safetensors and a PyTorch script that loads them"));
    menu.exec(table_->viewport()->mapToGlobal(at));
}

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
    for (auto [combo, values] :
         {std::pair{precision_filter_, &precisions}, std::pair{dataset_filter_, &datasets}}) {
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
    RunFigures figures;
    try {
        figures = list_figures(*store_, r);
    } catch (const StoreError&) {
        // The row still shows what the run row holds; the store's complaint is shown by refresh.
    }
    for (int c = 0; c < kColumnCount; ++c) table_->setItem(row, c, kColumns[c].cell(r, figures));
}

int RunBrowser::rowCount() const { return table_->rowCount(); }

qint64 RunBrowser::runIdAt(int row) const {
    auto* item = table_->item(row, kIdColumn);
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
    open_->setEnabled(!ids.isEmpty() && !trash);
    train_again_->setEnabled(ids.size() == 1 && !trash);
    compare_->setEnabled(ids.size() >= 2 && !trash);
    report_->setEnabled(!ids.isEmpty() && !trash);
    delete_->setEnabled(!ids.isEmpty() && !trash);
    restore_->setEnabled(!ids.isEmpty() && trash);
    hparams_->setEnabled(ids.size() >= 2 && !trash);
    const QString why_not_resume = resumeBlockReason();
    resume_->setEnabled(why_not_resume.isEmpty());
    resume_->setToolTip(why_not_resume.isEmpty() ? tr("Continue the run from its newest checkpoint")
                                                 : tr("Resume is disabled: %1").arg(why_not_resume));
    const bool one = ids.size() == 1 && store_;
    for (QWidget* w :
         std::initializer_list<QWidget*>{name_edit_, rename_, tag_edit_, tag_, untag_, note_, save_note_})
        w->setEnabled(one);
    if (!one) {
        details_->setText(ids.isEmpty()
                              ? tr("Select a run to see and edit its details; select several to compare.")
                              : tr("%1 runs selected.").arg(ids.size()));
        name_edit_->clear();
        note_->clear();
        emit selectionChanged(ids);
        return;
    }
    const auto it =
        std::find_if(runs_.begin(), runs_.end(), [&](const Run& r) { return r.id == ids.first(); });
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

QString RunBrowser::resumeBlockReason() const {
    const QList<qint64> ids = selectedRunIds();
    if (ids.size() != 1) return tr("select one INTERRUPTED run");
    if (show_deleted_->isChecked()) return tr("the run is in the trash");
    const auto it =
        std::find_if(runs_.begin(), runs_.end(), [&](const Run& r) { return r.id == ids.first(); });
    if (it == runs_.end() || !store_) return tr("the run is not in the list");
    if (it->status != RunStatus::Interrupted)
        return tr("only INTERRUPTED runs resume; this one is %1")
            .arg(QString::fromLatin1(to_string(it->status)));
    try {
        if (!store_->latest_checkpoint(it->id)) return tr("the run has no checkpoint");
    } catch (const std::exception& e) {
        return tr("its checkpoint cannot be read: %1").arg(QString::fromUtf8(e.what()));
    }
    return {};
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
    const auto answer = QMessageBox::question(
        this, tr("Delete runs"),
        tr("Move %n run(s) to the trash? They can be restored from the Trash view until it is purged.", "",
           int(ids.size())),
        QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) return;
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
