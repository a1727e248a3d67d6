// SettingFlags: one command-line option per entry of a settings table (SettingField, the table
// the GUI's forms and the JSON reader use too), so a new setting is a new flag without code
// here. The flag is the field's name with '_' as '-' ("amax_history_len" -> --amax-history-len),
// or a given spelling kept from before the table existed. Values are read as the field's kind
// (a name, a number, a whole number, true/false) and every error names the flag.
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
// The flag's text as the JSON value of a field of this kind; ConfigError "<flag>: ..." otherwise.
nlohmann::json setting_flag_value(std::string_view flag, SettingKind kind, const std::string& text);
// The option's help: the field's help, plus its choices ("max, most_recent").
std::string setting_flag_help(const char* help, std::span<const SettingChoice> choices);

template <class Config>
class SettingFlags {
public:
    using Field = SettingField<Config>;
    // spellings: flags kept for fields whose name alone would give another one.
    SettingFlags(std::span<const Field> fields, std::map<std::string, std::string> spellings = {})
        : fields_(fields), spellings_(std::move(spellings)) {}

    void add_to(CLI::App& app, const std::string& group) {
        for (const Field& f : fields_) {
            app.add_option(flag(f.name), values_[f.name], setting_flag_help(f.help, f.choices))->group(group);
        }
    }

    bool any() const {
        for (const auto& [name, value] : values_)
            if (value) return true;
        return false;
    }

    // The flag of a field ("--margin").
    std::string flag(std::string_view field) const {
        const auto it = spellings_.find(std::string(field));
        return it != spellings_.end() ? it->second : setting_flag_name(field);
    }

    // Sets every given flag's field of c; ConfigError naming the flag for a value of the wrong
    // kind. Ranges are the configuration's issues() (check_issues).
    void apply(Config& c) const {
        for (const Field& f : fields_) {
            const auto it = values_.find(f.name);
            if (it == values_.end() || !it->second) continue;
            const std::string name = flag(f.name);
            f.set(c, setting_flag_value(name, f.kind, *it->second), name);
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
    std::map<std::string, std::string> spellings_;
    // Node-based: CLI11 keeps a reference to each value.
    std::map<std::string, std::optional<std::string>> values_;
};

}  // namespace mpwb::cli
