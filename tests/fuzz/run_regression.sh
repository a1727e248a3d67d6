#!/usr/bin/env bash
# Runs every libFuzzer harness of a -DMPWB_FUZZ=ON build over its seed corpus for a fixed time
# (CI: 30 s each). New inputs go to <build>/fuzz-work/<harness>/corpus, never into the tree;
# a finding (crash, sanitizer report, escaped exception, timeout, out of memory) is written to
# <build>/fuzz-work/<harness>/ and fails the run.
#   usage: tests/fuzz/run_regression.sh BUILD_DIR [SECONDS] [HARNESS...]
set -euo pipefail
build=${1:?usage: run_regression.sh BUILD_DIR [SECONDS] [HARNESS...]}
seconds=${2:-30}
shift $(( $# >= 2 ? 2 : 1 ))
source_dir=$(cd "$(dirname "$0")" && pwd)
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  for dir in "$source_dir"/corpus/*/; do harnesses+=("$(basename "$dir")"); done
fi
# Scratch files on tmpfs when there is one: the bundle harness creates a store per input, and
# SQLite's syncs on a disk-backed /tmp cost it most of its speed.
if [ -z "${TMPDIR:-}" ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
# Harnesses run side by side, one per core (FUZZ_JOBS overrides): each is single-threaded, so
# every one still gets its full time on a core and the stage takes a fraction of the wall time.
jobs=${FUZZ_JOBS:-$(nproc)}
run_one() {
  local h=$1 work="$build/fuzz-work/$1"
  mkdir -p "$work/corpus"
  # -timeout and -rss_limit_mb make a slow or memory-hungry input a finding, as a crash is.
  "$build/tests/fuzz/$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$source_dir/corpus/$h" \
      >"$work/log.txt" 2>&1
}
report() {  # prints a finished harness's figures (and its log's tail when it found something)
  local h=$1 status=$2 work="$build/fuzz-work/$1"
  echo "--- $h: ${seconds} s"
  if [ "$status" -ne 0 ]; then tail -n 60 "$work/log.txt"; failed+=("$h"); fi
  grep -E '^stat::number_of_executed_units|^#[0-9]+ +DONE' "$work/log.txt" || true
}
failed=()
declare -A running=()  # pid -> harness
wait_for_one() {
  local pid status=0
  wait -n -p pid "${!running[@]}" || status=$?
  report "${running[$pid]}" "$status"
  unset "running[$pid]"
}
for h in "${harnesses[@]}"; do
  while [ ${#running[@]} -ge "$jobs" ]; do wait_for_one; done
  run_one "$h" &
  running[$!]=$h
done
while [ ${#running[@]} -gt 0 ]; do wait_for_one; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz findings in: ${failed[*]} (inputs in $build/fuzz-work/<harness>/)" >&2
  exit 1
fi
