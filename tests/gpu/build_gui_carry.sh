#!/bin/bash
# Builds the workbench's own archive for a lent GPU machine, .device/gui.tar.xz (git-ignored),
# for the `gui` phase of tests/gpu/device_check.sh: `mpwb` run offscreen with the CUDA backend.
# The device image has glibc, libstdc++ and the CUDA libraries but no Qt, no fonts and no package
# registry, so the archive holds:
#   bin/mpwb                             stripped
#   bin/qt.conf                          Qt's plugin folder is the archive's, not /usr/lib/...
#   lib/                                 every library mpwb and Qt's offscreen plugin load, except
#                                        the toolchain's own (glibc, libstdc++, libgcc_s: the
#                                        device's are newer than this Debian 12's) and, unless
#                                        --standalone, the four the main carry already has
#   plugins/platforms/libqoffscreen.so   the only platform plugin a screenless machine can use
#   fonts/DejaVuSans.ttf, fonts.conf     one font, so the plots' labels lay out and draw
#   lib/mpwb/libmpwb_cuda.so             --standalone only (else the main carry's module)
#
#   tests/gpu/build_gui_carry.sh [--standalone] [BUILD_DIR]
#     BUILD_DIR   default build-gui; configured with the GUI and the CUDA module if not yet
#     MPWB_GUI_FULL_ICU=1  carry ICU's data library whole (see below)
#     --standalone  also the CUDA module, OpenBLAS, its Fortran runtime and SQLite, for a device
#                   call that carries this archive without .device/carry.tar.xz
#
# Size: what travels with a device call must stay under 64 MiB (the tree ~12 MB, the main carry
# ~40 MB). QtCore links ICU, whose data library is 31 MB (7.4 MB compressed), so with icu-devtools
# here (icupkg, genccode) it is rebuilt holding only what Qt can ask of it in this program: root and
# English collation, case mapping, normalization, aliases and time-zone data (2.6 MB; the locale
# display names, break dictionaries and legacy code-page tables go: Qt has its own locale data,
# text breaking and UTF/Latin-1 codecs). The archive is xz with the x86 filter (BCJ) in front,
# ~6% smaller on code than plain xz -9e; zstd --ultra -22 was 11% larger.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
standalone=0
if [ "${1:-}" = --standalone ]; then
    standalone=1
    shift
fi
build=${1:-$root/build-gui}
[[ $build = /* ]] || build=$root/$build
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPWB_GUI=ON -DMPWB_CUDA=ON
fi
grep -q '^MPWB_GUI:BOOL=ON' "$build/CMakeCache.txt" || {
    echo "build_gui_carry: $build is configured without the GUI (MPWB_GUI=OFF)" >&2
    exit 1
}
grep -q '^MPWB_CUDA:STRING=\(AUTO\|ON\)' "$build/CMakeCache.txt" || {
    echo "build_gui_carry: $build is configured without the CUDA module (MPWB_CUDA=OFF)" >&2
    exit 1
}
cmake --build "$build" --target mpwb mpwb_cuda -j"$(nproc)"
gui=$build/app/gui/mpwb
module=$build/app/lib/mpwb/libmpwb_cuda.so
qt_plugins=$(qtpaths6 --query QT_INSTALL_PLUGINS 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/qt6/plugins)
offscreen=$qt_plugins/platforms/libqoffscreen.so
font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
for f in "$gui" "$module" "$offscreen" "$font"; do
    [ -f "$f" ] || { echo "build_gui_carry: missing $f" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/plugins/platforms" "$stage/fonts"
install -m 755 "$gui" "$stage/bin/mpwb"
install -m 644 "$offscreen" "$stage/plugins/platforms/libqoffscreen.so"
if [ $standalone = 1 ]; then
    mkdir -p "$stage/lib/mpwb"
    install -m 644 "$module" "$stage/lib/mpwb/libmpwb_cuda.so"
fi

# The toolchain's libraries stay behind; the main carry's four too unless --standalone.
skip='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'
[ $standalone = 1 ] || skip=${skip%)\$}'|libopenblas\.so\.0|libgfortran\.so\.5|libquadmath\.so\.0|libsqlite3\.so\.0)$'
if ldd "$gui" "$offscreen" | grep -q 'not found'; then
    echo "build_gui_carry: a library mpwb or the offscreen plugin needs is not found here:" >&2
    ldd "$gui" "$offscreen" | grep 'not found' >&2
    exit 1
fi
ldd "$gui" "$offscreen" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
    while read -r name path; do
        [[ $name =~ $skip ]] || cp -L "$path" "$stage/lib/$name"
    done
find "$stage" -name '*.so*' -type f -exec strip --strip-unneeded {} +
strip --strip-unneeded "$stage/bin/mpwb"

# trim_icu LIB: LIB (libicudata.so.NN) rebuilt with the reduced data, or left whole (said why).
trim_icu() {
    local lib=$1 dir=$stage/.icu
    local version=${lib##*.so.}
    for tool in icupkg genccode cc objcopy; do
        command -v $tool >/dev/null || { echo "build_gui_carry: no $tool (icu-devtools): ICU data kept whole" >&2; return 0; }
    done
    mkdir -p "$dir/in" "$dir/out"
    # The data is the library's one symbol, icudtNN_dat, which fills .rodata.
    objcopy -O binary --only-section=.rodata "$lib" "$dir/in/icudt${version}l.dat"
    local size
    size=$(nm -D -S "$lib" | awk -v s="icudt${version}_dat" '$4 == s { print $2 }')
    size=$((16#${size:-0}))
    if [ "$size" != "$(stat -c %s "$dir/in/icudt${version}l.dat")" ]; then
        echo "build_gui_carry: $lib is not one data symbol in .rodata: ICU data kept whole" >&2
        return 0
    fi
    icupkg -l "$dir/in/icudt${version}l.dat" | python3 -c '
import re, sys
locale = re.compile(r"[a-z]{2,3}(_[A-Za-z0-9]+)*\.res")
english = {"en.res", "en_US.res", "en_001.res", "en_GB.res"}
for name in sys.stdin.read().split():
    folder, _, base = name.rpartition("/")
    drop = (folder in ("curr", "zone", "lang", "region", "unit", "rbnf", "translit", "brkitr")
            or (folder == "coll" and base.split(".")[0] not in ("root", "res_index", "ucadata", "en", "en_US"))
            or (not folder and (base.endswith(".cnv") or (locale.fullmatch(base) and base not in english))))
    if drop:
        print(name)' >"$dir/drop.txt"
    icupkg -r "$dir/drop.txt" "$dir/in/icudt${version}l.dat" "$dir/out/icudt${version}l.dat" >"$dir/icupkg.log" 2>&1 || {
        echo "build_gui_carry: icupkg could not drop the items: ICU data kept whole" >&2
        cat "$dir/icupkg.log" >&2
        return 0
    }
    genccode -q -a gcc -e "icudt${version}" -d "$dir" "$dir/out/icudt${version}l.dat"
    cc -c "$dir/icudt${version}l_dat.S" -o "$dir/icudata.o"
    cc -shared -nostdlib -Wl,-soname,"$(basename "$lib")" -Wl,-z,noexecstack "$dir/icudata.o" -o "$lib"
    rm -rf "$dir"
    echo "build_gui_carry: ICU data trimmed to $(stat -c %s "$lib") bytes"
}
for icu in "$stage"/lib/libicudata.so.*; do
    [ -f "$icu" ] && [ "${MPWB_GUI_FULL_ICU:-0}" != 1 ] && trim_icu "$icu"
done

# Qt looks for plugins in QT_PLUGIN_PATH and in its built-in folder; qt.conf moves the latter
# into the archive, so a test here sees what the device will see (no image-format plugins).
printf '[Paths]\nPrefix = ..\nPlugins = plugins\n' >"$stage/bin/qt.conf"

# fontconfig reads this file (FONTCONFIG_FILE); its font folder is the file's own.
cp "$font" "$stage/fonts/"
cat >"$stage/fonts/fonts.conf" <<'XML'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir prefix="relative">.</dir>
  <cachedir prefix="xdg">fontconfig</cachedir>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>monospace</family><prefer><family>DejaVu Sans</family></prefer></alias>
</fontconfig>
XML
git -C "$root" rev-parse --short HEAD >"$stage/commit"
echo "$standalone" >"$stage/standalone"

mkdir -p "$root/.device"
tar -C "$stage" -cf - . | xz --x86 --lzma2=preset=9e -T1 >"$root/.device/gui.tar.xz.part"
mv "$root/.device/gui.tar.xz.part" "$root/.device/gui.tar.xz"
echo "build_gui_carry: $(du -sb "$stage" | cut -f1) bytes unpacked," \
    "$(stat -c %s "$root/.device/gui.tar.xz") bytes in .device/gui.tar.xz" \
    "($(find "$stage/lib" -maxdepth 1 -name '*.so*' | wc -l) libraries, standalone=$standalone)"
