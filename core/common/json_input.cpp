// JSON input: nlohmann's parser with a callback that enforces the depth limit (it throws before
// the over-deep container is opened, so no tree deeper than the limit ever exists) and keeps
// the path of the value being parsed, so a parse error can name its field.
#include "core/common/json_input.h"

#include <fstream>
#include <vector>

#include "core/common/input_file.h"

namespace mpwb {
namespace {

using nlohmann::json;

// Thrown from the parser callback; carries nothing, the tracker knows where.
struct TooDeep {};

// Where the parser is: one frame per open object or array.
class JsonPath {
public:
    void on_event(json::parse_event_t event, const json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start:
                frames_.push_back({false, {}, 0});
                break;
            case json::parse_event_t::array_start:
                frames_.push_back({true, {}, 0});
                break;
            case json::parse_event_t::key:
                if (!frames_.empty() && parsed.is_string())
                    frames_.back().key = parsed.get_ref<const std::string&>();
                break;
            case json::parse_event_t::value:
                element_done();
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                if (!frames_.empty()) frames_.pop_back();
                element_done();
                break;
        }
    }

    // "layers[2].out"; the first frames only when the path is very deep.
    std::string text() const {
        constexpr size_t kShown = 12;
        std::string out;
        for (size_t i = 0; i < frames_.size() && i < kShown; ++i) {
            const Frame& f = frames_[i];
            if (f.array) {
                out += '[';
                out += std::to_string(f.index);
                out += ']';
            } else if (!f.key.empty()) {
                if (!out.empty()) out += '.';
                out += f.key;
            }
        }
        if (frames_.size() > kShown) out += "...";
        return out;
    }

private:
    struct Frame {
        bool array;
        std::string key;
        int64_t index;
    };
    // A value (or a whole container) ended: the next one in an array has the next index, and
    // in an object the key is spent until the next key arrives.
    void element_done() {
        if (frames_.empty()) return;
        if (frames_.back().array)
            ++frames_.back().index;
        else
            frames_.back().key.clear();
    }
    std::vector<Frame> frames_;
};

std::string at_path(const JsonPath& path) {
    const std::string p = path.text();
    return p.empty() ? std::string() : " at " + p;
}

}  // namespace

std::string json_exception_text(const json::exception& e) {
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0) {
        const auto end = what.find("] ");
        if (end != std::string::npos) what.erase(0, end + 2);
    }
    return what;
}

json parse_json_text(std::string_view text, const std::string& source, const JsonLimits& limits) {
    if (text.size() > limits.max_bytes)
        throw JsonInputError(source + " is " + byte_size_text(text.size()) + ", more than the " +
                             byte_size_text(limits.max_bytes) + " a JSON input may have");
    JsonPath path;
    const int max_depth = limits.max_depth;
    const json::parser_callback_t track = [&](int depth, json::parse_event_t event, json& parsed) {
        // depth counts the containers already open around this event.
        const bool opens =
            event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
        if (opens && depth >= max_depth) throw TooDeep{};
        path.on_event(event, parsed);
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), track);
    } catch (const TooDeep&) {
        throw JsonInputError(source + " holds JSON nested deeper than " + std::to_string(max_depth) +
                             " levels" + at_path(path) + "; it is refused");
    } catch (const json::exception& e) {
        throw JsonInputError(source + " is not valid JSON" + at_path(path) + ": " + json_exception_text(e));
    }
}

json read_json_file(const std::string& path, const std::string& what, const JsonLimits& limits) {
    const std::string source = what + " " + path;
    if (const std::string problem = input_file_problem(path); !problem.empty())
        throw JsonInputError("cannot open " + source + ": it " + problem);
    const uint64_t size = input_file_size(path);
    if (size > limits.max_bytes)
        throw JsonInputError(source + " is " + byte_size_text(size) + ", more than the " +
                             byte_size_text(limits.max_bytes) + " a " + what + " may have");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw JsonInputError("cannot open " + source);
    // Only the bytes measured above: a file that grows meanwhile cannot make this read unbounded.
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) throw JsonInputError("cannot read " + source);
    text.resize(static_cast<size_t>(in.gcount()));
    return parse_json_text(text, source, limits);
}

void check_json_text(std::string_view text, const std::string& source, const JsonLimits& limits) {
    (void)parse_json_text(text, source, limits);
}

namespace {
// The value as a message shows it: cut after 80 characters, invalid UTF-8 replaced (so that
// writing the message cannot throw).
std::string shown_value(const nlohmann::json& value) {
    constexpr std::size_t kShown = 80;
    std::string shown = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return shown.size() > kShown ? shown.substr(0, kShown) + "…" : shown;
}
}  // namespace

std::string setting_path(std::string_view where, std::string_view key) {
    return where.empty() ? std::string(key) : std::string(where) + "." + std::string(key);
}

void check_setting_keys(const nlohmann::json& object, std::string_view what,
                        const std::vector<std::string_view>& known) {
    if (!object.is_object())
        throw ConfigError(std::string(what) + " must be a JSON object, got " + shown_value(object));
    for (const auto& [key, value] : object.items()) {
        bool found = false;
        for (std::string_view k : known) found = found || key == k;
        if (found) continue;
        std::string valid;
        for (std::string_view k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
        throw ConfigError("unknown setting '" + key + "' in " + std::string(what) +
                          " (valid settings: " + valid + ")");
    }
}

void throw_bad_setting(std::string_view path, const nlohmann::json& value, std::string_view wanted) {
    throw ConfigError("setting '" + std::string(path) + "' must be " + std::string(wanted) + ", got " +
                      shown_value(value));
}

}  // namespace mpwb
