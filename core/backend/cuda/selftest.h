// The CUDA backend's op parity checks, like ggml's test-backend-ops: every device op (our
// kernels, cuBLASLt with its epilogues, cuDNN) in every dtype it runs in, on random inputs,
// against the CPU backend on the same inputs, by normwise relative error within DESIGN.md's
// tolerance for the format (FP32 1e-5, TF32 1e-3, FP16/BF16 1e-2). A NaN or inf where the
// reference has none fails. mpwb-cli selftest --backend cuda runs these and then whole training
// steps in every policy.
#pragma once
#include <functional>
#include <string>

#include "core/backend/cuda/device_context.h"
#include "core/backend/cuda_module.h"

namespace mpwb::cuda {

// The line the module's table hands to the program (core/backend/cuda_module.h).
using SelftestLine = CudaCheckLine;

// Runs every op check on `context`, calling `report` once per check. Returns the failure count.
int run_op_checks(DeviceContext& context, const std::function<void(const SelftestLine&)>& report);

// The tolerance DESIGN.md gives a format.
double tolerance_for(DType dtype, bool tf32);

}  // namespace mpwb::cuda
