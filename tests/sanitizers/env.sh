# Runtime options of the sanitizer builds (cmake/MpwbSanitize.cmake). .ci/run sources this file
# before running ctest in build-asan or build-tsan; a developer can do the same:
#   . tests/sanitizers/env.sh && ctest --test-dir build-asan --output-on-failure
# Every report ends the process with a failure, so a finding fails its test instead of being a
# line in a log nobody reads. Suppressions live next to this file, one reason per line.
sanitizers_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# ASan: abort (a core and a failed test) on the first error; leaks are checked at exit.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:strict_string_checks=1:check_initialization_order=1:strict_init_order=1:detect_invalid_pointer_pairs=0"
# Qt's own event dispatcher instead of glib's: with glib, LeakSanitizer's scan of thread-local
# storage at exit meets a dynamic-TLS slot that glib's per-thread state and modules leave with a
# bogus range, and its tracer crashes ("Tracer caught signal 11", GCC 12's libsanitizer on
# Debian 12; seen in test_report once its runs outlived a second test function). The tests
# exercise the project's code, not glib's main loop.
export QT_NO_GLIB=1
export LSAN_OPTIONS="suppressions=$sanitizers_dir/lsan.supp:print_suppressions=0"
# UBSan: the build already makes every check fatal (-fno-sanitize-recover=all); this adds the
# stack that led there.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# TSan: stop at the first race, with both stacks of a lock-order inversion.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$sanitizers_dir/tsan.supp"
