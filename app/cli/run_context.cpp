// Backend choice and Ctrl-C handling for the CLI.
#include "app/cli/run_context.h"

#include <atomic>
#include <csignal>
#include <cstdio>

#include "core/common/error.h"

namespace mpwb::cli {
namespace {
std::atomic<Trainer*> g_trainer{nullptr};

void on_interrupt(int) {
    if (Trainer* t = g_trainer.load()) {
        t->stop();
        std::signal(SIGINT, SIG_DFL);
    }
}
}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& name) {
    if (name == "cpu") return make_cpu_backend();
    if (name == "cuda" || name == "auto") {
#ifdef MPWB_HAVE_CUDA
        std::string why;
        if (auto cuda = make_cuda_backend(&why)) return cuda;
        std::fprintf(stderr, "mpwb-cli: CUDA backend unavailable (%s); training on the CPU\n", why.c_str());
#else
        if (name == "cuda")
            std::fprintf(stderr, "mpwb-cli: this build has no CUDA backend (built without the CUDA toolkit); training on the CPU\n");
#endif
        return make_cpu_backend();
    }
    throw ConfigError("unknown backend '" + name + "'; choose cpu, cuda or auto");
}

InterruptGuard::InterruptGuard(Trainer& trainer) {
    g_trainer = &trainer;
    std::signal(SIGINT, on_interrupt);
}

InterruptGuard::~InterruptGuard() {
    g_trainer = nullptr;
    std::signal(SIGINT, SIG_DFL);
}

}  // namespace mpwb::cli
