# Sanitizer and fuzzing builds (issue 12, section 4).
#
#   -DMPWB_SANITIZE=address,undefined   ASan + UBSan over every project target (CI: build-asan)
#   -DMPWB_SANITIZE=thread              TSan (CI: build-tsan)
#   -DMPWB_FUZZ=ON                      libFuzzer harnesses of tests/fuzz (clang only; CI: build-fuzz)
#
# The flags go on the compile and link lines of every target defined in this project (OpenBLAS,
# Qt, SQLite and zlib stay uninstrumented: Debian's builds). UBSan findings are not recoverable,
# so a finding ends the test with a failure instead of a line in its log. The runtime options
# (what a report does, suppressions) are in tests/sanitizers/env.sh, which .ci/run sources.
# The CUDA backend is not built in these modes: nvcc does not take the host sanitizer flags and
# the CPU path is what the tests exercise.

set(MPWB_SANITIZE "" CACHE STRING "Sanitizers for every project target: address,undefined or thread (empty: none)")
option(MPWB_FUZZ "Build the libFuzzer harnesses of tests/fuzz instead of the applications (clang)" OFF)

if(MPWB_SANITIZE AND MPWB_FUZZ)
  message(FATAL_ERROR "MPWB_SANITIZE and MPWB_FUZZ are separate builds: the fuzz build brings its own ASan+UBSan")
endif()

function(mpwb_require_no_cuda mode)
  if(MPWB_CUDA STREQUAL "ON")
    message(FATAL_ERROR "${mode} builds the CPU path only: configure with -DMPWB_CUDA=OFF")
  endif()
  set(MPWB_CUDA OFF CACHE STRING "Build the CUDA backend: AUTO, ON or OFF" FORCE)
endfunction()

if(MPWB_SANITIZE)
  string(REPLACE "," ";" mpwb_sanitizers "${MPWB_SANITIZE}")
  foreach(s IN LISTS mpwb_sanitizers)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "MPWB_SANITIZE: unknown sanitizer '${s}' (use address, undefined, leak or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST mpwb_sanitizers AND ("address" IN_LIST mpwb_sanitizers OR "leak" IN_LIST mpwb_sanitizers))
    message(FATAL_ERROR "MPWB_SANITIZE: thread cannot be combined with address or leak")
  endif()
  mpwb_require_no_cuda("MPWB_SANITIZE")
  set(mpwb_sanitize_flags -fsanitize=${MPWB_SANITIZE} -fno-omit-frame-pointer)
  if("undefined" IN_LIST mpwb_sanitizers)
    # A UBSan finding aborts the process (and so fails its test) instead of printing and going on.
    list(APPEND mpwb_sanitize_flags -fno-sanitize-recover=all)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${mpwb_sanitize_flags}>")
  add_link_options(${mpwb_sanitize_flags})
  message(STATUS "Sanitizers: ${MPWB_SANITIZE} (CUDA backend off)")
endif()

if(MPWB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MPWB_FUZZ needs clang (libFuzzer): configure with -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  mpwb_require_no_cuda("MPWB_FUZZ")
  # The parsers need neither the GUI nor the Qt Test suite.
  set(MPWB_GUI OFF CACHE BOOL "Build the Qt workbench (mpwb) and its widgets" FORCE)
  set(MPWB_TESTS OFF CACHE BOOL "Build the Qt Test suite" FORCE)
  # Libraries get coverage instrumentation without libFuzzer's main(); each harness links
  # -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt).
  # MPWB_FUZZ_SANITIZERS=undefined drops ASan for the long runs (several times the executions
  # per second); their grown corpus is then replayed through an ASan build (tests/fuzz/README.md).
  set(MPWB_FUZZ_SANITIZERS "address,undefined" CACHE STRING "Sanitizers of the fuzz build")
  set(mpwb_fuzz_flags -fsanitize=fuzzer-no-link,${MPWB_FUZZ_SANITIZERS} -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${mpwb_fuzz_flags}>")
  add_link_options(-fsanitize=${MPWB_FUZZ_SANITIZERS})
  message(STATUS "Fuzz build: libFuzzer harnesses of tests/fuzz (GUI, tests and CUDA off)")
endif()
