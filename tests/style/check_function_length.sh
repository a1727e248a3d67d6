#!/usr/bin/env bash
# No function over 80 lines in core/, sessions/, widgets/ and app/ (CODING_GUIDELINES: split a
# long function into named steps). A function's length runs from the line of its name to its
# closing brace, as Universal Ctags (Debian's universal-ctags, installed by
# packaging/install-deps.sh) parses C++, C++17 nested namespaces, lambdas and CUDA sources
# included; pmccabe was tried first and skips every file that opens `namespace a::b {`.
# The only exceptions are named in function_length_allow.txt ("path name", generated tables).
#
# Usage: check_function_length.sh SOURCE_DIR [FILE...]
#   With FILEs (relative to SOURCE_DIR), only those are checked (check_function_length_self.sh
#   plants a long function that way); else every tracked source of the four folders.
# Exit 1 naming each long function; 77 (CTest SKIP) when the tool or the checkout is missing.
set -uo pipefail
readonly max_lines=80
source_dir=${1:?usage: check_function_length.sh SOURCE_DIR [FILE...]}
shift
allow_file="$(cd "$(dirname "$0")" && pwd)/function_length_allow.txt"
cd "$source_dir" || exit 1
command -v ctags-universal >/dev/null ||
  { echo "SKIP: ctags-universal is not installed (packaging/install-deps.sh installs it)"; exit 77; }
if [ $# -gt 0 ]; then
  files=$(printf '%s\n' "$@")
else
  files=$(git ls-files 'core/*' 'sessions/*' 'widgets/*' 'app/*' 2>/dev/null |
            grep -E '\.(cpp|h|cu|cuh)$') || { echo "SKIP: $source_dir is not a git checkout"; exit 77; }
fi
[ -n "$files" ] || { echo "SKIP: no sources found in $source_dir"; exit 77; }

# "path name" pairs that may be long; '#' starts a comment.
allowed=$(sed -e 's/#.*//' -e 's/[[:space:]]\+/ /g' -e 's/^ //' -e 's/ $//' "$allow_file" | grep -v '^$')

# One line per function definition: first line, last line, name, file. Lambdas are named
# __anon...; they count as functions of their own (and inside the function around them).
report=$(echo "$files" | xargs ctags-universal --language-force=C++ --kinds-C++=f --fields=+ne \
           -x --_xformat='%{line} %{end} %N %F' |
         awk -v max="$max_lines" -v allowed="$allowed" '
           BEGIN { n = split(allowed, list, "\n"); for (i = 1; i <= n; i++) ok[list[i]] = 1 }
           {
             lines = $2 - $1 + 1
             if (lines <= max) next
             name = ($3 ~ /^__anon/) ? "a lambda" : $3
             if (ok[$4 " " $3]) { kept++; next }
             printf "%s:%d: %s is %d lines (at most %d)\n", $4, $1, name, lines, max
           }
           END { if (kept) printf "(%d long functions allowed by function_length_allow.txt)\n", kept }' |
         sort)
long=$(echo "$report" | grep -c ': .* is [0-9]* lines')
echo "$report" | sed '/^$/d'
if [ "$long" -gt 0 ]; then
  echo "$long function(s) over $max_lines lines: split them into named steps"
  exit 1
fi
echo "$(echo "$files" | wc -l) files, no function over $max_lines lines"
