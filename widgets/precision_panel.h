// PrecisionPanel: the precision policy (with a one-line explanation of each scaled recipe), the
// device, the weight-gradient format, the scaled recipe's settings (RecipeForm, built from
// scaled_recipe_fields(); shown for the scaled policies) and the loss
// scaler's settings (ScalerForm, built from the scaler's field table), with the reference
// systems' presets ("like PyTorch", ...). The issues LossScalerConfig::issues() reports are
// shown inline, on the field they name, and an invalid configuration is never emitted. While a run goes on,
// the scaler settings, the loss scale and the learning rate can be changed: "Apply" emits a request that the
// app forwards to the trainer, which applies it at the next step boundary. A readout and an event list show
// what the scaler and the user did, step by step.
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
    // Precision, weight-grad format, recipe and scaler into a TrainConfig.
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
};

}  // namespace mpwb

Q_DECLARE_METATYPE(mpwb::LossScalerConfig)
Q_DECLARE_METATYPE(mpwb::ScaledRecipeConfig)
