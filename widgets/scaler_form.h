// ScalerForm: the loss scaler's settings as a form, built from the scaler's own field table
// (loss_scaler_fields() in core/precision): one editor per field, chosen by the field's kind,
// labelled and explained by the table. A new setting in the table appears here without widget
// code. The form shows the configuration's issues (LossScalerConfig::issues()) as data: the
// editor of each issue's field is highlighted, the messages are listed below.
#pragma once
#include <QGroupBox>
#include <QString>
#include <string_view>
#include <vector>

#include "core/precision/loss_scaler_config.h"

class QComboBox;
class QLabel;

namespace mpwb {

class ScalerForm : public QGroupBox {
    Q_OBJECT
public:
    explicit ScalerForm(QWidget* parent = nullptr);

    // The settings as the editors show them (possibly invalid; see issues()).
    LossScalerConfig config() const;
    // Loads every editor, then emits changed() once.
    void setConfig(const LossScalerConfig& config);
    // loss_scaler_preset(name) into the editors; an unknown name is shown as the error.
    void applyPreset(const QString& name);

    // The issues of config(), as shown; empty when it is valid.
    const std::vector<ConfigIssue>& issues() const { return issues_; }
    // The messages shown, one per line; empty when valid.
    QString errorText() const;
    // The editor of the named field (nullptr for an unknown name). Its object name is
    // "scaler_<field>", e.g. "scaler_growth_factor".
    QWidget* editor(std::string_view field) const;

signals:
    // A field changed (by the user or by setConfig/applyPreset); issues() is up to date.
    void changed();

private:
    struct Row {
        const ScalerField* field = nullptr;
        QWidget* editor = nullptr;  // the spin box, combo box or check box
        QLabel* value = nullptr;    // Scale: the exact value next to the power of two
        double exact = 0.0;         // Scale: the exact value (a preset's FLT_MAX is no power of two)
    };

    QWidget* makeEditor(Row& row);
    QWidget* makeScaleEditor(Row& row);
    nlohmann::json value(const Row& row) const;
    void show(Row& row, const nlohmann::json& value);
    void onEdited();
    void refresh();

    std::vector<Row> rows_;
    std::vector<ConfigIssue> issues_;
    bool loading_ = false;  // setConfig in progress: no per-field refresh
    QComboBox* like_ = nullptr;
    QLabel* error_ = nullptr;
};

}  // namespace mpwb
