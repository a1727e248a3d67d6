// The one way JSON enters MP Workbench: from network and preset files, from run databases and
// bundles, from the network editor. Text is parsed with a size and a nesting-depth limit (a
// 100k-deep array overflows the stack of anything that walks it recursively: dump(), flatten,
// the network builder), and every nlohmann exception (parse_error, type_error, out_of_range,
// other_error) becomes a JsonInputError whose message names the source and the field
// ("network file a.json is not valid JSON at layers[0].out: number overflow parsing '1e400'").
// Callers that have their own error type (NetworkError, ConfigError, StoreError) rethrow the text.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/common/error.h"

namespace mpwb {

// Deeper than any description MP Workbench writes (a network is 3 levels, an event 4), far
// shallower than what overflows a thread's stack in a recursive walk.
inline constexpr int kJsonMaxDepth = 64;
// A network with thousands of layers is well under 1 MiB; 4 MiB keeps the parsed tree small.
inline constexpr std::size_t kJsonMaxBytes = std::size_t{4} << 20;

struct JsonLimits {
    int max_depth = kJsonMaxDepth;
    std::size_t max_bytes = kJsonMaxBytes;
};

class JsonInputError : public Error {
public:
    using Error::Error;
};

// source names where the text came from, e.g. "network file /tmp/a.json" or
// "bundle b.mpwb, run 1f2e…, config_json"; it starts every message.
nlohmann::json parse_json_text(std::string_view text, const std::string& source,
                               const JsonLimits& limits = {});

// Reads and parses a file. what says what the file is for ("network file", "preset file").
// Refuses a missing path, a folder and a file over limits.max_bytes before reading its body.
nlohmann::json read_json_file(const std::string& path, const std::string& what,
                              const JsonLimits& limits = {});

// Validates text under the limits without keeping a tree (bundle import checks every stored
// JSON column this way). Throws JsonInputError like parse_json_text.
void check_json_text(std::string_view text, const std::string& source, const JsonLimits& limits = {});

// nlohmann's message without its "[json.exception.type_error.302] " prefix.
std::string json_exception_text(const nlohmann::json::exception& e);

// Runs f (which reads fields of already parsed JSON) and turns a nlohmann exception that escapes
// it into a JsonInputError naming the source: the last line of defence for a get<T>() that was
// not checked; field readers should name the field themselves.
template <class F>
decltype(auto) with_json_source(const std::string& source, F&& f) {
    try {
        return std::forward<F>(f)();
    } catch (const nlohmann::json::exception& e) {
        throw JsonInputError(source + ": " + json_exception_text(e));
    }
}

// ---- Settings: strict reading of the fields of a saved configuration ----
// Training settings, optimizer, schedule and loss scaler are read key by key with the readers
// below: an unknown key, a value of the wrong type or a number beyond the field's C++ type is a
// ConfigError naming the field by its path ("optimizer.beta1", "dataset.noise"), so a typo never
// falls back to a default and 1e300 never reaches an int through an undefined conversion.

// "optimizer" and "beta1" give "optimizer.beta1"; an empty where gives the key alone.
std::string setting_path(std::string_view where, std::string_view key);

// Throws ConfigError unless object is a JSON object whose keys are all in known. what names the
// object in the message ("training settings", "optimizer").
void check_setting_keys(const nlohmann::json& object, std::string_view what,
                        const std::vector<std::string_view>& known);

// "setting 'path' must be <wanted>, got <value>" (a long value is cut).
[[noreturn]] void throw_bad_setting(std::string_view path, const nlohmann::json& value,
                                    std::string_view wanted);

namespace json_detail {
template <class Int>
std::string integer_range_text() {
    const std::string bits = std::to_string(sizeof(Int) * 8) + "-bit integer (";
    return (std::is_signed_v<Int> ? "a " : "an unsigned ") + bits +
           std::to_string(std::numeric_limits<Int>::min()) + " to " +
           std::to_string(std::numeric_limits<Int>::max()) + ")";
}
}  // namespace json_detail

// The value of the setting at path as a T (bool, an integer type, float, double, std::string).
// Numbers are range-checked before conversion: nlohmann converts with static_cast, which is
// undefined for a double beyond the target's range and wraps integers beyond it.
template <class T>
T setting_value(const nlohmann::json& v, std::string_view path) {
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) throw_bad_setting(path, v, "true or false");
        return v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
        if (!v.is_number_integer()) throw_bad_setting(path, v, "an integer");
        const bool fits = v.is_number_unsigned()
                              ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                              : std::in_range<T>(v.get<int64_t>());
        if (!fits) throw_bad_setting(path, v, json_detail::integer_range_text<T>());
        return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number()) throw_bad_setting(path, v, "a number");
        const double x = v.get<double>();
        if (!std::isfinite(x)) throw_bad_setting(path, v, "a finite number");
        if (std::fabs(x) > double(std::numeric_limits<T>::max()))
            throw_bad_setting(path, v,
                              std::is_same_v<T, float>
                                  ? "a number no larger in magnitude than the largest float (3.4e38)"
                                  : "a finite number");
        return static_cast<T>(x);
    } else {
        static_assert(std::is_same_v<T, std::string>, "settings are bool, integers, floats or strings");
        if (!v.is_string()) throw_bad_setting(path, v, "a string");
        return v.get<std::string>();
    }
}

// Reads object[key] into out when the key is there; out keeps its value otherwise.
template <class T>
void read_setting(const nlohmann::json& object, std::string_view where, const char* key, T& out) {
    const auto it = object.find(key);
    if (it != object.end()) out = setting_value<T>(*it, setting_path(where, key));
}

}  // namespace mpwb
