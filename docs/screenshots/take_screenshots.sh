#!/usr/bin/env bash
# Takes the workbench screenshots in this folder under Xvfb (1600x1000, one at 1366x768):
#   comparison.png   the main window in the middle of an FP32 vs FP16-mixed comparison (spiral)
#   comparison-1366x768.png   the same at the default size on a 1366x768 screen
#   histogram.png    the Gradients tab: exponent histogram with format zones and the heatmap
#   boundary.png     the decision boundaries of both runs
#   run_browser.png  stored runs reopened from the run browser
# Usage: docs/screenshots/take_screenshots.sh [build-dir]   (needs xvfb-run and ImageMagick's import)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
mpwb=$(cd "$build" && pwd)/app/gui/mpwb
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CONFIG_HOME=$work/config  # fresh layout, no saved state
db=$work/runs.sqlite

shot() {  # shot <output.png> <seconds to wait> <mpwb args...>
    shot_at 1600x1000 "$@"
}
shot_at() {  # shot_at <screen WxH> <output.png> <seconds to wait> <mpwb args...>
    local screen=$1 out=$2 wait=$3
    shift 3
    xvfb-run -a -s "-screen 0 ${screen}x24" bash -c '
        "$0" "${@:3}" & pid=$!
        sleep "$2"
        import -window root "$1"
        kill $pid; wait $pid 2>/dev/null || true' "$mpwb" "$out" "$wait" "$@"
}

common=(--db "$db" --preset spiral-mlp --default-layout)
shot "$here/comparison.png" 9 "${common[@]}" --start compare --epochs 6000
shot_at 1366x768 "$here/comparison-1366x768.png" 9 "${common[@]}" --start compare --epochs 6000
shot "$here/histogram.png" 9 "${common[@]}" --start compare --epochs 1500 --tab Gradients
shot "$here/boundary.png" 9 "${common[@]}" --start compare --epochs 1500 --tab "Decision boundary"
# Two finished runs for the browser (runs 9 and 10: each shot above made two).
xvfb-run -a -s '-screen 0 1600x1000x24' "$mpwb" "${common[@]}" --start compare --epochs 60 --quit-when-done
shot "$here/run_browser.png" 8 "${common[@]}" --open-runs 9,10
ls -l "$here"/*.png
