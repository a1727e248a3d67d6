// ScalerForm and RecipeForm: the loss scaler's settings (loss_scaler_fields()) and the scaled
// recipes' settings (scaled_recipe_fields()) as forms, both the one SettingsForm over their
// field tables (widgets/settings_form.h). A new setting in a table appears here without widget
// code. ScalerForm adds the reference systems' presets ("Like…").
#pragma once
#include <QString>

#include "core/precision/loss_scaler_config.h"
#include "core/precision/scaled_recipe_config.h"
#include "widgets/settings_form.h"

class QComboBox;

namespace mpwb {

class ScalerForm : public SettingsForm<LossScalerConfig> {
    Q_OBJECT
public:
    explicit ScalerForm(QWidget* parent = nullptr);
    // loss_scaler_preset(name) into the editors; an unknown name is shown as the error.
    void applyPreset(const QString& name);

private:
    QComboBox* like_ = nullptr;
};

// Editors' object names are "recipe_<field>"; the fields the chosen recipe does not use are
// disabled (setConfig's config.recipe decides).
class RecipeForm : public SettingsForm<ScaledRecipeConfig> {
    Q_OBJECT
public:
    explicit RecipeForm(QWidget* parent = nullptr);
};

}  // namespace mpwb
