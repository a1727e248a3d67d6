// UTF-8 for text that is stored and written back out: a run's name, tags and note come from
// command lines, the workbench and bundles, and JSON (nlohmann) throws on the first invalid byte
// it meets, so one such text made `runs list --json` fail for a whole store. Text is refused
// where it enters (utf8_problem), and JSON of stored text is written with invalid sequences
// replaced by U+FFFD (json_text), so a text that got in some other way cannot hide the rest.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace mpwb {

// Byte offset of the first byte that does not start a well-formed UTF-8 sequence (an overlong
// form, a surrogate, a code point above U+10FFFF, a stray continuation byte or a sequence cut
// short), or std::string_view::npos when the whole text is well-formed.
std::size_t first_invalid_utf8(std::string_view text);

inline bool is_valid_utf8(std::string_view text) {
    return first_invalid_utf8(text) == std::string_view::npos;
}

// "" for well-formed text, else what is wrong and where: "byte 0xFF at offset 3 is not valid
// UTF-8", for a message that names the field.
std::string utf8_problem(std::string_view text);

// The text with each invalid sequence (its maximal ill-formed part, as Unicode recommends and
// nlohmann's error_handler_t::replace does) replaced by U+FFFD.
std::string replace_invalid_utf8(std::string_view text);

// j.dump(indent) with invalid UTF-8 in its strings written as U+FFFD instead of throwing: the one
// way the programs write JSON that holds stored text.
std::string json_text(const nlohmann::json& j, int indent = -1);

}  // namespace mpwb
