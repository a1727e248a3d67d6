// The non-template half of SettingFlags: flag names, value parsing, help text.
#include "app/cli/setting_flags.h"

#include <algorithm>

namespace mpwb::cli {

std::string setting_flag_name(std::string_view field) {
    std::string flag = "--" + std::string(field);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

namespace {

// The field's name too: an alias ("--init-scale") differs from the flag the message names.
[[noreturn]] void bad_value(std::string_view flag, std::string_view field, const std::string& text,
                            const char* expected) {
    throw ConfigError(std::string(flag) + ": '" + text + "' is not " + expected + " (setting " +
                      std::string(field) + ")");
}

}  // namespace

nlohmann::json setting_flag_value(std::string_view flag, std::string_view field, SettingKind kind,
                                  const std::string& text) {
    switch (kind) {
        case SettingKind::Choice:
            return text;
        case SettingKind::Flag: {
            const std::string t = setting_detail::normalized(text);
            if (t == "true" || t == "on" || t == "yes" || t == "1") return true;
            if (t == "false" || t == "off" || t == "no" || t == "0") return false;
            bad_value(flag, field, text, "true or false (on/off, yes/no, 1/0)");
        }
        case SettingKind::Integer: {
            int64_t v = 0;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, v);
            if (ec == std::errc::result_out_of_range)
                bad_value(flag, field, text, "a whole number within 64 bits");
            if (ec != std::errc() || ptr != end || text.empty())
                bad_value(flag, field, text, "a whole number");
            return v;
        }
        case SettingKind::Real:
        case SettingKind::Scale: {
            char* end = nullptr;
            const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
                bad_value(flag, field, text, "a finite number");
            return v;
        }
    }
    bad_value(flag, field, text, "a value of a known kind");
}

std::string setting_flag_detail::help(const char* help, SettingKind kind,
                                      std::span<const SettingChoice> choices, double min, double max,
                                      bool min_open, bool max_open) {
    std::string text = help;
    switch (kind) {
        case SettingKind::Choice:
            return text + " (" + setting_detail::choice_list(choices) + ")";
        case SettingKind::Real:
        case SettingKind::Integer:
            return text + " (" + setting_detail::range_text(min, max, min_open, max_open) + ")";
        case SettingKind::Scale:
            return text + " (a positive FP32 value)";
        case SettingKind::Flag:
            return text + " (true or false)";
    }
    return text;
}

const char* setting_flag_type(SettingKind kind) {
    switch (kind) {
        case SettingKind::Choice:
            return "NAME";
        case SettingKind::Real:
        case SettingKind::Scale:
            return "FLOAT";
        case SettingKind::Integer:
            return "INT";
        case SettingKind::Flag:
            return "BOOL";
    }
    return "VALUE";
}

}  // namespace mpwb::cli
