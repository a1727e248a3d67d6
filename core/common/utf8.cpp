// UTF-8 validation and repair (see utf8.h), by the table of well-formed byte sequences in the
// Unicode standard (section 3.9, table 3-7).
#include "core/common/utf8.h"

#include <cstdint>
#include <cstdio>

namespace mpwb {

namespace {

// The sequence that starts at text[at]: its length when it is well-formed, else 0 with `bad` set
// to the length of its maximal ill-formed part (at least 1): the bytes one U+FFFD replaces.
std::size_t sequence_at(std::string_view text, std::size_t at, std::size_t& bad) {
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
    const std::uint8_t lead = byte(at);
    if (lead < 0x80) return 1;
    std::size_t length = 0;
    std::uint8_t second_lo = 0x80, second_hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) second_lo = 0xA0;  // overlong
        if (lead == 0xED) second_hi = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) second_lo = 0x90;  // overlong
        if (lead == 0xF4) second_hi = 0x8F;  // above U+10FFFF
    } else {
        bad = 1;
        return 0;
    }
    for (std::size_t k = 1; k < length; ++k) {
        const bool in_range = at + k < text.size() && byte(at + k) >= (k == 1 ? second_lo : 0x80) &&
                              byte(at + k) <= (k == 1 ? second_hi : 0xBF);
        if (!in_range) {
            bad = k;
            return 0;
        }
    }
    return length;
}

}  // namespace

std::size_t first_invalid_utf8(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        // ASCII runs are most text: skip them without the table.
        if (static_cast<std::uint8_t>(text[at]) < 0x80) {
            ++at;
            continue;
        }
        std::size_t bad = 0;
        const std::size_t length = sequence_at(text, at, bad);
        if (length == 0) return at;
        at += length;
    }
    return std::string_view::npos;
}

std::string utf8_problem(std::string_view text) {
    const std::size_t at = first_invalid_utf8(text);
    if (at == std::string_view::npos) return {};
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<std::uint8_t>(text[at])));
    return std::string("byte ") + byte + " at offset " + std::to_string(at) + " is not valid UTF-8";
}

std::string replace_invalid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t at = 0; at < text.size();) {
        std::size_t bad = 0;
        const std::size_t length = sequence_at(text, at, bad);
        if (length == 0) {
            out += "\xEF\xBF\xBD";
            at += bad;
        } else {
            out.append(text.substr(at, length));
            at += length;
        }
    }
    return out;
}

std::string json_text(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mpwb
