// mpwb-cli: headless MP Workbench. Trains, compares precisions, benchmarks and self-tests on
// machines without a display or Qt, into the same run database the GUI opens.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "app/cli/commands.h"
#include "core/backend/cpu/blas_kernel.h"
#include "core/common/error.h"

int main(int argc, char** argv) {
    mpwb::ensure_fast_blas_kernels(argv);
    CLI::App app{"MP Workbench headless: mixed-precision training from the command line", "mpwb-cli"};
    // --version answers before a subcommand is required (help2man reads it for the man page).
    app.set_version_flag("--version", "mpwb-cli " MPWB_VERSION);
    app.require_subcommand(1);
    mpwb::cli::add_train_command(app);
    mpwb::cli::add_bench_command(app);
    mpwb::cli::add_runs_command(app);
    mpwb::cli::add_compare_command(app);
    mpwb::cli::add_selftest_command(app);
    mpwb::cli::add_generate_command(app);
    mpwb::cli::add_sweep_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const mpwb::Error& e) {
        std::fprintf(stderr, "mpwb-cli: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mpwb-cli: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
