// The backend a run gets when it does not insist on one: the GPU when this build has the CUDA
// backend and the machine a usable device, else the CPU, with the reason in why_not. Header-only
// because MPWB_HAVE_CUDA is defined for the applications linking mpwb_core, not for core itself.
#pragma once
#include <memory>
#include <string>

#include "core/backend/backend.h"

namespace mpwb {

inline std::unique_ptr<Backend> make_default_backend(std::string* why_not) {
#ifdef MPWB_HAVE_CUDA
    if (auto cuda = make_cuda_backend(why_not)) return cuda;
#else
    if (why_not) *why_not = "this build has no CUDA backend (built without the CUDA toolkit)";
#endif
    return make_cpu_backend();
}

}  // namespace mpwb
