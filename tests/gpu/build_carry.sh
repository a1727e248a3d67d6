#!/bin/bash
# Builds the folder that tests/gpu/device_check.sh carries to a lent GPU machine: .device/ in the
# repository root (git-ignored), holding one archive with the CUDA mpwb-cli, its module, the
# libraries the device image lacks (OpenBLAS and its Fortran runtime, SQLite) and the datasets the
# checks train on (Fashion-MNIST, the fortunes). The device has the CUDA libraries (cuBLASLt,
# cuDNN, the runtime) and PyTorch, but no Debian packages and no network.
#
#   tests/gpu/build_carry.sh [BUILD_DIR]   (default: build; configured with the CUDA module if not)
#
# The archive is xz-compressed: what travels with a device call (the tree and the carried folder)
# must stay under 64 MiB, and OpenBLAS alone is 36 MB uncompressed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[[ $build = /* ]] || build=$root/$build
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPWB_GUI=OFF -DMPWB_CUDA=ON
fi
grep -q '^MPWB_CUDA:STRING=\(AUTO\|ON\)' "$build/CMakeCache.txt" || {
    echo "build_carry: $build is configured without the CUDA module (MPWB_CUDA=OFF)" >&2
    exit 1
}
cmake --build "$build" --target mpwb-cli mpwb_cuda -j"$(nproc)"
cli=$build/app/cli/mpwb-cli
module=$build/app/lib/mpwb/libmpwb_cuda.so
[ -f "$module" ] || { echo "build_carry: no CUDA module at $module" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib/mpwb" "$stage/data"
install -m 755 "$cli" "$stage/bin/mpwb-cli"
install -m 644 "$module" "$stage/lib/mpwb/libmpwb_cuda.so"
strip --strip-unneeded "$stage/bin/mpwb-cli" "$stage/lib/mpwb/libmpwb_cuda.so"
# The program's own libraries that are Debian packages here: the device image may lack them.
for name in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libsqlite3.so.0; do
    path=$(ldd "$cli" | awk -v n="$name" '$1 == n { print $3 }')
    [ -n "$path" ] || { echo "build_carry: mpwb-cli does not load $name" >&2; exit 1; }
    cp -L "$path" "$stage/lib/$name"
done
cp -r /usr/share/datasets/fashion-mnist "$stage/data/fashion-mnist"
cp -rL /usr/share/games/fortunes "$stage/data/fortunes"
git -C "$root" rev-parse --short HEAD >"$stage/commit"

mkdir -p "$root/.device"
tar -C "$stage" -cJf "$root/.device/carry.tar.xz.part" .
mv "$root/.device/carry.tar.xz.part" "$root/.device/carry.tar.xz"
du -h "$root/.device/carry.tar.xz"
