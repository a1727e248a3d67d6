// Helpers shared by the optimizer and schedule configs: strict JSON reading (unknown keys and
// wrong types are errors that name the key, so a typo in a saved config never silently falls
// back to a default) and float printing in the shortest form that reads back to the same float
// (0.9f prints as 0.9, not 0.8999999761581421). Internal to core/optim.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/common/error.h"

namespace mpwb::optim_detail {

inline std::string float_text(float x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, x);
    return std::string(buf, r.ptr);
}

// A float as a JSON number that prints as its shortest decimal form.
inline nlohmann::json float_json(float x) {
    if (!std::isfinite(x)) return x;  // nlohmann writes null; reading it back is a type error
    return std::stod(float_text(x));
}

inline void check_keys(const nlohmann::json& j, const char* what,
                       std::initializer_list<const char*> keys) {
    if (!j.is_object())
        throw ConfigError(std::string(what) + ": expected a JSON object, got " + j.dump());
    for (auto it = j.begin(); it != j.end(); ++it) {
        bool known = false;
        for (const char* k : keys) known = known || it.key() == k;
        if (!known) {
            std::string valid;
            for (const char* k : keys) valid += (valid.empty() ? "" : ", ") + std::string(k);
            throw ConfigError(std::string(what) + ": unknown key '" + it.key() +
                              "' (valid keys: " + valid + ")");
        }
    }
}

inline void read_key(const nlohmann::json& j, const char* what, const char* key, float& out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_number())
        throw ConfigError(std::string(what) + ": '" + key + "' must be a number, got " + it->dump());
    // A double beyond float's range has no float value (the conversion is undefined), so it is
    // refused here rather than becoming inf or garbage.
    const double value = it->get<double>();
    if (std::isfinite(value) && std::fabs(value) > double(std::numeric_limits<float>::max()))
        throw ConfigError(std::string(what) + ": '" + key + "' is " + it->dump() +
                          ", beyond the largest float (3.4e38)");
    out = static_cast<float>(value);
}

inline void read_key(const nlohmann::json& j, const char* what, const char* key, int64_t& out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_number_integer())
        throw ConfigError(std::string(what) + ": '" + key + "' must be an integer, got " +
                          it->dump());
    // nlohmann keeps integers above INT64_MAX as unsigned; get<int64_t> would wrap them.
    if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        throw ConfigError(std::string(what) + ": '" + key + "' is " + it->dump() +
                          ", beyond the largest 64-bit integer");
    out = it->get<int64_t>();
}

inline void read_key(const nlohmann::json& j, const char* what, const char* key, bool& out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_boolean())
        throw ConfigError(std::string(what) + ": '" + key + "' must be true or false, got " +
                          it->dump());
    out = it->get<bool>();
}

inline void read_key(const nlohmann::json& j, const char* what, const char* key, std::string& out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_string())
        throw ConfigError(std::string(what) + ": '" + key + "' must be a string, got " + it->dump());
    out = it->get<std::string>();
}

}  // namespace mpwb::optim_detail
