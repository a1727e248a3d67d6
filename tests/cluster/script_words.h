// How the two readers of a generated sbatch script split its lines into words, for the checks of
// `sweep slurm`'s script (tests/cluster/test_sweep_script.cpp, tests/fuzz/fuzz_sbatch_script.cpp):
//   sbatch_arguments: sbatch's own reading of what follows "#SBATCH" (Slurm 22.05,
//     src/sbatch/opt.c, _get_argument): whitespace outside quotes ends an argument (even after
//     a backslash), '"' and '\'' group, a backslash takes the next character as it is, an
//     unquoted '#' ends the line, and so does an argument with no character (a comment, "").
//   shell_words: bash's reading of one simple command line, enough to tell that a value stayed
//     inside one word with nothing expanded: single quotes, double quotes, backslashes, and
//     whether an unquoted operator (; & | < > ( ) `) or an expansion ($ or `) appears.
#pragma once
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpwb::test {

// The arguments sbatch takes from `rest`, the line after "#SBATCH"; nullopt where sbatch stops
// with a fatal error (an unmatched quote, an argument that starts with ':').
inline std::optional<std::vector<std::string>> sbatch_arguments(std::string_view rest) {
    std::vector<std::string> arguments;
    std::size_t i = 0;
    const auto space = [&](std::size_t k) { return std::isspace(static_cast<unsigned char>(rest[k])) != 0; };
    while (true) {
        while (i < rest.size() && space(i)) ++i;
        if (i < rest.size() && rest[i] == ':') return std::nullopt;
        if (i >= rest.size()) return arguments;
        std::string argument;
        bool escaped = false;
        char quote = 0;
        for (; i < rest.size() && (quote || !space(i)) && rest[i] != '\n'; ++i) {
            const char c = rest[i];
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
                continue;
            } else if (quote) {
                if (c == quote) {
                    quote = 0;
                    continue;
                }
            } else if (c == '"' || c == '\'') {
                quote = c;
                continue;
            } else if (c == '#') {
                break;
            }
            argument += c;
        }
        if (quote) return std::nullopt;
        // Nothing taken (a comment, an empty "" or ''): sbatch reads no further on this line.
        if (argument.empty()) return arguments;
        arguments.push_back(argument);
    }
}

struct ShellWord {
    std::string text;      // the word after quote removal
    bool expands = false;  // holds a $ or ` that bash would expand
};

struct ShellLine {
    std::vector<ShellWord> words;
    bool has_operator = false;  // an unquoted ; & | < > ( ) or a comment
    bool complete = true;       // false: a quote left open or a trailing backslash (continues)
};

inline ShellLine shell_words(std::string_view line) {
    ShellLine result;
    ShellWord word;
    bool in_word = false;
    char quote = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quote == '\'') {
            if (c == '\'')
                quote = 0;
            else
                word.text += c;
            continue;
        }
        if (quote == '"') {
            if (c == '"')
                quote = 0;
            else if (c == '\\' && i + 1 < line.size() &&
                     std::string_view("$`\"\\").find(line[i + 1]) != std::string_view::npos)
                word.text += line[++i];
            else {
                word.expands = word.expands || c == '$' || c == '`';
                word.text += c;
            }
            continue;
        }
        if (c == ' ' || c == '\t') {
            if (in_word) result.words.push_back(word);
            word = {};
            in_word = false;
            continue;
        }
        if (c == '#' && !in_word) {
            result.has_operator = true;
            break;
        }
        if (std::string_view(";&|<>()\n").find(c) != std::string_view::npos) {
            result.has_operator = true;
            continue;
        }
        in_word = true;
        if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '\\') {
            if (i + 1 == line.size())
                result.complete = false;
            else
                word.text += line[++i];
        } else {
            word.expands = word.expands || c == '$' || c == '`';
            word.text += c;
        }
    }
    if (quote) result.complete = false;
    if (in_word) result.words.push_back(word);
    return result;
}

}  // namespace mpwb::test
