// The one way JSON enters MP Workbench: from network and preset files, from run databases and
// bundles, from the network editor. Text is parsed with a size and a nesting-depth limit (a
// 100k-deep array overflows the stack of anything that walks it recursively: dump(), flatten,
// the network builder), and every nlohmann exception (parse_error, type_error, out_of_range,
// other_error) becomes a JsonInputError whose message names the source and the field
// ("network file a.json is not valid JSON at layers[0].out: number overflow parsing '1e400'").
// Callers that have their own error type (NetworkError, ConfigError, StoreError) rethrow the text.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

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
nlohmann::json parse_json_text(std::string_view text, const std::string& source, const JsonLimits& limits = {});

// Reads and parses a file. what says what the file is for ("network file", "preset file").
// Refuses a missing path, a folder and a file over limits.max_bytes before reading its body.
nlohmann::json read_json_file(const std::string& path, const std::string& what, const JsonLimits& limits = {});

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

}  // namespace mpwb
