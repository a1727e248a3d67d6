// make_default_backend and the loader of the CUDA module (libmpwb_cuda.so, cuda_module.h).
// The module is opened once per process and never closed: backends it made keep their code in
// it. Every way loading can fail ends in one clause for the caller's one line, naming what is
// missing: the module itself, one of its libraries (dlerror names the .so), or its entry point.
#include "core/backend/default_backend.h"

#include <dlfcn.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#ifndef MPWB_CUDA_MODULE_BUILT
#define MPWB_CUDA_MODULE_BUILT 0
#endif
#ifndef MPWB_BUILD_TAG
#define MPWB_BUILD_TAG "unknown"
#endif
#ifndef MPWB_CUDA_MODULE_RELATIVE
#define MPWB_CUDA_MODULE_RELATIVE "../lib/mpwb"
#endif

namespace mpwb {
namespace {

constexpr const char* kModuleFile = "libmpwb_cuda.so";

struct LoadedModule {
    const CudaModuleV1* table = nullptr;
    std::string why_not;
};

// The module's handle once it loaded and passed the checks (for cuda_module_symbol).
std::atomic<void*> loaded_handle{nullptr};

// The running program's file: /proc/self/exe, except when the program was started through the
// dynamic loader (`ld.so --library-path ... mpwb-cli`, as the packaging test does). Then that
// names ld.so, and the program's path is what the loader put in AT_EXECFN.
std::filesystem::path program_path() {
    std::error_code ec;
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string name = exe.filename().string();
    const bool through_loader = name.rfind("ld-linux", 0) == 0 || name.rfind("ld.so", 0) == 0;
    const auto* execfn = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
    if (through_loader && execfn && *execfn) return std::filesystem::weakly_canonical(execfn, ec);
    return exe;
}

LoadedModule load_module() {
    LoadedModule m;
    const char* override_path = std::getenv("MPWB_CUDA_MODULE");
    const bool overridden = override_path && *override_path;
    if (!MPWB_CUDA_MODULE_BUILT && !overridden) {
        m.why_not = "this build has no CUDA backend (built without the CUDA toolkit)";
        return m;
    }
    const std::string path = cuda_module_path();
    if (access(path.c_str(), F_OK) != 0) {
        m.why_not = overridden ? "MPWB_CUDA_MODULE names " + path + ", which does not exist"
                               : "the CUDA module " + path + " is not installed (package mpwb-cuda)";
        return m;
    }
    // RTLD_NOW: a missing library or symbol is found here, not in the middle of a run.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* error = dlerror();
        m.why_not = "the CUDA module cannot be loaded: " + std::string(error ? error : path);
        return m;
    }
    using Entry = const CudaModuleV1* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, MPWB_CUDA_MODULE_ENTRY));
    const CudaModuleV1* table = entry ? entry() : nullptr;
    if (!table) {
        m.why_not =
            path + " has no entry point " MPWB_CUDA_MODULE_ENTRY "; it is not an MP Workbench CUDA module";
    } else if (table->abi != kCudaModuleAbi || std::string(table->build) != MPWB_BUILD_TAG) {
        m.why_not = path + " was built for MP Workbench " + table->build + ", not for this " MPWB_BUILD_TAG +
                    " (install the matching mpwb-cuda)";
    } else {
        m.table = table;
        loaded_handle.store(handle, std::memory_order_release);
        return m;
    }
    dlclose(handle);
    return m;
}

const LoadedModule& cuda_module() {
    static const LoadedModule loaded = load_module();
    return loaded;
}

}  // namespace

std::string cuda_module_path() {
    if (const char* p = std::getenv("MPWB_CUDA_MODULE"); p && *p) return p;
    const std::filesystem::path dir = program_path().parent_path() / MPWB_CUDA_MODULE_RELATIVE;
    return (dir.lexically_normal() / kModuleFile).string();
}

std::unique_ptr<Backend> make_cuda_backend(std::string* why_not, int device_index) {
    const LoadedModule& module = cuda_module();
    if (!module.table) {
        if (why_not) *why_not = module.why_not;
        return nullptr;
    }
    return module.table->make_backend(why_not, device_index);
}

std::unique_ptr<Backend> make_default_backend(std::string* why_not) {
    if (auto cuda = make_cuda_backend(why_not)) return cuda;
    return make_cpu_backend();
}

void* cuda_module_symbol(const char* name) {
    void* handle = loaded_handle.load(std::memory_order_acquire);
    return handle ? dlsym(handle, name) : nullptr;
}

int run_cuda_op_checks(Backend& cuda_backend, const std::function<void(const CudaCheckLine&)>& report) {
    const LoadedModule& module = cuda_module();
    if (!module.table) throw std::logic_error("run_cuda_op_checks without a CUDA module: " + module.why_not);
    return module.table->run_op_checks(cuda_backend, report);
}

}  // namespace mpwb
