// Preset lookup over the embedded table.
#include "resources/presets.h"

#include <fstream>
#include <string_view>

#include "core/common/error.h"

namespace mpwb {

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
        p.name = j.value("name", origin);
        p.network = j;
        return p;
    }
    if (!j.contains("network")) throw ConfigError(origin + ": a preset needs \"network\" (or \"layers\" for a bare network)");
    p.name = j.value("name", origin);
    p.description = j.value("description", "");
    p.network = j["network"];
    if (j.contains("training")) {
        try {
            p.training = train_config_from_json(j["training"]);
        } catch (const Error& e) {
            throw ConfigError(origin + ": " + e.what());
        }
    }
    return p;
}

Preset load_preset(const std::string& name) {
    for (const auto& [n, text] : embedded_presets())
        if (n == name) return parse_preset(nlohmann::json::parse(text), "preset " + name);
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("unknown preset '" + name + "'; known presets: " + known);
}

Preset load_preset_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw ConfigError("cannot open " + path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw NetworkError(path + " is not valid JSON: " + e.what());
    }
    return parse_preset(j, path);
}

}  // namespace mpwb
