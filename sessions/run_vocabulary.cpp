// Reading a text run's stored vocabulary (run_vocabulary.h).
#include "sessions/run_vocabulary.h"

#include <string>

#include "core/common/error.h"
#include "core/common/json_input.h"

namespace mpwb {

std::optional<Vocabulary> run_vocabulary(const Run& run) {
    if (run.versions_json.empty()) return std::nullopt;
    const std::string where = "run " + std::to_string(run.id) + " versions_json";
    nlohmann::json versions;
    try {
        versions = parse_json_text(run.versions_json, where);
    } catch (const JsonInputError& e) {
        throw ConfigError(e.what());
    }
    if (!versions.is_object()) return std::nullopt;
    const auto it = versions.find(kRunVocabularyKey);
    if (it == versions.end()) return std::nullopt;
    return Vocabulary::from_json(*it, where + "." + kRunVocabularyKey);
}

}  // namespace mpwb
