// Backend choice, Ctrl-C and SIGTERM handling for the CLI.
#include "app/cli/run_context.h"

#include <atomic>
#include <csignal>
#include <cstdio>

#include "core/backend/default_backend.h"
#include "core/common/error.h"

namespace mpwb::cli {
namespace {
std::atomic<Trainer*> g_trainer{nullptr};
std::atomic<bool> g_checkpoint_requested{false};

void on_interrupt(int) {
    if (Trainer* t = g_trainer.load()) {
        t->stop();
        std::signal(SIGINT, SIG_DFL);
    }
}

void on_terminate(int) {
    if (Trainer* t = g_trainer.load()) {
        t->checkpoint_and_stop();
        g_checkpoint_requested = true;
    }
}
}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& name) {
    if (name == "cpu") return make_cpu_backend();
    if (name == "cuda" || name == "auto") {
        std::string why;
        auto backend = make_default_backend(&why);
        // auto says why only when it could have used a GPU; cuda always says why it did not.
        if (backend->name() != "cuda" && (name == "cuda" || why.find("built without") == std::string::npos))
            std::fprintf(stderr, "mpwb-cli: CUDA backend unavailable (%s); running on the CPU\n",
                         why.c_str());
        return backend;
    }
    throw ConfigError("unknown backend '" + name + "'; choose cpu, cuda or auto");
}

void warn_if_boundary_not_stored(const std::string& why) {
    if (!why.empty())
        std::fprintf(stderr, "mpwb-cli: warning: the decision boundary was not stored: %s\n", why.c_str());
}

InterruptGuard::InterruptGuard(Trainer& trainer) {
    g_trainer = &trainer;
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_terminate);
}

// Once a SIGTERM was answered with a checkpoint, later ones are ignored: the process is already
// ending as asked, and one more must not kill it while it stores the run's end. A sweep task can
// get several: the kernel sends PR_SET_PDEATHSIG's signal at each reparenting, and a killed
// sweep's threads (OpenBLAS's pool) exit one after another. test_sweep's
// sigkillToTheSweepEndsItsTasks saw a checkpointed task die of SIGTERM (exit 143) under ASan.
InterruptGuard::~InterruptGuard() {
    g_trainer = nullptr;
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, g_checkpoint_requested ? SIG_IGN : SIG_DFL);
}

}  // namespace mpwb::cli
