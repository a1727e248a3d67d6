// NetworkEditor: palette, layer table model with drag-and-drop, settings form, undo commands,
// shape inference through Network::inspect, JSON and preset loading. The palette, the new
// layers and the settings forms come from the layer registry (core/nn/layer_registry.h): a new
// kind or field appears here without code of its own.
#include "widgets/network_editor.h"
#include "widgets/layer_row_text.h"
#include "widgets/output_guard.h"

#include <QAbstractTableModel>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QRegularExpression>
#include <QSaveFile>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QUndoCommand>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/common/error.h"
#include "core/common/json_input.h"
#include "resources/presets.h"

namespace mpwb {

namespace {

const char* kKindMime = "application/x-mpwb-layer-kind";
const char* kRowMime = "application/x-mpwb-layer-row";

QString shape_text(const Shape& s) {
    QStringList d;
    for (int64_t v : s) d << QString::number(v);
    return d.join(QStringLiteral(" × "));
}

QString layer_kind_of(const nlohmann::json& spec) {
    if (spec.is_object() && spec.contains("type") && spec["type"].is_string())
        return QString::fromStdString(spec["type"].get<std::string>());
    return QStringLiteral("?");
}

// The palette: a list of layer kinds that drags its kind name into the layer table.
class PaletteList : public QListWidget {
public:
    using QListWidget::QListWidget;

protected:
    QStringList mimeTypes() const override { return {QString::fromLatin1(kKindMime)}; }
    QMimeData* mimeData(const QList<QListWidgetItem*>& items) const override {
        auto* m = new QMimeData;
        if (!items.isEmpty()) m->setData(kKindMime, items.first()->text().toUtf8());
        return m;
    }
};

// The palette's context menu: a few copies of the kind at once ("Add 4 × TransformerBlock").
void show_add_menu(NetworkEditor* editor, QListWidget* palette, const QPoint& at) {
    const QListWidgetItem* item = palette->itemAt(at);
    if (!item) return;
    const QString kind = item->text();
    QMenu menu(palette);
    menu.setObjectName("paletteMenu");
    for (int count : {1, 2, 4, 6, 8, 12})
        menu.addAction(NetworkEditor::tr("Add %1 × %2").arg(count).arg(kind), editor,
                       [editor, kind, count] { editor->addLayers(kind, count); });
    menu.exec(palette->viewport()->mapToGlobal(at));
}

}  // namespace

// Table of the network's layers: #, layer, settings, output shape, parameters. Rows are dragged
// to reorder and palette entries dropped to insert; both go through the editor's commands so
// they can be undone.
class LayerTableModel : public QAbstractTableModel {
public:
    explicit LayerTableModel(NetworkEditor* editor) : QAbstractTableModel(editor), editor_(editor) {}

    int rowCount(const QModelIndex& parent = {}) const override {
        return parent.isValid() ? 0 : editor_->layerCount();
    }
    int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : 6; }

    QVariant headerData(int section, Qt::Orientation o, int role) const override {
        if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
        static const char* names[] = {"#", "Layer", "Settings", "Output shape", "Parameters", "Precision"};
        return QString::fromLatin1(names[section]);
    }

    QVariant data(const QModelIndex& index, int role) const override {
        if (!index.isValid()) return {};
        const int row = index.row();
        const auto& layers = editor_->network_["layers"];
        if (row >= int(layers.size())) return {};
        const auto& spec = layers[size_t(row)];
        const LayerReport* rep =
            row < int(editor_->reports_.size()) ? &editor_->reports_[size_t(row)] : nullptr;
        const std::string& err =
            row < int(editor_->row_errors_.size()) ? editor_->row_errors_[size_t(row)] : std::string();
        const bool shape_known = rep && rep->error.empty() && !rep->output.empty();
        if (role == Qt::DisplayRole) {
            switch (index.column()) {
                case 0:
                    return row;
                case 1:
                    return layer_kind_of(spec);
                case 2:
                    return layer_settings_text(spec, editor_->layerInput(row), editor_->classes_);
                case 3:
                    if (!err.empty() && rep && !rep->error.empty()) return QStringLiteral("error");
                    return shape_known ? shape_text(rep->output) : QStringLiteral("?");
                case 4:
                    return shape_known ? QLocale().toString(qlonglong(rep->parameters)) : QString();
                case 5:
                    return layer_precision_text(editor_->plan_, size_t(row));
            }
        }
        if (role == Qt::TextAlignmentRole && (index.column() == 0 || index.column() == 4))
            return int(Qt::AlignRight | Qt::AlignVCenter);
        if (role == Qt::ToolTipRole && !err.empty()) return QString::fromStdString(err);
        if (role == Qt::ToolTipRole && index.column() == 5) {
            const QString tip = layer_precision_tooltip(editor_->plan_, size_t(row));
            return tip.isEmpty() ? QString::fromStdString(editor_->precision_error_) : tip;
        }
        // A fitting layer's tooltip: the GEMMs it runs, as the inspector lists them.
        if (role == Qt::ToolTipRole && shape_known)
            return gemm_list_html(spec, row, editor_->layerInput(row), editor_->classes_);
        if (role == Qt::BackgroundRole && !err.empty()) return QColor(255, 205, 205);
        if (role == Qt::ForegroundRole && !err.empty()) return QColor(150, 0, 0);
        return {};
    }

    Qt::ItemFlags flags(const QModelIndex& index) const override {
        Qt::ItemFlags f = Qt::ItemIsDropEnabled;
        if (index.isValid()) f |= Qt::ItemIsSelectable | Qt::ItemIsEnabled | Qt::ItemIsDragEnabled;
        return f;
    }
    Qt::DropActions supportedDropActions() const override { return Qt::CopyAction | Qt::MoveAction; }
    Qt::DropActions supportedDragActions() const override { return Qt::MoveAction; }
    QStringList mimeTypes() const override {
        return {QString::fromLatin1(kKindMime), QString::fromLatin1(kRowMime)};
    }

    QMimeData* mimeData(const QModelIndexList& indexes) const override {
        auto* m = new QMimeData;
        if (!indexes.isEmpty()) m->setData(kRowMime, QByteArray::number(indexes.first().row()));
        return m;
    }

    bool canDropMimeData(const QMimeData* data, Qt::DropAction, int, int, const QModelIndex&) const override {
        return data->hasFormat(kKindMime) || data->hasFormat(kRowMime);
    }

    bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int,
                      const QModelIndex& parent) override {
        if (action == Qt::IgnoreAction) return true;
        // Dropped onto a row: insert before it; onto the empty area: append.
        int target = row >= 0 ? row : (parent.isValid() ? parent.row() : editor_->layerCount());
        if (data->hasFormat(kKindMime)) {
            editor_->addLayer(QString::fromUtf8(data->data(kKindMime)), target);
            return true;
        }
        if (data->hasFormat(kRowMime)) {
            const int from = data->data(kRowMime).toInt();
            int to = target > from ? target - 1 : target;
            to = std::clamp(to, 0, editor_->layerCount() - 1);
            if (to != from) editor_->moveLayer(from, to);
            // false: the view must not remove the source row; the command already moved it.
            return false;
        }
        return false;
    }

    void reset() {
        beginResetModel();
        endResetModel();
    }
    void refreshAll() {
        if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
    }

private:
    NetworkEditor* editor_;
};

// Every edit is one of these: the network before and after, and the row to select after.
// Consecutive edits of the same field of the same layer merge (typing "128" is one step).
class NetworkEditCommand : public QUndoCommand {
public:
    NetworkEditCommand(NetworkEditor* editor, nlohmann::json before, nlohmann::json after, int select_before,
                       int select_after, const QString& text, int merge_id = -1, QString merge_key = {})
        : QUndoCommand(text),
          editor_(editor),
          before_(std::move(before)),
          after_(std::move(after)),
          select_before_(select_before),
          select_after_(select_after),
          merge_id_(merge_id),
          merge_key_(std::move(merge_key)) {}

    void redo() override { editor_->applyState(after_, select_after_); }
    void undo() override { editor_->applyState(before_, select_before_); }
    int id() const override { return merge_id_; }
    bool mergeWith(const QUndoCommand* other) override {
        auto* o = static_cast<const NetworkEditCommand*>(other);
        if (o->merge_key_ != merge_key_ || merge_key_.isEmpty()) return false;
        after_ = o->after_;
        select_after_ = o->select_after_;
        return true;
    }

private:
    NetworkEditor* editor_;
    nlohmann::json before_, after_;
    int select_before_, select_after_;
    int merge_id_;
    QString merge_key_;
};

NetworkEditor::NetworkEditor(QWidget* parent) : QWidget(parent) {
    network_ = {{"name", "network"}, {"loss", default_loss().name}, {"layers", nlohmann::json::array()}};
    undo_ = new QUndoStack(this);
    auto* split = new QSplitter;
    split->addWidget(makePalette());
    split->addWidget(makeLayerTable());
    split->addWidget(makeSettingsForm());
    split->setStretchFactor(0, 0);
    split->setStretchFactor(1, 3);
    split->setStretchFactor(2, 1);
    split->setSizes({140, 520, 240});
    auto* top = new QVBoxLayout(this);
    top->addLayout(makeToolbar());
    top->addWidget(split, 1);
    reinspect();
    rebuildForm();
    updateButtons();
}

// Presets, open/save, undo/redo and the input shape.
QLayout* NetworkEditor::makeToolbar() {
    auto* bar = new QHBoxLayout;
    presets_ = new QComboBox;
    presets_->setObjectName("presetCombo");
    presets_->addItem(tr("Load preset…"));
    for (const auto& n : preset_names()) presets_->addItem(QString::fromStdString(n));
    connect(presets_, &QComboBox::activated, this, [this](int i) {
        if (i > 0) loadPreset(presets_->itemText(i));
        presets_->setCurrentIndex(0);
    });
    auto* open = new QPushButton(tr("Open…"));
    open->setObjectName("openButton");
    auto* save = new QPushButton(tr("Save…"));
    save->setObjectName("saveButton");
    connect(open, &QPushButton::clicked, this, &NetworkEditor::onOpenClicked);
    connect(save, &QPushButton::clicked, this, &NetworkEditor::onSaveClicked);
    input_label_ = new QLabel;
    input_label_->setObjectName("inputLabel");
    bar->addWidget(presets_);
    bar->addWidget(open);
    bar->addWidget(save);
    bar->addSpacing(8);
    bar->addWidget(makeUndoButton(true));
    bar->addWidget(makeUndoButton(false));
    bar->addSpacing(8);
    // The row buttons share the toolbar's line, so a short dock gives the layer table the height.
    bar->addLayout(makeRowButtons());
    bar->addSpacing(8);
    bar->addWidget(makeLossChoice());
    bar->addStretch(1);
    bar->addWidget(input_label_);
    return bar;
}

// The network's loss, one entry per loss of the loss registry with its help.
QWidget* NetworkEditor::makeLossChoice() {
    loss_ = new QComboBox;
    loss_->setObjectName("lossCombo");
    for (const LossDefinition& loss : loss_registry()) {
        loss_->addItem(QString::fromStdString(loss.name));
        loss_->setItemData(loss_->count() - 1, QString::fromStdString(loss.help), Qt::ToolTipRole);
    }
    connect(loss_, &QComboBox::activated, this, [this](int i) { setLoss(loss_->itemText(i)); });
    auto* host = new QWidget;
    auto* box = new QHBoxLayout(host);
    box->setContentsMargins(0, 0, 0, 0);
    box->addWidget(new QLabel(tr("Loss")));
    box->addWidget(loss_);
    return host;
}

// The undo (or redo) button, enabled and labelled from the undo stack.
QToolButton* NetworkEditor::makeUndoButton(bool undo) {
    auto* button = new QToolButton;
    button->setObjectName(undo ? "undoButton" : "redoButton");
    button->setText(undo ? tr("Undo") : tr("Redo"));
    button->setShortcut(undo ? QKeySequence::Undo : QKeySequence::Redo);
    button->setEnabled(false);
    connect(button, &QToolButton::clicked, undo_, undo ? &QUndoStack::undo : &QUndoStack::redo);
    connect(undo_, undo ? &QUndoStack::canUndoChanged : &QUndoStack::canRedoChanged, button,
            &QToolButton::setEnabled);
    connect(undo_, undo ? &QUndoStack::undoTextChanged : &QUndoStack::redoTextChanged, button,
            [button, undo](const QString& t) {
                button->setToolTip(t.isEmpty() ? QString() : (undo ? tr("Undo %1") : tr("Redo %1")).arg(t));
            });
    return button;
}

// The palette of layer kinds, one entry per kind of the layer registry.
QWidget* NetworkEditor::makePalette() {
    palette_ = new PaletteList;
    palette_->setObjectName("palette");
    for (const LayerKind& kind : layer_registry()) {
        auto* item = new QListWidgetItem(QString::fromStdString(kind.name), palette_);
        item->setToolTip(QString::fromStdString(kind.help + "\n" + kind.shape_rule));
    }
    palette_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(palette_, &QWidget::customContextMenuRequested, this,
            [this](const QPoint& at) { show_add_menu(this, palette_, at); });
    palette_->setDragEnabled(true);
    palette_->setDragDropMode(QAbstractItemView::DragOnly);
    palette_->setCurrentRow(0);
    palette_->setToolTip(
        tr("Double-click, press Add, or drag a layer into the network; right-click to add several"));
    // Add ×N: a GPT's blocks go in at once, as one undo step.
    add_count_ = new QSpinBox;
    add_count_->setObjectName("addCount");
    add_count_->setRange(1, 64);
    add_count_->setPrefix(QStringLiteral("×"));
    add_count_->setToolTip(tr("How many layers of the kind Add inserts (one undo step)"));
    connect(palette_, &QListWidget::itemDoubleClicked, this,
            [this](QListWidgetItem* item) { addLayers(item->text(), add_count_->value()); });
    add_ = new QPushButton(tr("Add →"));
    add_->setObjectName("addButton");
    connect(add_, &QPushButton::clicked, this, [this] {
        if (auto* item = palette_->currentItem()) addLayers(item->text(), add_count_->value());
    });
    auto update_add_tip = [this] {
        const auto* item = palette_->currentItem();
        add_->setToolTip(
            item ? tr("Add %1 × %2 after the selected layer").arg(add_count_->value()).arg(item->text())
                 : QString());
    };
    connect(palette_, &QListWidget::currentItemChanged, this, update_add_tip);
    connect(add_count_, &QSpinBox::valueChanged, this, update_add_tip);
    update_add_tip();
    auto* add_row = new QHBoxLayout;
    add_row->addWidget(add_count_);
    add_row->addWidget(add_, 1);
    auto* palette_box = new QVBoxLayout;
    palette_box->setContentsMargins(0, 0, 0, 0);
    palette_box->addWidget(new QLabel(tr("<b>Layers</b>")));
    palette_box->addWidget(palette_, 1);
    palette_box->addLayout(add_row);
    auto* host = new QWidget;
    host->setLayout(palette_box);
    return host;
}

// The table of layers with its remove/move buttons and the summary line.
QWidget* NetworkEditor::makeLayerTable() {
    model_ = new LayerTableModel(this);
    table_ = new QTableView;
    table_->setObjectName("layerTable");
    table_->setModel(model_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setDragEnabled(true);
    table_->setAcceptDrops(true);
    table_->setDropIndicatorShown(true);
    table_->setDragDropMode(QAbstractItemView::DragDrop);
    table_->setDefaultDropAction(Qt::MoveAction);
    table_->setDragDropOverwriteMode(false);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(false);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    table_->setAlternatingRowColors(true);
    // Compact rows: a preset's layers fit the default height of the bottom dock.
    table_->verticalHeader()->setMinimumSectionSize(fontMetrics().height() + 4);
    table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& cur) {
                const int row = cur.isValid() ? cur.row() : -1;
                if (row == current_) return;
                current_ = row;
                rebuildForm();
                updateButtons();
            });
    summary_ = new QLabel;
    summary_->setObjectName("summaryLabel");
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* table_box = new QVBoxLayout;
    table_box->setContentsMargins(0, 0, 0, 0);
    table_box->addWidget(table_, 1);
    table_box->addWidget(summary_);
    precision_error_label_ = new QLabel;
    precision_error_label_->setObjectName("precisionError");
    precision_error_label_->setWordWrap(true);
    precision_error_label_->setStyleSheet("color: #b00000;");
    precision_error_label_->hide();
    table_box->addWidget(precision_error_label_);
    auto* host = new QWidget;
    host->setLayout(table_box);
    return host;
}

QLayout* NetworkEditor::makeRowButtons() {
    remove_ = new QPushButton(tr("Remove"));
    remove_->setObjectName("removeButton");
    up_ = new QPushButton(tr("Move up"));
    up_->setObjectName("upButton");
    down_ = new QPushButton(tr("Move down"));
    down_->setObjectName("downButton");
    connect(remove_, &QPushButton::clicked, this, [this] { removeLayer(current_); });
    connect(up_, &QPushButton::clicked, this, [this] {
        if (current_ > 0) moveLayer(current_, current_ - 1);
    });
    connect(down_, &QPushButton::clicked, this, [this] {
        if (current_ >= 0 && current_ + 1 < layerCount()) moveLayer(current_, current_ + 1);
    });
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(remove_);
    buttons->addWidget(up_);
    buttons->addWidget(down_);
    return buttons;
}

// The selected layer's settings; rebuildForm fills it from the registry's fields.
QWidget* NetworkEditor::makeSettingsForm() {
    form_title_ = new QLabel;
    form_title_->setObjectName("layerFormTitle");
    form_title_->setWordWrap(true);
    form_host_ = new QWidget;
    form_host_->setObjectName("layerForm");
    form_ = new QFormLayout(form_host_);
    form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    auto* form_box = new QVBoxLayout;
    form_box->setContentsMargins(0, 0, 0, 0);
    // The scroll area reads the form's height from its minimum size.
    form_box->setSizeConstraint(QLayout::SetMinimumSize);
    form_box->addWidget(form_title_);
    form_box->addWidget(form_host_);
    // Below the fields, outside the form so its rows keep their heights: the layer's error and
    // its GEMMs, filled by refreshFormExtras.
    form_error_ = new QLabel;
    form_error_->setObjectName("layerError");
    form_error_->setWordWrap(true);
    form_error_->setStyleSheet("color: #b00000;");
    form_error_->hide();
    form_box->addWidget(form_error_);
    gemm_list_ = new QLabel;
    gemm_list_->setObjectName("gemmList");
    gemm_list_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    gemm_list_->setToolTip(
        tr("The GEMMs this layer runs for one sample, under the names statistics, "
           "precision rules and reports use"));
    gemm_list_->hide();
    form_box->addWidget(gemm_list_);
    precision_form_ = new LayerPrecisionForm;
    connect(precision_form_, &LayerPrecisionForm::ruleRequested, this,
            &NetworkEditor::precisionRuleRequested);
    form_box->addWidget(precision_form_);
    form_box->addStretch(1);
    auto* inner = new QWidget;
    inner->setLayout(form_box);
    // A block's nine fields and its GEMMs are taller than a short dock: scroll, never squeeze.
    auto* outer = new QScrollArea;
    outer->setObjectName("layerFormScroll");
    outer->setWidget(inner);
    outer->setWidgetResizable(true);
    outer->setFrameShape(QFrame::NoFrame);
    outer->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    outer->setMinimumWidth(260);
    return outer;
}

NetworkEditor::~NetworkEditor() = default;

nlohmann::json NetworkEditor::networkJson() const { return network_; }

int NetworkEditor::layerCount() const { return int(network_["layers"].size()); }

int NetworkEditor::heightForAllLayers() const {
    const int rows = std::max(layerCount(), 3);
    const int needed = rows * table_->verticalHeader()->defaultSectionSize();
    if (!isVisible()) return sizeHint().height();  // not laid out yet: no measure to extend
    return height() + std::max(0, needed - table_->viewport()->height());
}

int NetworkEditor::currentLayer() const { return current_; }

void NetworkEditor::setCurrentLayer(int row) {
    if (row < 0 || row >= layerCount()) {
        table_->selectionModel()->clearSelection();
        table_->selectionModel()->setCurrentIndex(QModelIndex(), QItemSelectionModel::Clear);
        return;
    }
    table_->selectionModel()->setCurrentIndex(
        model_->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

nlohmann::json NetworkEditor::defaultLayer(const QString& kind) {
    const LayerKind* k = find_layer_kind(kind.toStdString());
    return k ? new_layer_json(*k) : nlohmann::json{{"type", kind.toStdString()}};
}

void NetworkEditor::addLayer(const QString& kind, int position) { addLayers(kind, 1, position); }

void NetworkEditor::addLayers(const QString& kind, int count, int position) {
    if (count < 1) return;
    const int n = layerCount();
    const int at = position < 0 ? (current_ >= 0 ? current_ + 1 : n) : std::min(position, n);
    nlohmann::json after = network_;
    auto& layers = after["layers"];
    layers.insert(layers.begin() + at, size_t(count), defaultLayer(kind));
    const QString text = count == 1 ? tr("Add %1").arg(kind) : tr("Add %1 × %2").arg(count).arg(kind);
    // The last inserted layer is selected, so the next Add goes after the group.
    undo_->push(new NetworkEditCommand(this, network_, after, current_, at + count - 1, text));
}

void NetworkEditor::setLoss(const QString& loss) {
    const LossDefinition* chosen = find_loss(loss.toStdString());
    if (!chosen || network_.value("loss", std::string()) == chosen->name) return;
    nlohmann::json after = network_;
    after["loss"] = chosen->name;
    // Network::from_json refuses a z-loss on a loss without softmax rows.
    if (!chosen->takes_z_loss) after.erase("z_loss");
    undo_->push(
        new NetworkEditCommand(this, network_, after, current_, current_, tr("Set loss to %1").arg(loss)));
}

Shape NetworkEditor::layerInput(int row) const {
    if (row <= 0) return input_shape_;
    if (row > int(reports_.size()) || !reports_[size_t(row - 1)].error.empty()) return {};
    return reports_[size_t(row - 1)].output;
}

void NetworkEditor::removeLayer(int row) {
    if (row < 0 || row >= layerCount()) return;
    nlohmann::json after = network_;
    const QString kind = layer_kind_of(after["layers"][size_t(row)]);
    after["layers"].erase(after["layers"].begin() + row);
    const int select = std::min(row, int(after["layers"].size()) - 1);
    undo_->push(new NetworkEditCommand(this, network_, after, row, select, tr("Remove %1").arg(kind)));
}

void NetworkEditor::moveLayer(int from, int to) {
    const int n = layerCount();
    if (from < 0 || from >= n || to < 0 || to >= n || from == to) return;
    nlohmann::json after = network_;
    auto& layers = after["layers"];
    nlohmann::json moved = layers[size_t(from)];
    layers.erase(layers.begin() + from);
    layers.insert(layers.begin() + to, moved);
    undo_->push(new NetworkEditCommand(this, network_, after, from, to,
                                       tr("Move %1 to %2").arg(layer_kind_of(moved)).arg(to)));
}

void NetworkEditor::setLayerField(int row, const QString& key, const nlohmann::json& value) {
    if (row < 0 || row >= layerCount()) return;
    nlohmann::json after = network_;
    auto& spec = after["layers"][size_t(row)];
    if (spec.contains(key.toStdString()) && spec[key.toStdString()] == value) return;
    spec[key.toStdString()] = value;
    const QString merge = QStringLiteral("%1/%2").arg(row).arg(key);
    undo_->push(new NetworkEditCommand(this, network_, after, row, row,
                                       tr("Set %1 of layer %2").arg(key).arg(row), 1, merge));
}

void NetworkEditor::setNetworkJson(const nlohmann::json& network, const QString& text) {
    nlohmann::json next = network;
    if (!next.contains("layers") || !next["layers"].is_array()) next["layers"] = nlohmann::json::array();
    if (!next.contains("name")) next["name"] = "network";
    if (!next.contains("loss")) next["loss"] = default_loss().name;
    undo_->push(
        new NetworkEditCommand(this, network_, next, current_, next["layers"].empty() ? -1 : 0, text));
}

void NetworkEditor::applyState(const nlohmann::json& network, int select_row) {
    const int old_rows = layerCount();
    network_ = network;
    reinspect();
    if (layerCount() != old_rows)
        model_->reset();
    else
        model_->refreshAll();
    select_row = std::min(select_row, layerCount() - 1);
    if (select_row != current_ || table_->currentIndex().row() != select_row) {
        // Selecting rebuilds the form through currentRowChanged (unless the row stays the same).
        const bool keep_form = form_editing_;
        form_editing_ = true;
        setCurrentLayer(select_row);
        form_editing_ = keep_form;
        current_ = select_row;
    }
    if (!form_editing_)
        rebuildForm();
    else
        refreshFormExtras();
    updateButtons();
    emit networkChanged();
}

void NetworkEditor::setInputShape(const Shape& shape) {
    if (shape == input_shape_) return;
    input_shape_ = shape;
    reinspect();
    model_->refreshAll();
    refreshFormExtras();
    emit networkChanged();
}

void NetworkEditor::setClassCount(int classes) {
    if (classes == classes_) return;
    classes_ = classes;
    reinspect();
    model_->refreshAll();
    refreshFormExtras();
}

void NetworkEditor::reinspect() {
    const int n = layerCount();
    reports_ = input_shape_.empty() ? std::vector<LayerReport>{}
                                    : Network::inspect(network_, input_shape_, 1, classes_);
    row_errors_.assign(size_t(n), std::string());
    int errors = 0;
    QString first_error;
    for (size_t i = 0; i < reports_.size() && i < size_t(n); ++i) {
        if (!reports_[i].error.empty()) {
            row_errors_[i] =
                "layer " + std::to_string(i) + " (" + reports_[i].kind + "): " + reports_[i].error;
        }
    }
    // The output must be one score per class (per position, for a sequence), or the loss cannot
    // be computed.
    // (An earlier error leaves the last output unknown: nothing to compare.)
    if (n > 0 && classes_ > 0 && size_t(n) == reports_.size() && reports_.back().error.empty() &&
        !reports_.back().output.empty()) {
        const Shape& out = reports_.back().output;
        const bool sequence = input_shape_.size() == 1 && out.size() == 2 && out[0] == input_shape_[0];
        const Shape wanted = sequence ? Shape{input_shape_[0], classes_} : Shape{classes_};
        if (out != wanted) {
            row_errors_.back() = "layer " + std::to_string(n - 1) + " (" + reports_.back().kind +
                                 "): outputs " + shape_to_string(out) + " but the dataset has " +
                                 std::to_string(classes_) + " classes; the last layer must output " +
                                 shape_to_string(wanted);
        } else {
            row_errors_.back() = lossMismatch(sequence);
        }
    }
    const bool loss_fits = row_errors_.empty() || !row_errors_.back().starts_with("\"loss\"");
    {
        const QSignalBlocker quiet(loss_);
        loss_->setCurrentText(QString::fromStdString(network_.value("loss", default_loss().name)));
        loss_->setStyleSheet(loss_fits ? QString() : QStringLiteral("color: #b00000;"));
        loss_->setToolTip(loss_fits ? tr("The loss the network trains with")
                                    : QString::fromStdString(row_errors_.back()));
    }
    for (const auto& e : row_errors_) {
        if (e.empty()) continue;
        if (errors++ == 0) first_error = QString::fromStdString(e);
    }
    const bool valid = n > 0 && !input_shape_.empty() && errors == 0;

    input_label_->setText(
        tr("Input: %1").arg(input_shape_.empty() ? tr("unknown") : shape_text(input_shape_)));
    if (n == 0) {
        summary_->setStyleSheet("color: #8a5a00;");
        summary_->setText(tr("The network is empty: add layers from the palette."));
    } else if (errors > 0) {
        summary_->setStyleSheet("color: #b00000;");
        summary_->setText(errors == 1 ? first_error
                                      : tr("%1 layers have errors; first: %2").arg(errors).arg(first_error));
    } else {
        summary_->setStyleSheet("");
        summary_->setText(tr("%1 layers · %2 parameters · output %3")
                              .arg(n)
                              .arg(QLocale().toString(qlonglong(totalParameters())))
                              .arg(shape_text(reports_.back().output)));
    }
    resolvePrecisions();
    if (valid != valid_) {
        valid_ = valid;
        emit validityChanged(valid_);
    }
}

void NetworkEditor::resolvePrecisions() {
    plan_ =
        resolve_editor_precisions(network_, input_shape_, classes_, precision_settings_, precision_error_);
    precision_error_label_->setText(
        precision_error_.empty() ? QString()
                                 : tr("Precision rules: %1").arg(QString::fromStdString(precision_error_)));
    precision_error_label_->setVisible(!precision_error_.empty());
}

void NetworkEditor::setPrecisionSettings(const EditorPrecisionSettings& settings) {
    precision_settings_ = settings;
    resolvePrecisions();
    model_->refreshAll();
    refreshFormExtras();
}

QString NetworkEditor::precisionErrorText() const { return QString::fromStdString(precision_error_); }

// A loss reads one kind of targets (loss_registry.h): scores at every position need the
// per-position loss, one score vector per sample a per-sample one.
std::string NetworkEditor::lossMismatch(bool sequence) const {
    const LossDefinition* loss = find_loss(network_.value("loss", default_loss().name));
    const TargetKind wanted = sequence ? TargetKind::ClassPerPosition : TargetKind::ClassPerSample;
    if (!loss || loss->targets == wanted) return {};
    std::string fitting;
    for (const LossDefinition& l : loss_registry())
        if (l.targets == wanted && fitting.empty()) fitting = l.name;
    return "\"loss\": " + loss->name + " reads " + target_kind_text(loss->targets) +
           " targets, and this network outputs " +
           (sequence ? "scores at every position" : "one score per class") +
           (fitting.empty() ? std::string() : "; choose " + fitting);
}

int64_t NetworkEditor::totalParameters() const {
    int64_t total = 0;
    for (const auto& r : reports_) total += r.parameters;
    return total;
}

QString NetworkEditor::summaryText() const { return summary_->text(); }

void NetworkEditor::updateButtons() {
    const int n = layerCount();
    remove_->setEnabled(current_ >= 0 && current_ < n);
    up_->setEnabled(current_ > 0 && current_ < n);
    down_->setEnabled(current_ >= 0 && current_ + 1 < n);
}

void NetworkEditor::rebuildForm() {
    while (form_->rowCount() > 0) form_->removeRow(0);
    if (current_ < 0 || current_ >= layerCount()) {
        form_title_->setText(tr("<b>Settings</b><br><i>Select a layer to edit it.</i>"));
        form_error_->hide();
        gemm_list_->hide();
        precision_form_->hide();
        return;
    }
    const nlohmann::json& spec = network_["layers"][size_t(current_)];
    const QString kind = layer_kind_of(spec);
    const LayerKind* registered = find_layer_kind(kind.toStdString());
    // The kind's help from the registry, the one place it is written.
    form_title_->setText(
        tr("<b>Layer %1: %2</b>").arg(current_).arg(kind) +
        (registered
             ? QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(registered->help).toHtmlEscaped())
             : QString()));
    if (!registered || registered->fields.empty()) form_->addRow(new QLabel(tr("No settings.")));
    for (const LayerField& f : registered ? registered->fields : std::vector<LayerField>{}) {
        QWidget* editor = makeFieldEditor(f, spec, current_);
        editor->setObjectName(QStringLiteral("param_") + QString::fromStdString(f.key));
        editor->setToolTip(QString::fromStdString(f.help));
        QString label = QString::fromStdString(f.label);
        if (!f.zero_means.empty()) label += tr(" (0 = %1)").arg(QString::fromStdString(f.zero_means));
        form_->addRow(label, editor);
    }
    refreshFormExtras();
}

// The error, the field it names marked, and the GEMMs at the current shapes; also after an edit
// in the form, which keeps its editors (and their focus) in place.
void NetworkEditor::refreshFormExtras() {
    if (current_ < 0 || current_ >= layerCount()) return;
    const nlohmann::json& spec = network_["layers"][size_t(current_)];
    const std::string& error =
        current_ < int(row_errors_.size()) ? row_errors_[size_t(current_)] : std::string();
    const QString named = QStringLiteral("param_") + QString::fromStdString(error_field(spec, error));
    for (QWidget* field : form_host_->findChildren<QWidget*>(QRegularExpression("^param_"))) {
        const bool marked = !error.empty() && field->objectName() == named;
        field->setProperty("fieldError", marked);
        // A palette, not a style sheet: a style sheet changes a spin box's size and look.
        QPalette look;
        if (marked) look.setColor(QPalette::Base, QColor(255, 208, 208));
        field->setPalette(look);
        if (auto* label = form_->labelForField(field))
            label->setStyleSheet(marked ? QStringLiteral("color: #b00000; font-weight: bold;") : QString());
    }
    form_error_->setText(QString::fromStdString(error));
    form_error_->setVisible(!error.empty());
    const QString gemms = gemm_list_html(spec, current_, layerInput(current_), classes_);
    gemm_list_->setText(gemms);
    gemm_list_->setVisible(!gemms.isEmpty());
    precision_form_->showLayer(plan_, size_t(current_));
}

// The value the form shows for a field: the layer's own, else what the core uses in its place
// (0 for "not set", the default, or a new layer's value for a required field).
static double shown_value(const LayerField& f, const nlohmann::json& spec) {
    if (spec.contains(f.key) && (spec[f.key].is_number() || spec[f.key].is_boolean()))
        return spec[f.key].is_boolean() ? double(spec[f.key].get<bool>()) : spec[f.key].get<double>();
    if (!f.zero_means.empty()) return 0;
    if (f.when_absent == WhenAbsent::Default) return f.default_value;
    return std::isnan(f.new_layer_value) ? f.editor_min() : f.new_layer_value;
}

// A spin box (or check box) for one registry field, within the field's range; edits become
// undoable commands on the layer in this row.
QWidget* NetworkEditor::makeFieldEditor(const LayerField& f, const nlohmann::json& spec, int row) {
    const double value = shown_value(f, spec);
    const QString key = QString::fromStdString(f.key);
    if (f.type == FieldType::Boolean) {
        auto* box = new QCheckBox;
        box->setChecked(value != 0);
        connect(box, &QCheckBox::toggled, this,
                [this, row, key](bool v) { commitFormEdit(row, key, v, false); });
        return box;
    }
    if (f.type == FieldType::Float) {
        auto* box = new QDoubleSpinBox;
        box->setDecimals(f.decimals);
        box->setRange(f.editor_min(), f.editor_max());
        box->setSingleStep(f.decimals >= 6 ? 1e-6 : 0.01);
        box->setValue(value);
        connect(box, &QDoubleSpinBox::valueChanged, this,
                [this, row, key](double v) { commitFormEdit(row, key, v, false); });
        return box;
    }
    auto* box = new QSpinBox;
    box->setRange(int(f.editor_min()),
                  int(std::min(f.editor_max(), double(std::numeric_limits<int>::max()))));
    box->setValue(int(std::clamp(value, double(box->minimum()), double(box->maximum()))));
    box->setKeyboardTracking(true);
    const bool zero_unsets = !f.zero_means.empty();
    connect(box, &QSpinBox::valueChanged, this,
            [this, row, key, zero_unsets](int v) { commitFormEdit(row, key, v, zero_unsets && v == 0); });
    return box;
}

// A form edit: sets the field, or removes it when the form says "not set"; the form (and its
// focus) stays while the command runs.
void NetworkEditor::commitFormEdit(int row, const QString& key, const nlohmann::json& value, bool unset) {
    form_editing_ = true;
    if (!unset) {
        setLayerField(row, key, value);
    } else if (network_["layers"][size_t(row)].contains(key.toStdString())) {
        nlohmann::json after = network_;
        after["layers"][size_t(row)].erase(key.toStdString());
        undo_->push(new NetworkEditCommand(this, network_, after, row, row,
                                           tr("Clear %1 of layer %2").arg(key).arg(row), 1,
                                           QStringLiteral("%1/%2").arg(row).arg(key)));
    }
    form_editing_ = false;
}

QString NetworkEditor::loadJson(const QByteArray& bytes) {
    nlohmann::json j;
    try {
        // The project's one JSON reader: depth and size limits, every library error with its field.
        j = parse_json_text(std::string_view(bytes.constData(), size_t(bytes.size())), "network text");
    } catch (const JsonInputError& e) {
        return tr("Not valid JSON: %1").arg(QString::fromUtf8(e.what()));
    }
    return loadParsed(std::move(j));
}

QString NetworkEditor::loadParsed(nlohmann::json j) {
    // A preset file holds the network under "network".
    if (j.is_object() && j.contains("network") && !j.contains("layers")) j = j["network"];
    try {
        Network::from_json(j);  // structure, layer types and settings; shapes are the editor's job
    } catch (const std::exception& e) {
        return tr("Not a network description: %1").arg(QString::fromUtf8(e.what()));
    }
    setNetworkJson(j, tr("Load network"));
    return {};
}

QString NetworkEditor::loadFile(const QString& path) {
    nlohmann::json j;
    try {
        // Refuses a folder, a missing file and one over the size limit before reading it.
        j = read_json_file(path.toStdString(), "network file");
    } catch (const JsonInputError& e) {
        return QString::fromUtf8(e.what());
    }
    const QString error = loadParsed(std::move(j));
    return error.isEmpty() ? error : tr("%1: %2").arg(QFileInfo(path).fileName(), error);
}

bool NetworkEditor::openFile(const QString& path, bool interactive) {
    const QString error = loadFile(path);
    if (!error.isEmpty() && interactive) QMessageBox::warning(this, tr("Open network"), error);
    return error.isEmpty();
}

QString NetworkEditor::writeNetworkFile(const QString& path) const {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return tr("Cannot write %1: %2").arg(path, f.errorString());
    const std::string text = network_.dump(2) + "\n";
    f.write(text.data(), qint64(text.size()));
    if (!f.commit()) return tr("Cannot write %1: %2").arg(path, f.errorString());
    return {};
}

bool NetworkEditor::saveFile(const QString& path, bool interactive) {
    QString error = output_refusal(path, tr("the network"));
    if (error.isEmpty()) error = writeNetworkFile(path);
    if (!error.isEmpty() && interactive) QMessageBox::warning(this, tr("Save network"), error);
    if (error.isEmpty()) undo_->setClean();
    return error.isEmpty();
}

void NetworkEditor::loadPreset(const QString& name) {
    try {
        const Preset p = load_preset(name.toStdString());
        setNetworkJson(p.network, tr("Load preset %1").arg(name));
        emit presetLoaded(name);
    } catch (const std::exception& e) {
        QMessageBox::warning(this, tr("Load preset"), QString::fromUtf8(e.what()));
    }
}

void NetworkEditor::onOpenClicked() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open network"), {},
                                                      tr("Network JSON (*.json);;All files (*)"));
    if (!path.isEmpty()) openFile(path);
}

void NetworkEditor::onSaveClicked() {
    QString path = QFileDialog::getSaveFileName(this, tr("Save network"), {}, tr("Network JSON (*.json)"));
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty()) path += ".json";
    saveFile(path);
}

}  // namespace mpwb
