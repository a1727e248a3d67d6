// Text that came from outside the program (file names, class folder names, cells and header
// fields of a data file) made safe to print: a name holding ESC could otherwise recolour or
// rewrite the user's terminal when a message names it, a bell would ring, invalid UTF-8 would
// make the JSON writer throw on a stored class name. One definition, used by every message and
// every stored name that carries such text.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace mpwb {

// Valid UTF-8 text stays as it is except: a backslash becomes "\\"; the C0 controls and DEL
// become C escapes ("\a", "\t", "\n", ...) or "\xNN" ("\x1b" for ESC); the C1 controls and the
// bidirectional overrides, which a terminal or editor acts on, become "\uNNNN"; every byte that
// is not part of valid UTF-8 becomes "\xNN". The result is valid UTF-8 without controls, and
// different bytes never give the same text. Input longer than max_bytes is cut there (at a
// character boundary) and ends in "…".
std::string printable_text(std::string_view bytes, std::size_t max_bytes = std::string_view::npos);

// printable_text line by line, keeping the line breaks and tabs: text a model wrote, shown as
// text.
std::string printable_lines(std::string_view bytes);

// printable_text in single quotes: how a message names a file or quotes a value it read.
std::string quoted_text(std::string_view bytes, std::size_t max_bytes = std::string_view::npos);

// The inverse of printable_text, for text a person types in that form (a prompt field): \\, \a,
// \b, \t, \n, \v, \f, \r, \xNN (one byte) and \uNNNN (a code point, written as UTF-8). A
// backslash that starts none of these means itself, so text typed without escapes stays as it
// is. printable_text's result (uncut) gives back the bytes it came from.
std::string text_from_printable(std::string_view printable);

}  // namespace mpwb
