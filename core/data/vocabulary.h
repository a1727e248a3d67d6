// Vocabulary: how the token ids of a text dataset map to text and back. It is a value of its own,
// not part of the reader, because three things must agree on it long after the file was read:
// the run that trained on the ids (it is stored with the run), sampling (`generate` turns a
// prompt into ids and ids into text) and the PyTorch export (which writes it beside the model).
//
// Byte-level: 256 tokens, id = the byte. Character-level: one token per distinct Unicode
// character (code point) of the text it was built from, sorted by code point, so the same
// training text always gives the same ids.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mpwb {

enum class TokenizerKind { Byte, Char };

// "byte" / "char".
std::string tokenizer_name(TokenizerKind kind);
// "byte" or "char"; ConfigError naming `field` and the valid names otherwise.
TokenizerKind parse_tokenizer(std::string_view text, std::string_view field);

// The most tokens a character vocabulary may have: a CJK novel uses under 10,000 distinct
// characters, and ids are stored as float, exact up to 2^24.
inline constexpr int64_t kTextMaxVocabulary = 65'536;

class Vocabulary {
public:
    // The 256 bytes.
    static Vocabulary bytes();
    // The distinct characters of `text`, sorted by code point. DataError naming `source` for
    // invalid UTF-8 (the byte offset), an empty text, or more than kTextMaxVocabulary characters.
    static Vocabulary characters_of(std::string_view text, const std::string& source);
    // From to_json's form; ConfigError naming `where` and the field ("<where>.tokens[3]: ...")
    // for an unknown key, an unknown tokenizer, a token that is not one character, tokens out of order or
    // repeated, or too many.
    static Vocabulary from_json(const nlohmann::json& j, const std::string& where);

    // {"tokenizer": "byte"} or {"tokenizer": "char", "tokens": ["\n", " ", "!", ...]}.
    nlohmann::json to_json() const;

    TokenizerKind kind() const { return kind_; }
    int64_t size() const;
    // The token's text: one byte (byte level; not valid UTF-8 alone from 0x80 up) or one
    // character's UTF-8. Throws DataError for an id out of range.
    std::string token(int64_t id) const;
    // Every token in printable form (core/common/printable): class names, messages, the UI.
    std::vector<std::string> printable_tokens() const;

    // The ids of `text`. DataError naming `source` for invalid UTF-8 (character level; the byte
    // offset) or a character that is not in the vocabulary (its offset and printable form).
    std::vector<int32_t> encode(std::string_view text, const std::string& source = "text") const;
    // Character level: the id of one character (code point), or -1 when the vocabulary lacks
    // it. Byte level: -1 (a character is several ids there; use encode).
    int32_t id_of(char32_t code_point) const;
    // The text of `ids`; DataError for an id out of range. Byte level may give invalid UTF-8
    // (a character cut by sampling): print it through printable_text.
    std::string decode(std::span<const int32_t> ids) const;

    bool operator==(const Vocabulary&) const = default;

private:
    TokenizerKind kind_ = TokenizerKind::Byte;
    std::vector<char32_t> code_points_;  // character level: sorted, distinct
};

// Calls visit(code_point, byte_offset) for each character of `text`, which must be valid UTF-8
// (first_invalid_utf8 found nothing): the one decoder of the text datasets.
template <class Visit>
void for_each_code_point(std::string_view text, Visit&& visit) {
    for (size_t at = 0; at < text.size();) {
        const auto lead = static_cast<uint8_t>(text[at]);
        const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
        for (size_t k = 1; k < length && at + k < text.size(); ++k)
            cp = (cp << 6) | (static_cast<uint8_t>(text[at + k]) & 0x3F);
        visit(cp, at);
        at += length;
    }
}

// The UTF-8 of one code point (at most U+10FFFF, not a surrogate).
std::string utf8_of(char32_t code_point);

}  // namespace mpwb
