#!/usr/bin/env bash
# Installs everything MP Workbench needs to build, test and run on Debian 12.
# Idempotent: packages already present are skipped by apt.
# Usage: packaging/install-deps.sh
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
packages=(
  build-essential cmake ninja-build pkg-config
  qt6-base-dev qt6-base-dev-tools libqt6svg6 qt6-qpa-plugins
  libqcustomplot-dev libqcustomplot2.1-qt6
  libsqlite3-dev sqlite3 libopenblas-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev
  dataset-fashion-mnist
  # The built-in text corpus (core/data/text_corpus.h): the cookie files of both packages.
  fortunes fortunes-min
  xvfb xauth fonts-dejavu-core
  # ImageMagick's import: the workbench screenshots (tests/gui/screenshots.sh, docs/screenshots).
  imagemagick
  # Packaging test (lintian on both .debs, help2man man pages), the load test of the suite,
  # the sanitizer / libFuzzer builds of .ci/run, the layout check and the function length check
  # (tests/style).
  dpkg-dev fakeroot lintian help2man stress-ng
  clang-14 libclang-rt-14-dev libfuzzer-14-dev clang-format-14 universal-ctags
  # The cluster test (tests/cluster): a one-node Slurm with munge authentication.
  slurm-wlm munge
  # Image-folder datasets (stb_image, in core), and the PyTorch export round trip of the suite
  # (the exported script runs under Debian's torch; also the PyTorch comparison bench).
  libstb-dev python3-numpy python3-torch
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
