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

[[noreturn]] void bad_value(std::string_view flag, const std::string& text, const char* expected) {
    throw ConfigError(std::string(flag) + ": '" + text + "' is not " + expected);
}

}  // namespace

nlohmann::json setting_flag_value(std::string_view flag, SettingKind kind, const std::string& text) {
    switch (kind) {
        case SettingKind::Choice:
            return text;
        case SettingKind::Flag: {
            const std::string t = setting_detail::normalized(text);
            if (t == "true" || t == "on" || t == "yes" || t == "1") return true;
            if (t == "false" || t == "off" || t == "no" || t == "0") return false;
            bad_value(flag, text, "true or false (on/off, yes/no, 1/0)");
        }
        case SettingKind::Integer: {
            int64_t v = 0;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, v);
            if (ec == std::errc::result_out_of_range) bad_value(flag, text, "a whole number within 64 bits");
            if (ec != std::errc() || ptr != end || text.empty()) bad_value(flag, text, "a whole number");
            return v;
        }
        case SettingKind::Real:
        case SettingKind::Scale: {
            char* end = nullptr;
            const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
                bad_value(flag, text, "a finite number");
            return v;
        }
    }
    bad_value(flag, text, "a value of a known kind");
}

std::string setting_flag_help(const char* help, std::span<const SettingChoice> choices) {
    std::string text = help;
    if (!choices.empty()) text += " (" + setting_detail::choice_list(choices) + ")";
    return text;
}

}  // namespace mpwb::cli
