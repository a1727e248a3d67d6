// libFuzzer harness: the PyTorch script writer (core/nn/pytorch_export.cpp, `mpwb-cli runs export
// --pytorch` and the workbench's Export for PyTorch) with texts that are not its own: the run's
// title, the safetensors file name, the normalisation's description (the dataset path is in
// it) and a text run's vocabulary (its characters, from the run's store), any bytes. The script for them is
// compared with the script for plain texts ("<title>",
// "<file>", "<description>") by a small Python lexer: the code between string literals and comments must be
// the same byte for byte (a text added no code), each plain text's literal must decode, as Python reads it,
// to the fuzzed text exactly, and the whole script must be printable ASCII. An input is a mode byte and two
// lengths, then the texts (the writer throws for no text: any exception is a finding):
//   byte 0: normalisation mode (its value % 3: 0 none, 1 statistics not known, 2 statistics
//           given) and vocabulary (its value / 3 % 3: 0 none, 1 byte tokenizer, 2 character
//           tokenizer whose characters are the description's bytes)
//   byte 1, 2: lengths of the title and the file name; the description is the rest
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/nn/network.h"
#include "core/nn/network_weights.h"
#include "core/nn/pytorch_export.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

[[noreturn]] void finding(const std::string& what, const std::string& script) {
    std::fprintf(stderr, "finding: %s\n--- script ---\n%s\n", what.c_str(), script.c_str());
    std::abort();
}

struct Piece {
    bool literal = false;  // a string literal (else code, comments included)
    std::string text;      // as written in the script
};

// The script as code pieces and string literals, split where Python's tokenizer would split
// them: a quote outside a comment starts a literal (with the prefix letters before it), three
// quotes a triple-quoted one; a backslash takes the next character along; '#' starts a comment
// to the end of the line. nullopt for a literal that does not end.
std::optional<std::vector<Piece>> split_literals(const std::string& script) {
    std::vector<Piece> pieces(1);
    const std::size_t n = script.size();
    for (std::size_t i = 0; i < n;) {
        std::size_t special = i;
        while (special < n && script[special] != '#' && script[special] != '"' && script[special] != '\'')
            ++special;
        pieces.back().text.append(script, i, special - i);
        i = special;
        if (i == n) break;
        const char c = script[i];
        if (c == '#') {
            const std::size_t end = std::min(script.find('\n', i), n);
            pieces.back().text.append(script, i, end - i);
            i = end;
            continue;
        }
        const bool triple = i + 2 < n && script[i + 1] == c && script[i + 2] == c;
        const std::size_t quote_length = triple ? 3 : 1;
        std::size_t j = i + quote_length;
        for (;; ++j) {
            if (j >= n || (!triple && script[j] == '\n')) return std::nullopt;
            if (script[j] == '\\')
                ++j;
            else if (script[j] == c && (!triple || (j + 2 < n && script[j + 1] == c && script[j + 2] == c)))
                break;
        }
        pieces.push_back({true, script.substr(i, j + quote_length - i)});
        pieces.push_back({});
        i = j + quote_length;
    }
    return pieces;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void append_utf8(std::string& out, char32_t cp) {
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
}

// The bytes a plain "..." literal holds as Python reads it, encoded back as
// str.encode("utf-8", "surrogateescape") does (U+DC80..U+DCFF are the bytes 0x80..0xFF). nullopt
// for anything else: a prefix, another quote, an escape the writer never uses or a code point
// that has no bytes.
std::optional<std::string> decode_literal(const std::string& literal) {
    if (literal.size() < 2 || literal.front() != '"' || literal.back() != '"') return std::nullopt;
    std::string bytes;
    for (std::size_t i = 1; i + 1 < literal.size(); ++i) {
        const char c = literal[i];
        if (c != '\\') {
            bytes += c;
            continue;
        }
        const char kind = literal[++i];
        const std::string simple = "\\\"'nrt";
        if (const auto k = simple.find(kind); k != std::string::npos) {
            bytes += std::string("\\\"'\n\r\t")[k];
            continue;
        }
        const int digits = kind == 'x' ? 2 : kind == 'u' ? 4 : kind == 'U' ? 8 : 0;
        if (digits == 0 || i + digits >= literal.size() - 1) return std::nullopt;
        char32_t cp = 0;
        for (int d = 1; d <= digits; ++d) {
            const int v = hex_value(literal[i + d]);
            if (v < 0) return std::nullopt;
            cp = cp * 16 + static_cast<char32_t>(v);
        }
        i += digits;
        if (cp >= 0xDC80 && cp <= 0xDCFF)
            bytes += static_cast<char>(cp - 0xDC00);
        else if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return std::nullopt;
        else
            append_utf8(bytes, cp);
    }
    return bytes;
}

struct Fixture {
    nlohmann::json description;
    mpwb::NetworkWeights weights;
};

// A small network with weights, built once.
const Fixture& fixture() {
    static const Fixture f = [] {
        Fixture x;
        x.description = {{"layers",
                          {{{"type", "Linear"}, {"out", 3}},
                           {{"type", "BatchNorm"}},
                           {{"type", "ReLU"}},
                           {{"type", "Linear"}, {"out", 2}}}}};
        mpwb::Network network = mpwb::Network::from_json(x.description);
        network.build({2});
        network.init(1);
        x.weights = mpwb::network_weights(network, 7);
        return x;
    }();
    return f;
}

std::string script_for(const std::string& title, const std::string& file, const std::string& description,
                       std::uint8_t mode, std::uint8_t vocabulary) {
    mpwb::PytorchExportInfo info;
    if (vocabulary == 1) info.vocabulary.tokenizer = "byte";
    if (vocabulary == 2) info.vocabulary = {"char", description};
    info.title = title;
    info.weights_file = file;
    info.normalisation.description = description;
    info.normalisation.applied = mode != 0;
    if (mode == 2) {
        info.normalisation.stats_shape = {2};
        info.normalisation.mean = {0.5f, -1.0f};
        info.normalisation.stddev = {2.0f, 0.25f};
    }
    return mpwb::make_pytorch_export(fixture().description, fixture().weights, info).script;
}

// `variant` is the normalisation mode plus 3 times the vocabulary mode (see the file comment).
void check(const std::vector<std::string>& texts, std::uint8_t variant) {
    const std::vector<std::string> plain = {"<title>", "<file>", "<description>"};
    const std::uint8_t mode = variant % 3, vocabulary = variant / 3;
    const std::string script = script_for(texts[0], texts[1], texts[2], mode, vocabulary);
    static const auto references = [&] {
        std::vector<std::string> scripts;
        for (std::uint8_t v = 0; v < 9; ++v)
            scripts.push_back(script_for(plain[0], plain[1], plain[2], v % 3, v / 3));
        return scripts;
    }();
    static const auto reference_pieces = [] {
        std::vector<std::optional<std::vector<Piece>>> pieces;
        for (const std::string& reference : references) pieces.push_back(split_literals(reference));
        return pieces;
    }();
    const std::string& reference = references[variant];
    for (unsigned char c : script)
        if (c != '\n' && (c < 0x20 || c > 0x7E)) finding("a byte that is not printable ASCII", script);
    const auto pieces = split_literals(script);
    const auto& expected = reference_pieces[variant];
    if (!expected) finding("the plain script does not split into literals", reference);
    if (!pieces) finding("a string literal does not end", script);
    if (pieces->size() != expected->size())
        finding("the script has other literals than the plain one", script);
    for (std::size_t i = 0; i < pieces->size(); ++i) {
        const Piece& got = (*pieces)[i];
        const Piece& want = (*expected)[i];
        const auto placeholder = want.literal ? decode_literal(want.text) : std::nullopt;
        const auto which = placeholder ? std::find(plain.begin(), plain.end(), *placeholder) : plain.end();
        if (which == plain.end()) {
            if (got.literal != want.literal || got.text != want.text)
                finding("the code differs from the plain script's at piece " + std::to_string(i) + ": " +
                            got.text,
                        script);
            continue;
        }
        const auto decoded = decode_literal(got.text);
        if (!got.literal || !decoded || *decoded != texts[which - plain.begin()])
            finding("the literal of text " + std::to_string(which - plain.begin()) +
                        " does not read back: " + got.text,
                    script);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 3) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data) + 3, size - 3);
    const std::size_t title_length = std::min<std::size_t>(data[1], input.size());
    const std::size_t file_length = std::min<std::size_t>(data[2], input.size() - title_length);
    const std::vector<std::string> texts = {std::string(input.substr(0, title_length)),
                                            std::string(input.substr(title_length, file_length)),
                                            std::string(input.substr(title_length + file_length))};
    try {
        check(texts, static_cast<std::uint8_t>(data[0] % 9));
    } catch (const std::exception& e) {
        finding(std::string("the writer threw for a text: ") + e.what(), {});
    }
    return 0;
}
