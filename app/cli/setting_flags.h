// SettingFlags: one command-line option per entry of a settings table (SettingField, the table
// the GUI's forms and the JSON reader use too), so a new setting is a new flag without code
// here: its help, choices and range come from the entry. The flag is the field's name with '_'
// as '-' ("amax_history_len" -> --amax-history-len), or a spelling given where the name alone
// says too little on a command line (the scaler's "mode" is --scaler); older spellings stay as
// aliases. Values are read as the field's kind (a name, a number, a whole number, true/false),
// ranges are the configuration's issues(), and every error names the flag.
#pragma once
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/precision/setting_field.h"

namespace mpwb::cli {

// "amax_history_len" -> "--amax-history-len".
std::string setting_flag_name(std::string_view field);
// The flag's text as the JSON value of a field of this kind; ConfigError "<flag>: ..." naming the
// field otherwise.
nlohmann::json setting_flag_value(std::string_view flag, std::string_view field, SettingKind kind,
                                  const std::string& text);
// The option's help: the field's help, plus its choices ("max or most_recent") or its range
// ("at least 1"); and the name of its value ("INT", "FLOAT", "NAME", "BOOL").
template <class Config>
std::string setting_flag_help(const SettingField<Config>& f);
const char* setting_flag_type(SettingKind kind);

// How the flag of one field is spelled where its derived name is not the whole story.
struct FlagSpelling {
    std::string flag;                  // replaces the derived name; empty: the derived name
    std::vector<std::string> aliases;  // older spellings that keep working ("--init-scale")
};

namespace setting_flag_detail {
std::string help(const char* help, SettingKind kind, std::span<const SettingChoice> choices, double min,
                 double max, bool min_open, bool max_open);
}

template <class Config>
std::string setting_flag_help(const SettingField<Config>& f) {
    return setting_flag_detail::help(f.help, f.kind, f.choices, f.min, f.max, f.min_open, f.max_open);
}

template <class Config>
class SettingFlags {
public:
    using Field = SettingField<Config>;
    // spellings: by field name, for the fields whose flag is not (only) their derived name.
    SettingFlags(std::span<const Field> fields, std::map<std::string, FlagSpelling> spellings = {})
        : fields_(fields), spellings_(std::move(spellings)) {}

    void add_to(CLI::App& app, const std::string& group) {
        for (const Field& f : fields_)
            app.add_option(names(f.name), values_[f.name], setting_flag_help(f))
                ->type_name(setting_flag_type(f.kind))
                ->group(group);
    }

    bool any() const {
        for (const auto& [name, value] : values_)
            if (value) return true;
        return false;
    }

    // Whether the flag of a field was given.
    bool given(std::string_view field) const {
        const auto it = values_.find(std::string(field));
        return it != values_.end() && it->second.has_value();
    }

    // The flag of a field ("--margin"), the one its errors name.
    std::string flag(std::string_view field) const {
        const auto it = spellings_.find(std::string(field));
        return it != spellings_.end() && !it->second.flag.empty() ? it->second.flag
                                                                  : setting_flag_name(field);
    }

    // Every spelling of a field's flag, as CLI11 takes them: "--initial-scale,--init-scale".
    std::string names(std::string_view field) const {
        std::string out = flag(field);
        if (const auto it = spellings_.find(std::string(field)); it != spellings_.end())
            for (const std::string& alias : it->second.aliases) out += "," + alias;
        return out;
    }

    // Sets every given flag's field of c; ConfigError naming the flag for a value of the wrong
    // kind. Ranges are the configuration's issues() (check_issues).
    void apply(Config& c) const {
        for (const Field& f : fields_) {
            const auto it = values_.find(f.name);
            if (it == values_.end() || !it->second) continue;
            const std::string name = flag(f.name);
            f.set(c, setting_flag_value(name, f.name, f.kind, *it->second), name);
        }
    }

    // The given flags whose field does not apply to c (f.applies false), in table order.
    std::vector<std::string> given_but_unused(const Config& c) const {
        std::vector<std::string> out;
        for (const Field& f : fields_) {
            const auto it = values_.find(f.name);
            if (it != values_.end() && it->second && !f.applies(c)) out.push_back(flag(f.name));
        }
        return out;
    }

    // Throws ConfigError "<flag>: <message>" for the first issue.
    void check_issues(const std::vector<ConfigIssue>& issues) const {
        if (!issues.empty()) throw ConfigError(flag(issues.front().field) + ": " + issues.front().message);
    }

private:
    std::span<const Field> fields_;
    std::map<std::string, FlagSpelling> spellings_;
    // Node-based: CLI11 keeps a reference to each value.
    std::map<std::string, std::optional<std::string>> values_;
};

}  // namespace mpwb::cli
