// Backend choice and Ctrl-C handling for the CLI.
#include "app/cli/run_context.h"

#include <atomic>
#include <csignal>
#include <cstdio>

#include "core/backend/default_backend.h"
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
        std::string why;
        auto backend = make_default_backend(&why);
        // auto says why only when it could have used a GPU; cuda always says why it did not.
        if (backend->name() != "cuda" && (name == "cuda" || why.find("built without") == std::string::npos))
            std::fprintf(stderr, "mpwb-cli: CUDA backend unavailable (%s); running on the CPU\n", why.c_str());
        return backend;
    }
    throw ConfigError("unknown backend '" + name + "'; choose cpu, cuda or auto");
}

void record_final_boundary(const RunRecorder* recorder, Network& network, Backend& backend, const PrecisionPolicy& policy,
                           const Dataset& data, int64_t step) {
    // The workbench's grid size, so a run looks the same whichever program trained it.
    constexpr int kResolution = 80;
    if (!recorder || recorder->run_id() <= 0) return;
    const BoundarySampler sampler(data, kResolution);
    if (!sampler.applies()) return;
    try {
        recorder->store_boundary(sampler.sample(network, backend, policy, step));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mpwb-cli: warning: the decision boundary was not stored: %s\n", e.what());
    }
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
