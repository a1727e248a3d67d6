// ScalerForm's preset row and RecipeForm; the editors are SettingsForm's.
#include "widgets/scaler_form.h"

#include <QComboBox>
#include <QFormLayout>

namespace mpwb {

namespace {
constexpr const char* kPresets[] = {"pytorch", "deepspeed", "megatron", "nnabla",
                                    "static",  "none",      "default"};
}  // namespace

ScalerForm::ScalerForm(QWidget* parent)
    : SettingsForm<LossScalerConfig>(tr("Loss scaler"), QStringLiteral("scaler"), loss_scaler_fields(),
                                     parent) {
    like_ = new QComboBox;
    like_->setObjectName("likeCombo");
    like_->addItem(tr("Like…"));
    for (const char* p : kPresets) like_->addItem(QString::fromLatin1(p));
    like_->setToolTip(tr("Load the reference system's default scaler rules"));
    connect(like_, &QComboBox::activated, this, [this](int i) {
        if (i > 0) applyPreset(like_->itemText(i));
        like_->setCurrentIndex(0);
    });
    form()->addRow(tr("Preset"), like_);
    buildFields();
}

void ScalerForm::applyPreset(const QString& name) {
    try {
        setConfig(loss_scaler_preset(name.toStdString()));
    } catch (const std::exception& e) {
        showError(QString::fromUtf8(e.what()));
    }
}

RecipeForm::RecipeForm(QWidget* parent)
    : SettingsForm<ScaledRecipeConfig>(tr("Recipe settings"), QStringLiteral("recipe"),
                                       scaled_recipe_fields(), parent) {
    buildFields();
}

}  // namespace mpwb
