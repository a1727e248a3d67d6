#!/usr/bin/env bash
# The packages as a user on a machine without CUDA gets them: cpack builds mpwb (and mpwb-cuda
# where the build has the CUDA module), the main package is unpacked into a scratch root, and
# its programs are run from there through the dynamic loader with its cache off and a library
# path of the scratch root and the system's own folders only, so no CUDA library is in view:
#   mpwb-cli --version, mpwb-cli train (50 steps, on the CPU, with one line saying why not the
#   GPU), mpwb-cli train --backend cuda (the line names the missing module), mpwb --version;
# then the same with mpwb-cuda unpacked too (the line names the missing CUDA library).
# No program may link a CUDA library, and lintian may report no error (E:) on either package.
# Exit 77 (SKIP) only when dpkg-deb or lintian is not installed.
# Usage: test_packages.sh <build dir> <cpack> <version> <module built 0|1> <gui built 0|1>
set -uo pipefail

build=$1 cpack=$2 version=$3 have_module=$4 have_gui=$5
for tool in dpkg-deb lintian; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (packaging/install-deps.sh installs it)"
    exit 77
  fi
done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }

scratch=$build/packaging-test
rm -rf "$scratch"
mkdir -p "$scratch/home"

echo "== cpack"
if ! (cd "$build" && "$cpack" -G DEB -B "$scratch/debs" >"$scratch/cpack.log" 2>&1); then
  cat "$scratch/cpack.log"
  echo "FAIL: cpack did not build the packages"
  exit 1
fi
main_deb=$(ls "$scratch"/debs/mpwb_"$version"_*.deb 2>/dev/null | head -1)
cuda_deb=$(ls "$scratch"/debs/mpwb-cuda_"$version"_*.deb 2>/dev/null | head -1)
[ -n "$main_deb" ] || { ls "$scratch/debs"; echo "FAIL: no mpwb_${version}_*.deb"; exit 1; }
if [ "$have_module" = 1 ] && [ -z "$cuda_deb" ]; then fail "the build has the CUDA module but no mpwb-cuda package"; fi
for deb in $main_deb $cuda_deb; do
  echo "== $(basename "$deb")"
  dpkg-deb --field "$deb" Package Version Depends Recommends
  dpkg-deb --contents "$deb" | awk '{print $6}'
done

# The loader and the folders a bare Debian system searches, and nothing else.
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
loader=$(readelf -l "$build/app/cli/mpwb-cli" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
system_dirs=/lib/$multiarch:/usr/lib/$multiarch

# run <root> <program> <args...>: the program from the scratch root, CUDA out of view.
run() {
  local root=$1 program=$2
  shift 2
  (cd "$scratch/home" && env -u DISPLAY -u WAYLAND_DISPLAY -u MPWB_CUDA_MODULE -u LD_LIBRARY_PATH \
    XDG_DATA_HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home" HOME="$scratch/home" \
    "$loader" --inhibit-cache --library-path "$root/usr/lib/$multiarch:$root/usr/lib:$system_dirs" \
    "$root/usr/bin/$program" "$@")
}

# check_train <root> <backend> <regex the one line must match, or empty> <label>
check_train() {
  local root=$1 backend=$2 expect=$3 label=$4 out err before=$failures
  out=$(run "$root" mpwb-cli train --preset spiral-mlp --max-steps 50 --no-store --backend "$backend" 2>"$scratch/err")
  local rc=$?
  err=$(cat "$scratch/err")
  echo "$err"
  local lines
  lines=$(grep -c "CUDA backend unavailable" <<<"$err")
  if [ $rc -ne 0 ]; then fail "$label: mpwb-cli train exited $rc"; echo "$out"; return; fi
  # The progress goes to stderr, the summary to stdout: look at both.
  grep -q "FINISHED after 50 steps" <<<"$out$err" || fail "$label: the run did not finish 50 steps"
  grep -q "backend cpu" <<<"$out$err" || fail "$label: the run did not train on the CPU"
  if [ -n "$expect" ]; then
    [ "$lines" = 1 ] || fail "$label: expected one 'CUDA backend unavailable' line, got $lines"
    grep "CUDA backend unavailable" <<<"$err" | grep -qE -- "$expect" || fail "$label: the line does not name $expect"
  fi
  [ $failures -eq "$before" ] && pass "$label"
}

root=$scratch/root
dpkg -x "$main_deb" "$root"
echo "== no program links CUDA"
for program in "$root"/usr/bin/*; do
  if readelf -d "$program" | grep -E "NEEDED.*(cudart|cublas|cudnn|libcuda)"; then
    fail "$(basename "$program") links a CUDA library"
  fi
done

echo "== mpwb alone, CUDA out of view"
got=$(run "$root" mpwb-cli --version 2>&1)
[ "$got" = "mpwb-cli $version" ] && pass "mpwb-cli --version: $got" || fail "mpwb-cli --version printed: $got"
if [ "$have_module" = 1 ]; then
  check_train "$root" auto "libmpwb_cuda\.so is not installed" "mpwb-cli train (auto), no module"
else
  check_train "$root" auto "" "mpwb-cli train (auto), build without CUDA"
fi
check_train "$root" cuda "libmpwb_cuda\.so is not installed|built without" "mpwb-cli train --backend cuda, no module"
if [ "$have_gui" = 1 ]; then
  got=$(run "$root" mpwb --version 2>&1)
  grep -q "$version" <<<"$got" && pass "mpwb --version: $got" || fail "mpwb --version printed: $got"
fi

if [ -n "$cuda_deb" ]; then
  echo "== mpwb with mpwb-cuda, CUDA libraries out of view"
  root_cuda=$scratch/root-cuda
  dpkg -x "$main_deb" "$root_cuda"
  dpkg -x "$cuda_deb" "$root_cuda"
  module=$(find "$root_cuda" -name libmpwb_cuda.so | head -1)
  [ -n "$module" ] || fail "mpwb-cuda has no libmpwb_cuda.so"
  dpkg-deb --field "$cuda_deb" Depends | grep -q "mpwb (= $version)" || fail "mpwb-cuda does not depend on mpwb (= $version)"
  # Out of view, the module cannot load: the line names the library it misses. (A machine
  # whose system folders hold the CUDA libraries gets to the driver or device instead.)
  check_train "$root_cuda" auto "" "mpwb-cli train (auto) with the module"
  grep "CUDA backend unavailable" "$scratch/err" | grep -qE "libcu[a-zA-Z]*\.so|driver|device" ||
    fail "with the module, the line does not name a missing library, driver or device"
fi

echo "== lintian"
for deb in $main_deb $cuda_deb; do
  lintian --tag-display-limit 0 "$deb" >"$scratch/lintian.log" 2>&1
  cat "$scratch/lintian.log"
  errors=$(grep -c "^E: " "$scratch/lintian.log")
  [ "$errors" = 0 ] && pass "lintian $(basename "$deb"): no errors" || fail "lintian $(basename "$deb"): $errors errors"
done

echo "== $failures failed"
[ $failures -eq 0 ]
