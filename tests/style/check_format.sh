#!/usr/bin/env bash
# Every tracked C++ and CUDA source is as .clang-format lays it out (clang-format-14 from
# Debian, installed by packaging/install-deps.sh). Fix with:
#   git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format-14 -i
# Exit 77 (CTest SKIP) when the tool or the git checkout is missing, saying which.
set -uo pipefail
source_dir=${1:?usage: check_format.sh SOURCE_DIR}
cd "$source_dir"
command -v clang-format-14 >/dev/null || { echo "SKIP: clang-format-14 is not installed (packaging/install-deps.sh installs it)"; exit 77; }
files=$(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' 2>/dev/null) || { echo "SKIP: $source_dir is not a git checkout"; exit 77; }
[ -n "$files" ] || { echo "SKIP: no tracked sources found in $source_dir"; exit 77; }
report=$(echo "$files" | xargs clang-format-14 --dry-run -Werror 2>&1)
if [ -n "$report" ]; then
  echo "$report" | head -40
  echo "sources not laid out as .clang-format says (first messages above)"
  exit 1
fi
echo "$(echo "$files" | wc -l) files as .clang-format lays them out"
