#!/usr/bin/env bash
# CI stages of issue 12, section 4, run by .ci/run after the README's command: the whole suite
# under ASan+UBSan (build-asan), the threaded units of core and sessions under TSan
# (build-tsan), and every libFuzzer harness for 30 s over its seed corpus (build-fuzz).
# Separate build folders, so the README's build stays what a user gets. Any sanitizer report
# fails its stage: tests/sanitizers/env.sh makes every report fatal.
# usage: ci_stages.sh [asan] [tsan] [fuzz]   (default: all three, in that order)
set -euo pipefail
cd "$(dirname "$0")/../.."
stage() { echo; echo "=== $1 ($(date +%T), ${SECONDS}s into CI)"; }
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# -O1 keeps the sanitized suite fast enough while the stacks stay readable; asserts stay on.
# -g1 (line tables): a report's stack still names every function, file and line, and a unit
# compiles in about 60 % of the time full debug information takes (measured: 5.5 s against 9.2 s).
# The code around core (sessions, widgets, app, tests) at -O0 (MPWB_SUPPORT_CODE_FLAGS): its
# instrumented units compile in about half the time, and the suite's hot loops are core's.
sanitized_build=(-G Ninja -DMPWB_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPWB_SUPPORT_CODE_FLAGS=-O0
                 "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" "${launcher[@]}")

asan() {
stage "ASan + UBSan: the whole suite (build-asan)"
cmake -S . -B build-asan "${sanitized_build[@]}" -DMPWB_GUI=ON -DMPWB_SANITIZE=address,undefined
cmake --build build-asan
(. tests/sanitizers/env.sh && ctest --test-dir build-asan --output-on-failure -j"$(nproc)")
}

tsan() {
# The threaded units of core and sessions. The Qt GUI units are left out of TSan: Qt's mutexes,
# wait conditions and queued-signal delivery synchronise inside the uninstrumented libQt6Core
# (futexes and atomics TSan cannot see), so every event the trainer thread posts to the GUI would
# be reported as a race on its payload (tests/sanitizers/README.md).
stage "TSan: thread pool, run writer, recorder, trainer (build-tsan)"
tsan_tests=(test_parallel test_run_writer test_run_recorder test_trainer)
# Without precompiled headers: the one build that shows a core or sessions unit that forgot an
# include the shared header supplies elsewhere (cmake/MpwbPch.cmake).
cmake -S . -B build-tsan "${sanitized_build[@]}" -DMPWB_GUI=OFF -DMPWB_SANITIZE=thread -DMPWB_PCH=OFF
cmake --build build-tsan --target "${tsan_tests[@]}"
# One OpenBLAS thread: its own pool (created when the library loads) hands work over with spin
# waits in uninstrumented code; the app runs OpenBLAS single-threaded anyway (cpu_backend.cpp).
(. tests/sanitizers/env.sh && export OPENBLAS_NUM_THREADS=1 &&
  ctest --test-dir build-tsan --output-on-failure -j"$(nproc)" -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$")

}

fuzz() {
stage "libFuzzer harnesses: 30 s each over the seed corpus (build-fuzz)"
cmake -S . -B build-fuzz -G Ninja -DMPWB_FUZZ=ON -DMPWB_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1" \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}"
cmake --build build-fuzz
tests/fuzz/run_regression.sh build-fuzz 30
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(asan tsan fuzz)
for s in "${stages[@]}"; do
  case $s in asan|tsan|fuzz) "$s" ;; *) echo "unknown stage '$s' (asan, tsan, fuzz)" >&2; exit 2 ;; esac
done
stage "sanitizer and fuzz stages passed: ${stages[*]}"
