// ScalerForm: editors made from loss_scaler_fields(), by kind: a combo box for a choice, a
// power-of-two spin box with the exact value beside it for a scale, spin boxes for numbers, a
// check box for a flag. The spin boxes admit the closed range of a field (1 for a growth factor
// that must exceed 1), so the boundary can be typed and is then reported, not silently refused.
#include "widgets/scaler_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QStringList>
#include <algorithm>
#include <cmath>

namespace mpwb {

namespace {

// Where a field has no upper limit the spin box still needs one.
constexpr double kRealFormMax = 1e6;
constexpr double kIntegerFormMax = 1e9;
constexpr const char* kIssueStyle = "background: #ffd0d0;";
constexpr const char* kPresets[] = {"pytorch", "deepspeed", "megatron", "nnabla",
                                    "static",  "none",      "default"};

}  // namespace

ScalerForm::ScalerForm(QWidget* parent) : QGroupBox(tr("Loss scaler"), parent) {
    like_ = new QComboBox;
    like_->setObjectName("likeCombo");
    like_->addItem(tr("Like…"));
    for (const char* p : kPresets) like_->addItem(QString::fromLatin1(p));
    like_->setToolTip(tr("Load the reference system's default scaler rules"));
    connect(like_, &QComboBox::activated, this, [this](int i) {
        if (i > 0) applyPreset(like_->itemText(i));
        like_->setCurrentIndex(0);
    });
    error_ = new QLabel;
    error_->setObjectName("scalerError");
    error_->setWordWrap(true);
    error_->setStyleSheet("color: #b00000;");
    error_->hide();

    auto* form = new QFormLayout(this);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->addRow(tr("Preset"), like_);
    rows_.reserve(loss_scaler_fields().size());
    for (const auto& field : loss_scaler_fields()) {
        Row& row = rows_.emplace_back();
        row.field = &field;
        QWidget* shown = makeEditor(row);
        if (field.kind == ScalerFieldKind::Flag)
            form->addRow(shown);
        else
            form->addRow(tr(field.label), shown);
    }
    form->addRow(error_);
    setConfig(LossScalerConfig{});
}

// The editor of row.field, connected to onEdited; returns what goes into the form's row.
QWidget* ScalerForm::makeEditor(Row& row) {
    const ScalerField& f = *row.field;
    const QString name = QStringLiteral("scaler_%1").arg(QString::fromLatin1(f.name));
    QWidget* shown = nullptr;
    switch (f.kind) {
        case ScalerFieldKind::Choice: {
            auto* combo = new QComboBox;
            for (const auto& c : f.choices)
                if (c.label) combo->addItem(tr(c.label), QString::fromLatin1(c.name));
            connect(combo, &QComboBox::currentIndexChanged, this, &ScalerForm::onEdited);
            row.editor = shown = combo;
            break;
        }
        case ScalerFieldKind::Scale:
            shown = makeScaleEditor(row);
            break;
        case ScalerFieldKind::Real: {
            auto* spin = new QDoubleSpinBox;
            spin->setRange(f.min, std::isinf(f.max) ? kRealFormMax : f.max);
            spin->setDecimals(4);
            spin->setSingleStep(f.step);
            connect(spin, &QDoubleSpinBox::valueChanged, this, &ScalerForm::onEdited);
            row.editor = shown = spin;
            break;
        }
        case ScalerFieldKind::Integer: {
            auto* spin = new QSpinBox;
            spin->setRange(int(f.min), int(std::min(f.max, kIntegerFormMax)));
            connect(spin, &QSpinBox::valueChanged, this, &ScalerForm::onEdited);
            row.editor = shown = spin;
            break;
        }
        case ScalerFieldKind::Flag: {
            auto* check = new QCheckBox(tr(f.label));
            connect(check, &QCheckBox::toggled, this, &ScalerForm::onEdited);
            row.editor = shown = check;
            break;
        }
    }
    row.editor->setObjectName(name);
    row.editor->setToolTip(tr(f.help));
    return shown;
}

// A scale is edited as a power of two, with its exact value beside it; the exact value is kept
// until the power is edited, so a preset's FLT_MAX clamp survives the round trip.
QWidget* ScalerForm::makeScaleEditor(Row& row) {
    auto* spin = new QDoubleSpinBox;
    spin->setRange(-149.0, 128.0);  // FP32's smallest subnormal to just past its largest value
    spin->setDecimals(2);
    spin->setPrefix("2^");
    row.value = new QLabel;
    row.value->setMinimumWidth(110);
    // By index: rows_ is complete only after the constructor.
    const size_t index = size_t(&row - rows_.data());
    connect(spin, &QDoubleSpinBox::valueChanged, this, [this, index](double k) {
        if (loading_) return;
        rows_[index].exact = std::exp2(k);
        onEdited();
    });
    row.editor = spin;
    auto* shown = new QWidget;
    auto* h = new QHBoxLayout(shown);
    h->setContentsMargins(0, 0, 0, 0);
    h->addWidget(spin);
    h->addWidget(row.value, 1);
    return shown;
}

nlohmann::json ScalerForm::value(const Row& row) const {
    switch (row.field->kind) {
        case ScalerFieldKind::Choice:
            return static_cast<QComboBox*>(row.editor)->currentData().toString().toStdString();
        case ScalerFieldKind::Scale:
            return row.exact;
        case ScalerFieldKind::Real:
            return static_cast<QDoubleSpinBox*>(row.editor)->value();
        case ScalerFieldKind::Integer:
            return static_cast<QSpinBox*>(row.editor)->value();
        case ScalerFieldKind::Flag:
            return static_cast<QCheckBox*>(row.editor)->isChecked();
    }
    return {};
}

void ScalerForm::show(Row& row, const nlohmann::json& v) {
    switch (row.field->kind) {
        case ScalerFieldKind::Choice: {
            auto* combo = static_cast<QComboBox*>(row.editor);
            combo->setCurrentIndex(combo->findData(QString::fromStdString(v.get<std::string>())));
            break;
        }
        case ScalerFieldKind::Scale:
            row.exact = v.get<double>();
            static_cast<QDoubleSpinBox*>(row.editor)->setValue(std::log2(row.exact));
            break;
        case ScalerFieldKind::Real:
            static_cast<QDoubleSpinBox*>(row.editor)->setValue(v.get<double>());
            break;
        case ScalerFieldKind::Integer: {
            auto* spin = static_cast<QSpinBox*>(row.editor);
            spin->setValue(int(std::min<int64_t>(v.get<int64_t>(), spin->maximum())));
            break;
        }
        case ScalerFieldKind::Flag:
            static_cast<QCheckBox*>(row.editor)->setChecked(v.get<bool>());
            break;
    }
}

LossScalerConfig ScalerForm::config() const {
    LossScalerConfig c;
    for (const Row& row : rows_) row.field->set(c, value(row), row.field->name);
    return c;
}

void ScalerForm::setConfig(const LossScalerConfig& config) {
    loading_ = true;
    for (Row& row : rows_) show(row, row.field->get(config));
    loading_ = false;
    onEdited();
}

void ScalerForm::applyPreset(const QString& name) {
    try {
        setConfig(loss_scaler_preset(name.toStdString()));
    } catch (const std::exception& e) {
        error_->setText(QString::fromUtf8(e.what()));
        error_->show();
    }
}

QString ScalerForm::errorText() const {
    QStringList lines;
    for (const auto& issue : issues_) lines << QString::fromStdString(issue.message);
    return lines.join('\n');
}

QWidget* ScalerForm::editor(std::string_view field) const {
    for (const Row& row : rows_)
        if (field == row.field->name) return row.editor;
    return nullptr;
}

void ScalerForm::onEdited() {
    if (loading_) return;
    refresh();
    emit changed();
}

// Issues, highlights, scale values and which fields apply, from config().
void ScalerForm::refresh() {
    const LossScalerConfig c = config();
    issues_ = c.issues();
    for (Row& row : rows_) {
        const auto issue = std::find_if(issues_.begin(), issues_.end(),
                                        [&](const ConfigIssue& i) { return i.field == row.field->name; });
        const bool marked = issue != issues_.end();
        row.editor->setStyleSheet(marked ? kIssueStyle : "");
        row.editor->setToolTip(marked ? QString::fromStdString(issue->message) : tr(row.field->help));
        row.editor->setEnabled(row.field->applies(c));
        if (row.value) row.value->setText("= " + QString::number(row.exact, 'g', 7));
    }
    error_->setText(errorText());
    error_->setVisible(!issues_.empty());
}

}  // namespace mpwb
