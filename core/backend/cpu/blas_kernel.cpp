// Re-execution with OPENBLAS_CORETYPE set; see blas_kernel.h.
#include "core/backend/cpu/blas_kernel.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace mpwb {

void ensure_fast_blas_kernels(char** argv) {
    if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("MPWB_BLAS_REEXEC")) return;
    const char* core = openblas_get_corename();
    if (!core || std::strcmp(core, "Prescott") != 0) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
    // Started through the dynamic loader (`ld.so --library-path ... mpwb-cli`), /proc/self/exe is
    // ld.so, and re-running it would not run this program: keep the slow kernels then.
    char self[4096];
    const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length > 0 && std::string(self, length).find("/ld-") != std::string::npos) return;
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
    setenv("MPWB_BLAS_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    // execv only returns on failure: keep going with the slow kernels.
}

}  // namespace mpwb
