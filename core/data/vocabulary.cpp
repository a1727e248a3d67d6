// Vocabulary (vocabulary.h): the byte and character tokenizers and their JSON form.
#include "core/data/vocabulary.h"

#include <algorithm>
#include <array>

#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/common/printable.h"
#include "core/common/utf8.h"

namespace mpwb {

namespace {

constexpr int64_t kByteVocabulary = 256;

[[noreturn]] void throw_invalid_utf8(std::string_view text, const std::string& source) {
    throw DataError(source + ": " + utf8_problem(text) + " (character-level tokens need UTF-8 text)");
}

// Decodes `token`, which must be exactly one well-formed character; -1 otherwise.
int64_t single_code_point(std::string_view token) {
    if (token.empty() || !is_valid_utf8(token)) return -1;
    int64_t found = -1, count = 0;
    for_each_code_point(token, [&](char32_t cp, size_t) {
        found = cp;
        ++count;
    });
    return count == 1 ? found : -1;
}

}  // namespace

std::string tokenizer_name(TokenizerKind kind) { return kind == TokenizerKind::Byte ? "byte" : "char"; }

TokenizerKind parse_tokenizer(std::string_view text, std::string_view field) {
    if (text == "byte") return TokenizerKind::Byte;
    if (text == "char") return TokenizerKind::Char;
    throw ConfigError(std::string(field) + " " + quoted_text(text, 64) + " is unknown; choose byte or char");
}

std::string utf8_of(char32_t cp) {
    std::string out;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
}

Vocabulary Vocabulary::bytes() { return {}; }

Vocabulary Vocabulary::characters_of(std::string_view text, const std::string& source) {
    if (text.empty()) throw DataError(source + " is empty: a vocabulary needs at least one character");
    if (!is_valid_utf8(text)) throw_invalid_utf8(text, source);
    // ASCII is most text: a table for it, a sorted set of the rest only when there is any.
    std::array<bool, 128> ascii{};
    std::vector<char32_t> others;
    for_each_code_point(text, [&](char32_t cp, size_t) {
        if (cp < 128)
            ascii[cp] = true;
        else
            others.push_back(cp);
    });
    std::sort(others.begin(), others.end());
    others.erase(std::unique(others.begin(), others.end()), others.end());
    Vocabulary v;
    v.kind_ = TokenizerKind::Char;
    for (char32_t cp = 0; cp < 128; ++cp)
        if (ascii[cp]) v.code_points_.push_back(cp);
    if (static_cast<int64_t>(v.code_points_.size() + others.size()) > kTextMaxVocabulary)
        throw DataError(source + " has " + std::to_string(v.code_points_.size() + others.size()) +
                        " distinct characters, more than the character vocabulary's limit of " +
                        std::to_string(kTextMaxVocabulary) + "; use the byte tokenizer");
    v.code_points_.insert(v.code_points_.end(), others.begin(), others.end());
    return v;
}

Vocabulary Vocabulary::from_json(const nlohmann::json& j, const std::string& where) {
    if (!j.is_object()) throw ConfigError(where + " must be an object with a tokenizer");
    check_setting_keys(j, where, {"tokenizer", "tokens"});
    const auto kind_it = j.find("tokenizer");
    if (kind_it == j.end() || !kind_it->is_string())
        throw ConfigError(where + ".tokenizer must be \"byte\" or \"char\"");
    Vocabulary v;
    v.kind_ = parse_tokenizer(kind_it->get<std::string>(), where + ".tokenizer");
    if (v.kind_ == TokenizerKind::Byte) return v;
    const auto tokens = j.find("tokens");
    if (tokens == j.end() || !tokens->is_array() || tokens->empty())
        throw ConfigError(where + ".tokens must be a non-empty array of characters");
    if (static_cast<int64_t>(tokens->size()) > kTextMaxVocabulary)
        throw ConfigError(where + ".tokens has " + std::to_string(tokens->size()) + " entries, more than " +
                          std::to_string(kTextMaxVocabulary));
    for (size_t i = 0; i < tokens->size(); ++i) {
        const std::string field = where + ".tokens[" + std::to_string(i) + "]";
        const nlohmann::json& t = (*tokens)[i];
        const int64_t cp = t.is_string() ? single_code_point(t.get_ref<const std::string&>()) : -1;
        if (cp < 0) throw ConfigError(field + " must be a string of one character");
        if (!v.code_points_.empty() && static_cast<char32_t>(cp) <= v.code_points_.back())
            throw ConfigError(field + " is out of order: tokens are distinct and sorted by code point");
        v.code_points_.push_back(static_cast<char32_t>(cp));
    }
    return v;
}

nlohmann::json Vocabulary::to_json() const {
    nlohmann::json j{{"tokenizer", tokenizer_name(kind_)}};
    if (kind_ == TokenizerKind::Char) {
        nlohmann::json tokens = nlohmann::json::array();
        for (const char32_t cp : code_points_) tokens.push_back(utf8_of(cp));
        j["tokens"] = std::move(tokens);
    }
    return j;
}

int64_t Vocabulary::size() const {
    return kind_ == TokenizerKind::Byte ? kByteVocabulary : static_cast<int64_t>(code_points_.size());
}

std::string Vocabulary::token(int64_t id) const {
    if (id < 0 || id >= size())
        throw DataError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(size()) + " tokens");
    if (kind_ == TokenizerKind::Byte) return std::string(1, static_cast<char>(id));
    return utf8_of(code_points_[static_cast<size_t>(id)]);
}

std::vector<std::string> Vocabulary::printable_tokens() const {
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(size()));
    for (int64_t id = 0; id < size(); ++id) out.push_back(printable_text(token(id)));
    return out;
}

int32_t Vocabulary::id_of(char32_t code_point) const {
    if (kind_ == TokenizerKind::Byte) return -1;
    const auto it = std::lower_bound(code_points_.begin(), code_points_.end(), code_point);
    if (it == code_points_.end() || *it != code_point) return -1;
    return static_cast<int32_t>(it - code_points_.begin());
}

std::vector<int32_t> Vocabulary::encode(std::string_view text, const std::string& source) const {
    std::vector<int32_t> ids;
    if (kind_ == TokenizerKind::Byte) {
        ids.reserve(text.size());
        for (const char c : text) ids.push_back(static_cast<uint8_t>(c));
        return ids;
    }
    if (!is_valid_utf8(text)) throw_invalid_utf8(text, source);
    for_each_code_point(text, [&](char32_t cp, size_t at) {
        const int32_t id = id_of(cp);
        if (id < 0)
            throw DataError(source + ": the character " + quoted_text(utf8_of(cp)) + " at byte offset " +
                            std::to_string(at) + " is not in the vocabulary of " + std::to_string(size()) +
                            " characters");
        ids.push_back(id);
    });
    return ids;
}

std::string Vocabulary::decode(std::span<const int32_t> ids) const {
    std::string out;
    for (const int32_t id : ids) out += token(id);
    return out;
}

}  // namespace mpwb
