// Numeric option validators (see option_checks.h).
#include "app/cli/option_checks.h"

#include <charconv>
#include <cmath>
#include <string>

#include "core/common/text_format.h"

namespace mpwb::cli {
namespace {

// A range bound as a user would write it back: "0.99", not "0.98999999999999999".
std::string number_text(double v) {
    if (std::isinf(v)) return v > 0 ? "infinity" : "-infinity";
    return shortest_text(v);
}

// Parses all of `text` as a base-10 integer of type T; an empty string on success, else why not.
template <typename T>
std::string parse_whole(const std::string& text, T& value) {
    const char* begin = text.data();
    const char* end = begin + text.size();
    if (begin != end && *begin == '+') ++begin;  // from_chars takes '-' but not '+'
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc::result_out_of_range) return "'" + text + "' is too large a number";
    if (ec != std::errc() || ptr != end || begin == end) return "'" + text + "' is not a whole number";
    return {};
}

}  // namespace

CLI::Validator whole_number(std::int64_t min, std::int64_t max) {
    const std::string range = std::to_string(min) + " to " + std::to_string(max);
    return CLI::Validator(
        [min, max, range](std::string& text) -> std::string {
            std::int64_t v = 0;
            std::string why = parse_whole(text, v);
            if (why.empty() && (v < min || v > max)) why = "'" + text + "' is out of range";
            return why.empty() ? why : why + ": expected a whole number from " + range;
        },
        "INT in [" + range + "]");
}

CLI::Validator unsigned_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            std::uint64_t v = 0;
            const std::string why =
                text.rfind('-', 0) == 0 ? "'" + text + "' is negative" : parse_whole(text, v);
            return why.empty() ? why : why + ": expected a whole number from 0 to 18446744073709551615";
        },
        "UINT64");
}

CLI::Validator real_number(double min, double max, bool open_min, bool open_max) {
    const std::string range =
        (open_min ? "(" : "[") + number_text(min) + ", " + number_text(max) + (open_max ? ")" : "]");
    return CLI::Validator(
        [=](std::string& text) -> std::string {
            double v = 0;
            const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || !std::isfinite(v))
                return "'" + text + "' is not a finite number: expected one in " + range;
            const bool below = open_min ? v <= min : v < min;
            const bool above = open_max ? v >= max : v > max;
            if (below || above) return "'" + text + "' is out of range: expected a number in " + range;
            return {};
        },
        "NUMBER in " + range);
}

}  // namespace mpwb::cli
