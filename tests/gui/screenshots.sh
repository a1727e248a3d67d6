#!/usr/bin/env bash
# Screenshots of the workbench training fortunes-gpt, for the README: under Xvfb at 1366x768 and
# at 1600x1000, build/app/gui/mpwb opens the fortunes-gpt preset (the GPT in the network editor),
# trains it with the Samples tab in front, and `import -window root` writes
#   docs/screenshots/gpt-<W>x<H>-training.png  once the first sample is shown (step 500, live)
#   docs/screenshots/gpt-<W>x<H>-finished.png  once the run ended (--max-steps), samples and Generate
# Not a ctest: a tool to run by hand after a change to what the window shows, and to look at.
# Each size trains 600 steps (about a minute on two idle cores); the waits are on the run store
# (a sample event, the run's status), bounded by MPWB_SHOT_TIMEOUT seconds (default 900).
# Needs: a built mpwb (cmake -DMPWB_GUI=ON), Debian's fortunes, xvfb (Xvfb, xvfb-run), sqlite3 and
# ImageMagick's import (packaging/install-deps.sh installs them).
# Usage: tests/gui/screenshots.sh [build-dir]   (from the source tree's root)
set -euo pipefail

inside=""  # the screen size, when this script runs itself under xvfb-run
if [ "${1:-}" = "--inside" ]; then
  inside=$2
  build=$3
else
  build=${1:-build}
fi
mpwb="$build/app/gui/mpwb"
out=docs/screenshots
timeout=${MPWB_SHOT_TIMEOUT:-900}
for tool in Xvfb xvfb-run import sqlite3; do
  command -v "$tool" >/dev/null || { echo "screenshots.sh: $tool is missing (packaging/install-deps.sh)" >&2; exit 1; }
done
[ -x "$mpwb" ] || { echo "screenshots.sh: no $mpwb; build with -DMPWB_GUI=ON" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CONFIG_HOME=$work/config  # no saved layout

# Polls the run store until the query gives a non-empty answer other than 0, or fails after
# $timeout seconds (or when mpwb has gone).
wait_for() {
  local what=$1 query=$2 pid=$3 waited=0 answer
  while true; do
    answer=$(sqlite3 -readonly "$work/runs.sqlite" "$query" 2>/dev/null || true)
    if [ -n "$answer" ] && [ "$answer" != 0 ]; then return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "screenshots.sh: mpwb ended before $what" >&2; return 1; }
    [ "$waited" -lt "$timeout" ] || { echo "screenshots.sh: no $what after $timeout s" >&2; return 1; }
    sleep 1
    waited=$((waited + 1))
  done
}

# One screen size: runs inside xvfb-run (DISPLAY set), writes the two PNGs.
shoot() {
  local size=$1 pid status
  rm -f "$work"/runs.sqlite*
  # The window takes its default size for the screen (MainWindow::defaultSize), as a user sees it.
  "$mpwb" --db "$work/runs.sqlite" --default-layout --preset fortunes-gpt \
    --max-steps 600 --start train --tab Samples --quit-after "$timeout" >"$work/mpwb.log" 2>&1 &
  pid=$!
  status=0
  # The trainer writes the sample event after the evaluation at step 500; the window's 30 Hz
  # drain shows it within a tick or two of the recorder's write, so a short settle follows.
  wait_for "sample" "SELECT count(*) FROM events WHERE kind = 'sample'" "$pid" || status=1
  if [ "$status" = 0 ]; then
    sleep 2
    import -window root "$out/gpt-$size-training.png"
    wait_for "finished run" "SELECT count(*) FROM runs WHERE status = 'FINISHED'" "$pid" || status=1
  fi
  if [ "$status" = 0 ]; then
    sleep 2
    import -window root "$out/gpt-$size-finished.png"
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [ "$status" = 0 ] || { cat "$work/mpwb.log" >&2; return 1; }
  echo "screenshots.sh: wrote $out/gpt-$size-training.png and $out/gpt-$size-finished.png"
}

if [ -n "$inside" ]; then
  shoot "$inside"
  exit
fi
for size in 1366x768 1600x1000; do
  xvfb-run -a -s "-screen 0 ${size}x24" "$0" --inside "$size" "$build"
done
