#!/usr/bin/env bash
# check_function_length.sh can fail: it must name a planted 81-line function (in a C++17 nested
# namespace, which pmccabe skips whole) and pass its 80-line neighbour.
# Exit 77 (CTest SKIP) where the checker skips.
set -uo pipefail
checker="$(cd "$(dirname "$0")" && pwd)/check_function_length.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
body_lines() { for ((i = 0; i < $1; ++i)); do echo "    total += $i;"; done; }
{
  echo "namespace planted::deep {"
  echo "int just_80_lines() {"; echo "    int total = 0;"; body_lines 76; echo "    return total;"; echo "}"
  echo "int planted_81_lines() {"; echo "    int total = 0;"; body_lines 77; echo "    return total;"; echo "}"
  echo "}  // namespace planted::deep"
} >"$dir/planted.cpp"
output=$("$checker" "$dir" planted.cpp)
rc=$?
echo "$output"
[ "$rc" -eq 77 ] && exit 77
fail() { echo "FAIL: $1"; exit 1; }
[ "$rc" -eq 1 ] || fail "the checker passed an 81-line function (exit $rc)"
echo "$output" | grep -q "planted.cpp:82: planted_81_lines is 81 lines" || fail "the 81-line function is not named"
echo "$output" | grep -q "just_80_lines" && fail "an 80-line function was reported"
echo "the planted 81-line function fails the check; its 80-line neighbour passes"
