#!/bin/sh
# Regenerates the example reports in docs/examples: a 2-D comparison (spiral, FP32 vs
# FP16-mixed vs BF16-mixed) and a Fashion-MNIST one (300 steps), each as HTML and PDF, with the
# PDF's pages rendered to PNG. Trains into a temporary database (never the user's own).
#
#   docs/examples/make_examples.sh [BUILD_DIR]     (default BUILD_DIR: build)
#
# Needs mpwb-cli and mpwb-report built in BUILD_DIR, pdftoppm (poppler-utils) and, for the
# Fashion-MNIST report, Debian's dataset-fashion-mnist in /usr/share/datasets/fashion-mnist.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
cli="$build/app/cli/mpwb-cli"
report="$build/app/report/mpwb-report"
for tool in "$cli" "$report"; do
    [ -x "$tool" ] || { echo "make_examples.sh: $tool is not built" >&2; exit 1; }
done
command -v pdftoppm >/dev/null || { echo "make_examples.sh: pdftoppm not found (apt install poppler-utils)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}

# name, title, then the compare options
make_report() {
    name=$1 title=$2
    shift 2
    db="$work/$name.sqlite"
    "$cli" compare "$@" --db "$db" --tag "example=$name" --quiet >"$work/$name.log"
    "$cli" runs note 2 "Same seed and initial weights as #1; dynamic loss scaling." --db "$db" >/dev/null
    "$report" --db "$db" --runs 1,2,3 --smoothing 0.6 --title "$title" \
        --out "$work/report-$name.html" --out "$work/report-$name.pdf" >/dev/null
    cp "$work/report-$name.html" "$work/report-$name.pdf" "$here/"
    rm -f "$here/report-$name-page-"*.png
    pdftoppm -r 60 -png "$work/report-$name.pdf" "$here/report-$name-page"
    # A 256-colour palette makes the page images a third of the size (ImageMagick, when present).
    if command -v convert >/dev/null; then
        for page in "$here/report-$name-page-"*.png; do convert "$page" -dither None -colors 256 "PNG8:$page"; done
    fi
    echo "wrote $here/report-$name.html, .pdf and $(ls "$here/report-$name-page-"*.png | wc -l) pages"
}

make_report 2d "Spiral: FP32 vs FP16-mixed vs BF16-mixed" \
    --preset spiral-mlp --epochs 60 --stats-every 100
make_report fashion "Fashion-MNIST MLP: FP32 vs FP16-mixed vs BF16-mixed, 300 steps" \
    --preset fashion-mlp --max-steps 300 --eval-every 100 --stats-every 50
