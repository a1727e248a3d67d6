// SettingsForm<Config>: a configuration's settings as a form, built from its field table of
// SettingField<Config> (core/precision/setting_field.h): one editor per field, chosen by the
// field's kind, labelled and explained by the table; fields that do not apply to the current
// values (field.applies) are disabled. Config::issues() is shown as data: the editor of each
// issue's field is highlighted, the messages are listed below. The loss scaler's form
// (ScalerForm) and the scaled recipes' form (RecipeForm) are this one form over their tables.
//
// Qt's moc cannot handle a template QObject, so the editors, the changed() signal and the issue
// display live in SettingsFormBase, which sees each field only through its description
// (FieldView); the template adds what needs the Config type: reading, writing and checking it.
#pragma once
#include <QGroupBox>
#include <QString>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/precision/setting_field.h"

class QFormLayout;
class QLabel;

namespace mpwb {

class SettingsFormBase : public QGroupBox {
    Q_OBJECT
public:
    // The issues of the shown configuration; empty when it is valid.
    const std::vector<ConfigIssue>& issues() const { return issues_; }
    // The messages shown, one per line; empty when valid.
    QString errorText() const;
    // The editor of the named field (nullptr for an unknown name). Its object name is the
    // form's prefix and the field, e.g. "scaler_growth_factor", "recipe_margin".
    QWidget* editor(std::string_view field) const;
    // Shows text as the form's error (a preset that could not be loaded).
    void showError(const QString& text);

signals:
    // A field changed (by the user or by setConfig); issues() is up to date.
    void changed();

protected:
    // What the editors need of a SettingField, whatever its Config.
    struct FieldView {
        const char* name;
        const char* label;
        SettingKind kind;
        const char* help;
        double min, max, step;
        std::span<const SettingChoice> choices;
    };
    SettingsFormBase(const QString& title, const QString& prefix, QWidget* parent);
    // Adds one row per field (after any rows a subclass added to form()).
    void buildRows(const std::vector<FieldView>& fields);
    QFormLayout* form() const { return form_; }
    size_t rowCount() const { return rows_.size(); }
    nlohmann::json value(size_t row) const;
    void show(size_t row, const nlohmann::json& value);
    // Loads values (one per row) into the editors, then refreshes once.
    void load(const std::vector<nlohmann::json>& values);
    // Highlights, tooltips, enabled state and the error list; applies[i]: row i is enabled.
    void showState(std::vector<ConfigIssue> issues, const std::vector<bool>& applies);
    // Recomputes issues and which fields apply from the editors (the template's part).
    virtual void refresh() = 0;

private:
    struct Row {
        FieldView field;
        QWidget* editor = nullptr;  // the spin box, combo box or check box
        QLabel* value = nullptr;    // Scale: the exact value next to the power of two
        double exact = 0.0;         // Scale: the exact value (a preset's FLT_MAX is no power of two)
    };
    QWidget* makeEditor(Row& row);
    QWidget* makeScaleEditor(size_t index);
    void onEdited();

    QString prefix_;
    std::vector<Row> rows_;
    std::vector<ConfigIssue> issues_;
    bool loading_ = false;  // load() in progress: no per-field refresh
    QFormLayout* form_ = nullptr;
    QLabel* error_ = nullptr;
};

template <class Config>
class SettingsForm : public SettingsFormBase {
public:
    SettingsForm(const QString& title, const QString& prefix, std::span<const SettingField<Config>> fields,
                 QWidget* parent = nullptr)
        : SettingsFormBase(title, prefix, parent), fields_(fields) {}

    // The settings as the editors show them (possibly invalid; see issues()), over the members
    // no field covers (a recipe's `recipe`), which come from the last setConfig.
    Config config() const {
        Config c = base_;
        for (size_t i = 0; i < fields_.size(); ++i) fields_[i].set(c, value(i), fields_[i].name);
        return c;
    }
    // Loads every editor, then emits changed() once.
    void setConfig(const Config& config) {
        base_ = config;
        std::vector<nlohmann::json> values;
        for (const auto& f : fields_) values.push_back(f.get(config));
        load(values);
    }

protected:
    // Builds the editors; called by the subclass's constructor once its own rows are in form().
    void buildFields() {
        std::vector<FieldView> views;
        for (const auto& f : fields_)
            views.push_back({f.name, f.label, f.kind, f.help, f.min, f.max, f.step, f.choices});
        buildRows(views);
        setConfig(base_);
    }
    void refresh() override {
        const Config c = config();
        std::vector<bool> applies;
        for (const auto& f : fields_) applies.push_back(f.applies(c));
        showState(c.issues(), applies);
    }

private:
    std::span<const SettingField<Config>> fields_;
    Config base_{};
};

}  // namespace mpwb
