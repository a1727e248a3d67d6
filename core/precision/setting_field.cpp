// The shared pieces of the settings tables: enumeration names and range messages.
#include "core/precision/setting_field.h"

#include <cctype>

#include "core/common/text_format.h"

namespace mpwb::setting_detail {

std::string normalized(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (c == '-' || c == ' ') c = '_';
    }
    return out;
}

std::string choice_list(std::span<const SettingChoice> choices) {
    std::vector<const char*> names;
    for (const auto& c : choices)
        if (c.label) names.push_back(c.name);
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
        out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
    return out;
}

const SettingChoice* find_choice(std::span<const SettingChoice> choices, std::string_view text) {
    const std::string wanted = normalized(text);
    for (const auto& c : choices)
        if (wanted == c.name) return &c;
    return nullptr;
}

std::string range_text(double min, double max, bool min_open, bool max_open) {
    if (std::isinf(max)) return (min_open ? "greater than " : "at least ") + shortest_text(min);
    return "in " + std::string(min_open ? "(" : "[") + shortest_text(min) + ", " + shortest_text(max) +
           (max_open ? ")" : "]");
}

std::string range_problem(const char* name, SettingKind kind, double min, double max, bool min_open,
                          bool max_open, const nlohmann::json& value) {
    const double v = value.get<double>();
    const bool above_min = min_open ? v > min : v >= min;
    const bool below_max = max_open ? v < max : v <= max;
    if (std::isfinite(v) && above_min && below_max) return {};
    const std::string shown = value.is_number_integer() ? value.dump() : shortest_text(v);
    const char* what = kind == SettingKind::Real ? "a finite number " : "";
    return std::string(name) + " must be " + what + range_text(min, max, min_open, max_open) + " (got " +
           shown + ")";
}

void throw_unknown_choice(const char* setting, std::span<const SettingChoice> choices,
                          std::string_view text) {
    throw ConfigError("unknown " + std::string(setting) + " '" + std::string(text) + "' (expected " +
                      choice_list(choices) + ")");
}

}  // namespace mpwb::setting_detail
