// SettingField: one entry of a configuration's table of settings (name, kind, label, help, range,
// choices, and get/set through JSON), and the table machinery every such configuration shares:
// enumeration names, range checks worded for a person, and the strict JSON reader and writer.
// The loss scaler (loss_scaler_config.h) and the scaled recipes (scaled_recipe_config.h) are
// tables of these; the GUI's settings forms and mpwb-cli's flags are built from the tables.
#pragma once
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/error.h"
#include "core/common/json_input.h"

namespace mpwb {

// One name of an enumeration's value: the name written in JSON and accepted on the command line,
// and the form's label for it. An entry without a label is an accepted alias ("off" for none).
struct SettingChoice {
    int value;
    const char* name;
    const char* label;
};

// A setting that is out of range: which one (its name in the table, e.g. "growth_factor") and
// why, worded for a person ("growth_factor must be a finite number greater than 1 (got 1)").
struct ConfigIssue {
    std::string field;
    std::string message;
    bool operator==(const ConfigIssue&) const = default;
};

// What kind of value a setting holds, which decides how it is read, written and edited.
// Scale: a positive FP32 value edited as a power of two.
enum class SettingKind { Choice, Scale, Real, Integer, Flag };

// One setting of Config. get and set carry the value as JSON of the kind's type (string name,
// number, integer, bool), which is what the JSON reader and the form exchange. set checks the
// value's type and that it fits the member (a ConfigError naming path otherwise), not its range:
// the configuration's issues() does that.
template <class Config>
struct SettingField {
    const char* name;   // the JSON key and the field a ConfigIssue names
    const char* label;  // the form's label
    SettingKind kind;
    const char* help;
    // Real and Integer: the valid range; an open end excludes the bound itself. An infinite max
    // means no upper limit. Scale fields are bounded by FP32 instead.
    double min = 0.0;
    double max = 0.0;
    bool min_open = false;
    bool max_open = false;
    double step = 1.0;                       // the form's arrow step for Real
    std::span<const SettingChoice> choices;  // Choice
    // Whether the setting matters under c (the form disables the ones that do not).
    bool (*applies)(const Config& c);
    nlohmann::json (*get)(const Config& c);
    void (*set)(Config& c, const nlohmann::json& value, std::string_view path);
};

// The names of each enumeration, specialised next to the enumeration.
template <class Enum>
std::span<const SettingChoice> setting_choices();
// The setting an enumeration is stored in, for messages ("mode"), specialised likewise.
template <class Enum>
const char* enum_setting_name();

namespace setting_detail {
// Names compare without case, with '-' and ' ' read as '_' ("Every-Clean-Step").
std::string normalized(std::string_view s);
// "none, static or dynamic": the names of the choices, aliases left out.
std::string choice_list(std::span<const SettingChoice> choices);
// The choice named text, or nullptr.
const SettingChoice* find_choice(std::span<const SettingChoice> choices, std::string_view text);
// "greater than 1", "in (0, 1)", "at least 0".
std::string range_text(double min, double max, bool min_open, bool max_open);
// Empty when v is in range; else "<name> must be [a finite number ]<range> (got <shown>)".
std::string range_problem(const char* name, SettingKind kind, double min, double max, bool min_open,
                          bool max_open, const nlohmann::json& value);
[[noreturn]] void throw_unknown_choice(const char* setting, std::span<const SettingChoice> choices,
                                       std::string_view text);
}  // namespace setting_detail

// The enumeration value named text; ConfigError naming the setting and the valid names otherwise.
template <class Enum>
Enum parse_setting_enum(std::string_view text) {
    if (const auto* c = setting_detail::find_choice(setting_choices<Enum>(), text))
        return static_cast<Enum>(c->value);
    setting_detail::throw_unknown_choice(enum_setting_name<Enum>(), setting_choices<Enum>(), text);
}

template <class Enum>
const char* setting_enum_name(Enum value) {
    for (const auto& c : setting_choices<Enum>())
        if (c.value == int(value)) return c.name;
    return "?";
}

// get and set for a member, through the JSON value of its kind: an enumeration by name, the rest
// as themselves, read with the shared strict reader so the member's own type bounds the value.
template <auto Member, class Config>
nlohmann::json get_setting_member(const Config& c) {
    using T = std::remove_cvref_t<decltype(c.*Member)>;
    if constexpr (std::is_enum_v<T>)
        return setting_enum_name(c.*Member);
    else
        return c.*Member;
}

template <auto Member, class Config>
void set_setting_member(Config& c, const nlohmann::json& v, std::string_view path) {
    using T = std::remove_cvref_t<decltype(c.*Member)>;
    if constexpr (std::is_enum_v<T>) {
        const auto name = setting_value<std::string>(v, path);
        const auto* choice = setting_detail::find_choice(setting_choices<T>(), name);
        if (!choice)
            throw ConfigError("setting '" + std::string(path) + "': unknown " + enum_setting_name<T>() +
                              " '" + name + "' (expected " +
                              setting_detail::choice_list(setting_choices<T>()) + ")");
        c.*Member = static_cast<T>(choice->value);
    } else {
        c.*Member = setting_value<T>(v, path);
    }
}

// The range issue of a Real or Integer field; empty when it is fine or has no range.
template <class Config>
std::string setting_range_problem(const SettingField<Config>& f, const Config& c) {
    if (f.kind != SettingKind::Real && f.kind != SettingKind::Integer) return {};
    return setting_detail::range_problem(f.name, f.kind, f.min, f.max, f.min_open, f.max_open, f.get(c));
}

template <class Config>
const SettingField<Config>* find_setting_field(std::span<const SettingField<Config>> fields,
                                               std::string_view name) {
    for (const auto& f : fields)
        if (name == f.name) return &f;
    return nullptr;
}

// Reads the keys of j over c: unknown keys and wrong types are a ConfigError naming the path.
template <class Config>
void read_setting_fields(std::span<const SettingField<Config>> fields, const nlohmann::json& j,
                         std::string_view where, std::string_view what, Config& c) {
    std::vector<std::string_view> names;
    for (const auto& f : fields) names.push_back(f.name);
    check_setting_keys(j, where.empty() ? what : where, names);
    for (const auto& [key, value] : j.items())
        find_setting_field(fields, key)->set(c, value, setting_path(where, key));
}

}  // namespace mpwb
