// Preset lookup over the embedded table.
#include "resources/presets.h"

#include <string_view>

#include "core/common/error.h"
#include "core/common/json_input.h"

namespace mpwb {

namespace {

// A string setting of a preset, or fallback when absent; a ConfigError naming it otherwise.
std::string string_field(const nlohmann::json& j, const char* key, const std::string& fallback,
                         const std::string& origin) {
    const auto it = j.find(key);
    if (it == j.end()) return fallback;
    if (!it->is_string())
        throw ConfigError(origin + ": \"" + key + "\" must be a string, gets " + it->dump());
    return it->get<std::string>();
}

}  // namespace

const std::vector<std::pair<std::string_view, std::string_view>>& embedded_presets();

std::vector<std::string> preset_names() {
    std::vector<std::string> names;
    for (const auto& [name, text] : embedded_presets()) names.emplace_back(name);
    return names;
}

Preset parse_preset(const nlohmann::json& j, const std::string& origin) {
    if (!j.is_object()) throw ConfigError(origin + ": a preset must be a JSON object");
    Preset p;
    if (j.contains("layers")) {  // a bare network file
        p.name = string_field(j, "name", origin, origin);
        p.network = j;
        return p;
    }
    if (!j.contains("network"))
        throw ConfigError(origin + ": a preset needs \"network\" (or \"layers\" for a bare network)");
    p.name = string_field(j, "name", origin, origin);
    p.description = string_field(j, "description", "", origin);
    p.network = j["network"];
    if (j.contains("training")) {
        try {
            p.training = train_config_from_json(j["training"]);
            p.training.validate();
        } catch (const Error& e) {
            throw ConfigError(origin + ": " + e.what());
        } catch (const nlohmann::json::exception& e) {  // a get<T>() a reader did not check
            throw ConfigError(origin + ", \"training\": " + json_exception_text(e));
        }
    }
    return p;
}

Preset load_preset(const std::string& name) {
    for (const auto& [n, text] : embedded_presets())
        if (n == name) return parse_preset(parse_json_text(text, "preset " + name), "preset " + name);
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown preset '" + name + "'; known presets: " + known);
}

Preset load_preset_file(const std::string& path) {
    nlohmann::json j;
    try {
        j = read_json_file(path, "network or preset file");
    } catch (const JsonInputError& e) {
        throw ConfigError(e.what());
    }
    return parse_preset(j, path);
}

}  // namespace mpwb
