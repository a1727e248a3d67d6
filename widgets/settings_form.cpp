// SettingsFormBase: editors made from field descriptions, by kind: a combo box for a choice, a
// power-of-two spin box with the exact value beside it for a scale, spin boxes for numbers, a
// check box for a flag. The spin boxes admit the closed range of a field (1 for a growth factor
// that must exceed 1), so the boundary can be typed and is then reported, not silently refused.
#include "widgets/settings_form.h"

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

// The exact value beside a power-of-two editor.
QString exact_text(double value) { return "= " + QString::number(value, 'g', 7); }

}  // namespace

SettingsFormBase::SettingsFormBase(const QString& title, const QString& prefix, QWidget* parent)
    : QGroupBox(title, parent), prefix_(prefix) {
    error_ = new QLabel;
    error_->setObjectName(prefix + "Error");
    error_->setWordWrap(true);
    error_->setStyleSheet("color: #b00000;");
    error_->hide();
    form_ = new QFormLayout(this);
    form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    // In a narrow dock a long label goes above its editor instead of squeezing it ("E4M").
    form_->setRowWrapPolicy(QFormLayout::WrapLongRows);
}

void SettingsFormBase::buildRows(const std::vector<FieldView>& fields) {
    rows_.reserve(fields.size());
    for (const FieldView& field : fields) {
        Row& row = rows_.emplace_back();
        row.field = field;
        QWidget* shown = makeEditor(row);
        if (field.kind == SettingKind::Flag)
            form_->addRow(shown);
        else
            form_->addRow(tr(field.label), shown);
    }
    form_->addRow(error_);
}

// The editor of row.field, connected to onEdited; returns what goes into the form's row.
QWidget* SettingsFormBase::makeEditor(Row& row) {
    const FieldView& f = row.field;
    QWidget* shown = nullptr;
    switch (f.kind) {
        case SettingKind::Choice: {
            auto* combo = new QComboBox;
            // Sized by a short text, not by its longest choice ("HYBRID (E4M3 fwd, E5M2 grads)"),
            // so a form in a narrow dock never widens the window past a 1366-pixel screen.
            combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
            combo->setMinimumContentsLength(10);
            for (const auto& c : f.choices)
                if (c.label) combo->addItem(tr(c.label), QString::fromLatin1(c.name));
            connect(combo, &QComboBox::currentIndexChanged, this, &SettingsFormBase::onEdited);
            row.editor = shown = combo;
            break;
        }
        case SettingKind::Scale:
            shown = makeScaleEditor(size_t(&row - rows_.data()));
            break;
        case SettingKind::Real: {
            auto* spin = new QDoubleSpinBox;
            spin->setRange(f.min, std::isinf(f.max) ? kRealFormMax : f.max);
            spin->setDecimals(4);
            spin->setSingleStep(f.step);
            connect(spin, &QDoubleSpinBox::valueChanged, this, &SettingsFormBase::onEdited);
            row.editor = shown = spin;
            break;
        }
        case SettingKind::Integer: {
            auto* spin = new QSpinBox;
            spin->setRange(int(f.min), int(std::min(f.max, kIntegerFormMax)));
            connect(spin, &QSpinBox::valueChanged, this, &SettingsFormBase::onEdited);
            row.editor = shown = spin;
            break;
        }
        case SettingKind::Flag: {
            auto* check = new QCheckBox(tr(f.label));
            connect(check, &QCheckBox::toggled, this, &SettingsFormBase::onEdited);
            row.editor = shown = check;
            break;
        }
    }
    row.editor->setObjectName(QStringLiteral("%1_%2").arg(prefix_, QString::fromLatin1(f.name)));
    row.editor->setToolTip(tr(f.help));
    return shown;
}

// A scale is edited as a power of two, with its exact value beside it; the exact value is kept
// until the power is edited, so a preset's FLT_MAX clamp survives the round trip.
QWidget* SettingsFormBase::makeScaleEditor(size_t index) {
    auto* spin = new QDoubleSpinBox;
    spin->setRange(-149.0, 128.0);  // FP32's smallest subnormal to just past its largest value
    spin->setDecimals(2);
    spin->setPrefix("2^");
    Row& row = rows_[index];
    row.value = new QLabel;
    // Wide enough for the widest exact value (FP32's range, 7 digits), so it is never cut.
    row.value->setMinimumWidth(row.value->fontMetrics().horizontalAdvance(exact_text(-8.888888e-88)) + 4);
    // By index: rows_ is complete only after buildRows.
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

nlohmann::json SettingsFormBase::value(size_t index) const {
    const Row& row = rows_[index];
    switch (row.field.kind) {
        case SettingKind::Choice:
            return static_cast<QComboBox*>(row.editor)->currentData().toString().toStdString();
        case SettingKind::Scale:
            return row.exact;
        case SettingKind::Real:
            return static_cast<QDoubleSpinBox*>(row.editor)->value();
        case SettingKind::Integer:
            return static_cast<QSpinBox*>(row.editor)->value();
        case SettingKind::Flag:
            return static_cast<QCheckBox*>(row.editor)->isChecked();
    }
    return {};
}

void SettingsFormBase::show(size_t index, const nlohmann::json& v) {
    Row& row = rows_[index];
    switch (row.field.kind) {
        case SettingKind::Choice: {
            auto* combo = static_cast<QComboBox*>(row.editor);
            combo->setCurrentIndex(combo->findData(QString::fromStdString(v.get<std::string>())));
            break;
        }
        case SettingKind::Scale:
            row.exact = v.get<double>();
            static_cast<QDoubleSpinBox*>(row.editor)->setValue(std::log2(row.exact));
            break;
        case SettingKind::Real:
            static_cast<QDoubleSpinBox*>(row.editor)->setValue(v.get<double>());
            break;
        case SettingKind::Integer: {
            auto* spin = static_cast<QSpinBox*>(row.editor);
            spin->setValue(int(std::min<int64_t>(v.get<int64_t>(), spin->maximum())));
            break;
        }
        case SettingKind::Flag:
            static_cast<QCheckBox*>(row.editor)->setChecked(v.get<bool>());
            break;
    }
}

void SettingsFormBase::load(const std::vector<nlohmann::json>& values) {
    loading_ = true;
    for (size_t i = 0; i < rows_.size() && i < values.size(); ++i) show(i, values[i]);
    loading_ = false;
    onEdited();
}

void SettingsFormBase::showError(const QString& text) {
    error_->setText(text);
    error_->show();
}

QString SettingsFormBase::errorText() const {
    QStringList lines;
    for (const auto& issue : issues_) lines << QString::fromStdString(issue.message);
    return lines.join('\n');
}

QWidget* SettingsFormBase::editor(std::string_view field) const {
    for (const Row& row : rows_)
        if (field == row.field.name) return row.editor;
    return nullptr;
}

void SettingsFormBase::onEdited() {
    if (loading_) return;
    refresh();
    emit changed();
}

void SettingsFormBase::showState(std::vector<ConfigIssue> issues, const std::vector<bool>& applies) {
    issues_ = std::move(issues);
    for (size_t i = 0; i < rows_.size(); ++i) {
        Row& row = rows_[i];
        const auto issue = std::find_if(issues_.begin(), issues_.end(),
                                        [&](const ConfigIssue& is) { return is.field == row.field.name; });
        const bool marked = issue != issues_.end();
        row.editor->setStyleSheet(marked ? kIssueStyle : "");
        row.editor->setToolTip(marked ? QString::fromStdString(issue->message) : tr(row.field.help));
        row.editor->setEnabled(i < applies.size() && applies[i]);
        if (row.value) row.value->setText(exact_text(row.exact));
    }
    error_->setText(errorText());
    error_->setVisible(!issues_.empty());
}

}  // namespace mpwb
