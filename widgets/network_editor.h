// NetworkEditor: builds a network with the mouse. A palette of layer kinds, a layer table with
// live shape inference and parameter counts (Network::inspect), a form for the selected layer's
// settings with the layer's GEMMs and their shapes, undo/redo of every edit ("Add ×N" inserts
// N layers as one), the loss, JSON open/save and presets. Errors are marked on the row they
// belong to and on the field they name, and isValid()/validityChanged() let the app keep Train disabled until
// the network fits the dataset. A "Precision" column shows each layer's GEMMs' fprop / dgrad /
// wgrad precision under the training settings' rules (widgets/layer_precision.h); the
// inspector's LayerPrecisionForm turns a choice into a rule (precisionRuleRequested), and a rule
// that does not resolve is shown in red under the table. The editor only edits a description; it
// never builds or trains.
#pragma once
#include <QByteArray>
#include <QString>
#include <QWidget>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/nn/network.h"
#include "core/tensor/shape.h"
#include "widgets/layer_precision.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QLayout;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableView;
class QUndoStack;
class QToolButton;

namespace mpwb {

class LayerTableModel;

class NetworkEditor : public QWidget {
    Q_OBJECT
public:
    explicit NetworkEditor(QWidget* parent = nullptr);
    ~NetworkEditor() override;

    // {"name", "loss", "layers": [...]} as Network::from_json reads it.
    nlohmann::json networkJson() const;
    // Replaces the whole network as one undoable edit (text names it in the undo history).
    void setNetworkJson(const nlohmann::json& network,
                        const QString& text = QStringLiteral("Replace network"));

    // Loads a network file's content (a bare network or a preset file with "network"). Returns
    // an empty string on success, else a message naming the problem; the network is unchanged
    // on error. No dialogs, so the logic is testable.
    QString loadJson(const QByteArray& bytes);
    // loadJson for a file, through the same checks as every file reader (folder, size limit).
    QString loadFile(const QString& path);
    // File variants: show a message box on error when interactive is true.
    bool openFile(const QString& path, bool interactive = true);
    bool saveFile(const QString& path, bool interactive = true);
    // A built-in preset's network (preset_names()); emits presetLoaded.
    void loadPreset(const QString& name);

    // The per-sample input shape from the dataset panel ({2}, {1,28,28}, ...).
    void setInputShape(const Shape& shape);
    // Classes of the dataset (0 = unknown): the last layer must output exactly this many.
    void setClassCount(int classes);

    // Layer editing, each an undoable command (the buttons and drag-and-drop call these).
    void addLayer(const QString& kind, int position = -1);  // -1: after the current layer
    // count layers of one kind as one undoable edit ("Add 4 × TransformerBlock").
    void addLayers(const QString& kind, int count, int position = -1);
    // The network's "loss" (a name in the loss registry), one undoable edit.
    void setLoss(const QString& loss);
    void removeLayer(int row);
    void moveLayer(int from, int to);  // to: final index of the moved layer
    // Replaces one setting of a layer ("out", "kernel", ...); consecutive edits of the same
    // field merge into one undo step.
    void setLayerField(int row, const QString& key, const nlohmann::json& value);
    int layerCount() const;
    // The editor's height that shows every layer (at least three rows) without scrolling.
    int heightForAllLayers() const;
    int currentLayer() const;
    void setCurrentLayer(int row);

    // The training settings the Precision column resolves rules with; re-resolves at once.
    void setPrecisionSettings(const EditorPrecisionSettings& settings);
    const GemmPrecisionPlan& precisionPlan() const { return plan_; }
    // The resolution's error (empty when the rules resolve).
    QString precisionErrorText() const;
    LayerPrecisionForm* precisionForm() const { return precision_form_; }

    // Shape inference results of the current description, one per layer.
    const std::vector<LayerReport>& reports() const { return reports_; }
    // True when there is at least one layer, every layer fits and the output fits the classes.
    bool isValid() const { return valid_; }
    int64_t totalParameters() const;
    QString summaryText() const;
    QUndoStack* undoStack() const { return undo_; }

    // Default settings for a newly added layer of this kind (the layer registry's new-layer values).
    static nlohmann::json defaultLayer(const QString& kind);

signals:
    void networkChanged();
    void validityChanged(bool valid);
    void presetLoaded(const QString& name);
    // The inspector's precision form asks for this rule in the next run's settings.
    void precisionRuleRequested(const mpwb::PrecisionRule& rule);

private:
    // Writes the network as indented JSON to path; empty on success, else the reason.
    QString writeNetworkFile(const QString& path) const;
    friend class LayerTableModel;
    friend class NetworkEditCommand;
    // Called by undo commands: installs a description and selects a row.
    void applyState(const nlohmann::json& network, int select_row);
    QString loadParsed(nlohmann::json j);
    void reinspect();
    void resolvePrecisions();
    void rebuildForm();
    // The constructor's parts, each a piece of the layout.
    QLayout* makeToolbar();
    QToolButton* makeUndoButton(bool undo);
    QWidget* makePalette();
    QWidget* makeLayerTable();
    QLayout* makeRowButtons();
    QWidget* makeLossChoice();
    // The per-sample input shape of a layer: the dataset's for the first, else the previous
    // layer's output; empty when unknown (an earlier layer does not fit).
    Shape layerInput(int row) const;
    // Empty when the loss reads the targets the outputs are scored against (per position for a
    // sequence, else per sample); else the error, naming "loss".
    std::string lossMismatch(bool sequence) const;
    void refreshFormExtras();
    QWidget* makeSettingsForm();
    QWidget* makeFieldEditor(const LayerField& field, const nlohmann::json& spec, int row);
    void commitFormEdit(int row, const QString& key, const nlohmann::json& value, bool unset);
    void updateButtons();
    void onOpenClicked();
    void onSaveClicked();

    nlohmann::json network_;
    std::vector<LayerReport> reports_;
    std::vector<std::string> row_errors_;  // per row: the layer's error or the output mismatch
    Shape input_shape_{2};
    int classes_ = 0;
    bool valid_ = false;
    bool form_editing_ = false;  // a form edit is being pushed: keep the form (and its focus)
    int current_ = -1;
    EditorPrecisionSettings precision_settings_;
    GemmPrecisionPlan plan_;
    std::string precision_error_;

    QUndoStack* undo_ = nullptr;
    LayerTableModel* model_ = nullptr;
    QListWidget* palette_ = nullptr;
    QTableView* table_ = nullptr;
    QWidget* form_host_ = nullptr;
    QFormLayout* form_ = nullptr;
    QLabel* form_title_ = nullptr;
    QLabel* form_error_ = nullptr;  // the selected layer's error, under its fields
    QLabel* gemm_list_ = nullptr;   // the selected layer's GEMMs and their shapes
    QLabel* input_label_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* precision_error_label_ = nullptr;  // a rule that does not resolve
    LayerPrecisionForm* precision_form_ = nullptr;
    QComboBox* presets_ = nullptr;
    QPushButton* add_ = nullptr;
    QSpinBox* add_count_ = nullptr;
    QComboBox* loss_ = nullptr;
    QPushButton* remove_ = nullptr;
    QPushButton* up_ = nullptr;
    QPushButton* down_ = nullptr;
};

}  // namespace mpwb
