// printable_text: a UTF-8 decoder that refuses what RFC 3629 refuses (overlong forms,
// surrogates, code points past U+10FFFF), the escapes for what may not reach a terminal, and
// text_from_printable, which reads those escapes back.
#include "core/common/printable.h"

#include <cstdint>
#include <cstdio>

namespace mpwb {
namespace {

struct Decoded {
    char32_t code_point = 0;
    std::size_t length = 0;  // 0: the byte at the position starts no valid sequence
};

Decoded decode_utf8(std::string_view s, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char lead = byte(i);
    if (lead < 0x80) return {lead, 1};
    const std::size_t length = (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > s.size()) return {};
    char32_t cp = lead & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return {};
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kSmallest[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
    return {cp, length};
}

// Code points a terminal or a text view acts on instead of showing: C0, DEL, C1 (U+009B is
// CSI on many terminals), and the bidirectional marks, embeddings, overrides and isolates
// that reorder what follows them ("Trojan source").
bool is_control(char32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string hex_escape(const char* format, unsigned value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, format, value);
    return buf;
}

std::string escaped(char32_t cp) {
    switch (cp) {
        case '\\':
            return "\\\\";
        case '\a':
            return "\\a";
        case '\b':
            return "\\b";
        case '\t':
            return "\\t";
        case '\n':
            return "\\n";
        case '\v':
            return "\\v";
        case '\f':
            return "\\f";
        case '\r':
            return "\\r";
        default:
            break;
    }
    return cp < 0x80 ? hex_escape("\\x%02x", static_cast<unsigned>(cp))
                     : hex_escape("\\u%04X", static_cast<unsigned>(cp));
}

}  // namespace

std::string printable_text(std::string_view bytes, std::size_t max_bytes) {
    std::string out;
    out.reserve(bytes.size() < 256 ? bytes.size() : 256);
    std::size_t i = 0;
    while (i < bytes.size()) {
        const Decoded d = decode_utf8(bytes, i);
        if (i + (d.length == 0 ? 1 : d.length) > max_bytes) break;
        if (d.length == 0) {
            out += hex_escape("\\x%02x", static_cast<unsigned char>(bytes[i]));
            ++i;
            continue;
        }
        if (d.code_point == '\\' || is_control(d.code_point))
            out += escaped(d.code_point);
        else
            out.append(bytes.substr(i, d.length));
        i += d.length;
    }
    if (i < bytes.size()) out += "\u2026";
    return out;
}

std::string quoted_text(std::string_view bytes, std::size_t max_bytes) {
    return "'" + printable_text(bytes, max_bytes) + "'";
}

std::string printable_lines(std::string_view bytes) {
    std::string out;
    size_t start = 0;
    while (true) {
        const size_t end = bytes.find_first_of("\n\t", start);
        out += printable_text(bytes.substr(start, end == std::string_view::npos ? end : end - start));
        if (end == std::string_view::npos) return out;
        out += bytes[end];
        start = end + 1;
    }
}

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The value of `digits` hex digits at s[at], or -1 when they are not all there.
long hex_number(std::string_view s, std::size_t at, std::size_t digits) {
    if (at + digits > s.size()) return -1;
    long value = 0;
    for (std::size_t k = 0; k < digits; ++k) {
        const int d = hex_digit(s[at + k]);
        if (d < 0) return -1;
        value = value * 16 + d;
    }
    return value;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// The character a one-letter escape stands for, or 0 when the letter is no escape.
char simple_escape(char letter) {
    switch (letter) {
        case '\\':
            return '\\';
        case 'a':
            return '\a';
        case 'b':
            return '\b';
        case 't':
            return '\t';
        case 'n':
            return '\n';
        case 'v':
            return '\v';
        case 'f':
            return '\f';
        case 'r':
            return '\r';
        default:
            return 0;
    }
}

}  // namespace

std::string text_from_printable(std::string_view printable) {
    std::string out;
    std::size_t i = 0;
    while (i < printable.size()) {
        if (printable[i] != '\\' || i + 1 == printable.size()) {
            out += printable[i++];
            continue;
        }
        const char letter = printable[i + 1];
        if (const char c = simple_escape(letter)) {
            out += c;
            i += 2;
        } else if (const long byte = letter == 'x' ? hex_number(printable, i + 2, 2) : -1; byte >= 0) {
            out += static_cast<char>(byte);
            i += 4;
        } else if (const long cp = letter == 'u' ? hex_number(printable, i + 2, 4) : -1;
                   cp >= 0 && (cp < 0xD800 || cp > 0xDFFF)) {
            append_utf8(out, static_cast<char32_t>(cp));
            i += 6;
        } else {
            out += printable[i++];  // a backslash that starts no escape means itself
        }
    }
    return out;
}

}  // namespace mpwb
