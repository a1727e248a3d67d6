// The two spellings of values that appear in several places: numbers in their shortest
// round-trip decimal form ("0.1", not "0.10000000000000001"; a float as the float it is, so a
// saved 0.001f reads 0.001), and CSV fields quoted per RFC 4180. One definition each, so a
// message, a saved file, a bundle's CSV and a plot export spell the same value the same way.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>

namespace mpwb {

// "nan", "inf", "-inf" for the non-finite values.
template <class Number>
requires std::is_floating_point_v<Number> std::string shortest_text(Number v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

// The double that prints as the float's shortest form: what a float setting is saved as in
// JSON (nlohmann would otherwise write 0.0010000000474974513 for 0.001f). Finite input only.
// from_chars, not stod: the GUI sets the user's locale, and a comma-decimal one would read
// "0.5" as 0.
inline double float_as_json_double(float v) {
    const std::string text = shortest_text(v);
    double value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

// "51,485": a throughput in whole samples per second with thousands separators, as every view
// (run table, runs compare, report, the summary event) writes it.
inline std::string samples_per_second_text(double v) {
    if (!std::isfinite(v)) return shortest_text(v);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", std::abs(v));
    const std::string digits = buf;
    std::string out = v < 0 && digits != "0" ? "-" : "";
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// "91.25%": a fraction as a percentage; "–" when there is none (NaN).
inline std::string percent_text(double fraction, int decimals = 2) {
    if (!std::isfinite(fraction)) return "–";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f%%", decimals, fraction * 100.0);
    return buf;
}

// The field as it is, or in double quotes with inner quotes doubled when it holds a comma, a
// quote or a line break.
inline std::string csv_field(std::string_view v) {
    if (v.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(v);
    std::string quoted = "\"";
    for (char c : v) {
        quoted += c;
        if (c == '"') quoted += '"';
    }
    return quoted + "\"";
}

}  // namespace mpwb
