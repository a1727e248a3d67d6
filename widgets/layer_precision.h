// The network editor's precision per GEMM: the precision rules of the training settings resolved
// against the description being edited (resolve_gemm_precisions, with the GEMMs layer_gemm_shapes
// names, so nothing is built), the "Precision" column's text, and LayerPrecisionForm, the
// inspector's editor that turns a choice of fprop / dgrad / wgrad recipes into a rule.
#pragma once
#include <QGroupBox>
#include <QString>

#include <array>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/nn/gemm_precision_plan.h"
#include "core/tensor/shape.h"

class QComboBox;
class QLabel;
class QPushButton;

namespace mpwb {

// The precision settings the editor resolves rules with (the training settings' part of them).
struct EditorPrecisionSettings {
    PrecisionRules rules;
    PrecisionKind precision = PrecisionKind::FP32;
    bool fp8_attention = false;
};

// The plan of the description's GEMMs (a layer that does not fit its input has none), or the
// resolution's error in `error` (a rule matching no GEMM, bf16 in a run that does not store BF16)
// with an empty plan. Never throws.
GemmPrecisionPlan resolve_editor_precisions(const nlohmann::json& network, const Shape& input, int classes,
                                            const EditorPrecisionSettings& settings, std::string& error);

// "mxfp8 / mxfp8 / bf16" (fprop / dgrad / wgrad; "mxfp8" when the three agree) of a layer's GEMMs
// when they agree (the attention products aside), else "mixed: " and each distinct one; empty for
// a layer without GEMMs in the plan.
QString layer_precision_text(const GemmPrecisionPlan& plan, size_t layer);
// Every GEMM of the layer on a line: "3.attn.qkv: mxfp8 / mxfp8 / bf16", "3.mlp.fc1: mxfp8".
QString layer_precision_tooltip(const GemmPrecisionPlan& plan, size_t layer);

// For the selected layer: which GEMM (one of its labels, or all of a block's with "3.*") and the
// recipe of each pass ("as the run" leaves the pass to the next rule, the shortcuts and the run's
// precision); "Set for the next run" emits the rule.
class LayerPrecisionForm : public QGroupBox {
    Q_OBJECT
public:
    explicit LayerPrecisionForm(QWidget* parent = nullptr);
    // The layer's entries of the plan; hidden when it has none that a rule may name.
    void showLayer(const GemmPrecisionPlan& plan, size_t layer);
    QComboBox* gemmChoice() const { return gemm_; }
    QComboBox* passChoice(GemmPass pass) const { return passes_[static_cast<size_t>(pass)]; }
    QPushButton* setButton() const { return set_; }

signals:
    void ruleRequested(const mpwb::PrecisionRule& rule);

private:
    void showChosenGemm();
    void emitRule();

    GemmPrecisionPlan plan_;
    QComboBox* gemm_ = nullptr;
    std::array<QComboBox*, 3> passes_{};
    QLabel* resolved_ = nullptr;
    QPushButton* set_ = nullptr;
};

}  // namespace mpwb
