// OpenBLAS picks its kernels by CPU model when the library loads. On CPUs it does not know
// (new models, or VMs that hide the model name) Debian's OpenBLAS 0.3.21 falls back to the
// Prescott (SSE3) kernels, several times slower than the AVX2 ones the CPU can run. The choice
// can only be made through OPENBLAS_CORETYPE before the library loads, so a program that
// finds the fallback on an AVX2+FMA CPU sets it and executes itself again, once.
#pragma once
#include <string>

namespace mpwb {

std::string blas_core_name();
// Call first thing in main(). Returns only when no re-execution is needed (or it failed).
void ensure_fast_blas_kernels(char** argv);

}  // namespace mpwb
