// Gradient clipping by global L2 norm (PyTorch's clip_grad_norm_), applied by the trainer after
// the loss scale has been divided out, so max_norm means the same thing in every precision.
#pragma once
#include <span>

#include "core/tensor/parameter.h"

namespace mpwb {

// The L2 norm over every element of every gradient, accumulated in double (a sum of squares of
// millions of FP32 values loses digits in FP32), returned as FP32. Empty gradients count as zero.
// Deterministic: partial sums are over fixed blocks, so the thread count never changes the bits.
float global_grad_norm(std::span<Parameter* const> params);

// Scales every gradient by max_norm / (norm + 1e-6) when norm > max_norm and returns the norm
// before clipping. A non-finite norm is returned as is with the gradients untouched, so the
// caller's overflow check still sees it. max_norm must be finite and > 0 (ConfigError).
float clip_grad_norm(std::span<Parameter* const> params, float max_norm);

}  // namespace mpwb
