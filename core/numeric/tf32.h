// TF32, the tensor-core input format: FP32's range with 10 stored mantissa bits. It only exists
// inside the GEMM units, so the engine emulates it by rounding an FP32 value's mantissa to 10
// bits (round to nearest even); overflow past the largest TF32 plus half an ulp gives inf,
// FP32 subnormals are rounded the same way, NaN stays quiet NaN.
#pragma once
#include <cstddef>

namespace mpwb {

float round_to_tf32(float x);
// Serial array version, in == out allowed; round_to_format adds the threads.
void round_to_tf32(const float* in, float* out, size_t n);

}  // namespace mpwb
