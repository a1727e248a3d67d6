// Shared pieces of the libFuzzer harnesses (tests/fuzz/README.md): the input written to a file,
// because the parsers read paths as the app does (a network file, a CSV, an IDX download, a
// bundle), and the rule for what counts as a finding. The app's own errors (mpwb::Error and its
// subclasses, the run store's StoreError) are the expected answer to bad input; any other
// exception, a crash, a sanitizer report, a timeout or running out of memory is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "core/common/error.h"
#include "sessions/store_error.h"

namespace mpwb::fuzz {

// A scratch folder in $TMPDIR owned by this process, removed at exit.
inline const std::filesystem::path& scratch_dir() {
    static const std::filesystem::path dir = [] {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/mpwb-fuzz-XXXXXX";
        if (!mkdtemp(pattern.data())) {
            std::perror("mkdtemp");
            std::abort();
        }
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove_all(scratch_dir(), ignored);
        });
        return std::filesystem::path(pattern);
    }();
    return dir;
}

// Replaces the file `name` in the scratch folder with the input; returns its path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
    const std::string path = (scratch_dir() / name).string();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
        std::perror(path.c_str());
        std::abort();  // the harness's own failure, not the parser's
    }
    return path;
}

// Runs `parse`; the app's own errors are expected. Anything else is reported with its message
// and aborts, which libFuzzer records as a crash with the input that caused it.
template <class Parse>
void expect_app_errors(Parse&& parse) {
    try {
        parse();
    } catch (const mpwb::Error&) {
    } catch (const mpwb::StoreError&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "finding: an exception that is not the app's own error escaped: %s\n", e.what());
        std::abort();
    } catch (...) {
        std::fprintf(stderr, "finding: a non-std exception escaped\n");
        std::abort();
    }
}

}  // namespace mpwb::fuzz
