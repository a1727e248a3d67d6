// PrecisionPanel: the precision policy (with a one-line explanation of each scaled recipe), the
// device, the weight-gradient format, the scaled recipe's settings (RecipeForm, built from
// scaled_recipe_fields(); shown for the scaled policies) and the loss
// scaler's settings (ScalerForm, built from the scaler's field table), with the reference
// systems' presets ("like PyTorch", ...). The issues LossScalerConfig::issues() reports are
// shown inline, on the field they name, and an invalid configuration is never emitted. While a run goes on,
// the scaler settings, the loss scale and the learning rate can be changed: "Apply" emits a request that the
// app forwards to the trainer, which applies it at the next step boundary. A readout and an event list show
// what the scaler and the user did, step by step. A "Per-GEMM precision" box holds the precision
// rules (TrainConfig::precision_rules: the list the advisor and the network editor add to, and the
// two shortcuts as ticks) and the what-if recipes (TrainConfig::what_if), one tick per recipe.
#pragma once
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <optional>
#include <string_view>
#include <vector>

#include "core/numeric/format.h"
#include "core/precision/loss_scaler.h"
#include "core/precision/precision_policy.h"
#include "core/precision/scaled_recipe_config.h"
#include "core/train/train_config.h"

class QBoxLayout;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace mpwb {

class RecipeForm;
class ScalerForm;

class PrecisionPanel : public QWidget {
    Q_OBJECT
public:
    explicit PrecisionPanel(QWidget* parent = nullptr);

    PrecisionKind precision() const;
    void setPrecision(PrecisionKind kind);
    // "cpu" first, then what setDevices gave ("cuda:0 NVIDIA H100", ...); returns the id part
    // before the first space ("cpu", "cuda:0").
    QString device() const;
    void setDevices(const QStringList& devices);  // CUDA entries; CPU is always offered
    // Empty: the policy's default.
    std::optional<Format> weightGradFormat() const;
    void setWeightGradFormat(std::optional<Format> format);

    // The scaler settings as the fields show them (possibly invalid; see scalerIssues).
    LossScalerConfig scalerConfig() const;
    void setScalerConfig(const LossScalerConfig& config);
    // loss_scaler_preset(name) into the fields.
    void applyScalerPreset(const QString& name);
    // Empty when the fields hold a valid configuration; else the issues' messages, one a line.
    QString scalerError() const;
    const std::vector<ConfigIssue>& scalerIssues() const;
    // The editor of a scaler setting ("growth_factor"), for tests and the app's focus.
    QWidget* scalerFieldEditor(std::string_view field) const;
    // The scaled recipe's settings as the form shows them; recipe follows the policy.
    ScaledRecipeConfig recipeConfig() const;
    void setRecipeConfig(const ScaledRecipeConfig& config);
    const std::vector<ConfigIssue>& recipeIssues() const;
    // The editor of a recipe setting ("margin"): object name "recipe_<field>".
    QWidget* recipeFieldEditor(std::string_view field) const;
    // The line under the policy: scaled_recipe_summary of a scaled policy.
    QString policySummary() const;
    // The precision rules and what-if recipes the next run gets.
    PrecisionRules precisionRules() const { return rules_; }
    void setPrecisionRules(const PrecisionRules& rules);
    // Replaces the rule with the same match, else appends it; emits settingsChanged.
    void addPrecisionRule(const PrecisionRule& rule);
    std::vector<ScaledRecipe> whatIf() const;
    void setWhatIf(const std::vector<ScaledRecipe>& recipes);
    // The tick of a what-if recipe (object name "whatIf_<recipe>").
    QCheckBox* whatIfBox(ScaledRecipe recipe) const;
    // Precision, weight-grad format, recipe, scaler, rules and what-if into a TrainConfig.
    TrainConfig applyTo(TrainConfig config) const;

    // Live mode: policy and device are locked; Apply / Set scale / Set LR emit requests.
    void setRunning(bool running);
    void setLearningRate(float lr);

    // Readout of the live scaler state.
    void setReadout(float scale, int64_t skipped, int64_t overflows, float headroom_log2);
    // text: the readable line (event_text); json: the recorded detail, shown as its tooltip.
    void addEvent(int64_t step, const QString& kind, const QString& source, const QString& text,
                  const QString& json = {});
    void clearEvents();
    int eventCount() const;
    // True while the settings and the live column sit side by side (wide enough for both).
    bool sideBySide() const;
    QSize minimumSizeHint() const override;

signals:
    // Any field changed (not running): the app may re-read the settings.
    void settingsChanged();
    // Live requests, emitted only while running and only with valid values.
    void scalerConfigRequested(const mpwb::LossScalerConfig& config);
    // A recipe setting changed while running (valid settings only): applied at the next step.
    void recipeConfigRequested(const mpwb::ScaledRecipeConfig& config);
    void lossScaleRequested(double scale);
    void learningRateRequested(float lr);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void onScalerFieldChanged();
    void onRecipeFieldChanged();
    void onPolicyChanged();
    void onApplyClicked();
    void onSetScaleClicked();
    void onSetLrClicked();
    void updateEnabled();
    QWidget* makePolicyBox();
    QWidget* makeLiveBox();
    QWidget* makeReadoutBox();
    QWidget* makeGemmPrecisionBox();
    void showRules();
    void makeEventTable();

    bool running_ = false;
    QBoxLayout* columns_ = nullptr;  // the two columns, side by side or stacked
    QBoxLayout* left_column_ = nullptr;
    QBoxLayout* right_column_ = nullptr;

    QComboBox* policy_ = nullptr;
    QComboBox* device_ = nullptr;
    QComboBox* wgrad_ = nullptr;
    ScalerForm* scaler_ = nullptr;
    RecipeForm* recipe_ = nullptr;
    QLabel* policy_summary_ = nullptr;
    QLabel* scale_request_error_ = nullptr;
    QPushButton* apply_ = nullptr;
    QDoubleSpinBox* set_scale_log2_ = nullptr;
    QPushButton* set_scale_ = nullptr;
    QLineEdit* lr_ = nullptr;
    QPushButton* set_lr_ = nullptr;
    QLabel* live_hint_ = nullptr;
    QLabel* scale_readout_ = nullptr;
    QLabel* skipped_readout_ = nullptr;
    QLabel* overflow_readout_ = nullptr;
    QLabel* headroom_readout_ = nullptr;
    QTableWidget* events_ = nullptr;
    PrecisionRules rules_;
    std::vector<std::pair<ScaledRecipe, QCheckBox*>> what_if_;
    QCheckBox* keep_ends_ = nullptr;
    QCheckBox* backward_bf16_ = nullptr;
    QLabel* rules_text_ = nullptr;
    QPushButton* clear_rules_ = nullptr;
};

// "3.attn.qkv → mxfp8" when the rule gives its three passes one recipe, else
// "3.attn.qkv → fprop mxfp8, wgrad bf16".
QString precision_rule_text(const PrecisionRule& rule);

}  // namespace mpwb

Q_DECLARE_METATYPE(mpwb::LossScalerConfig)
Q_DECLARE_METATYPE(mpwb::ScaledRecipeConfig)
