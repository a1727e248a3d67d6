// The CPU backend's convolution layout kernels (im2col, col2im) and pooling loops. Each computes
// the valid output range of a window offset once instead of testing every element against the
// border, so the inner loops are plain copies, adds and branch-free selects the compiler
// vectorises. Every output element sums its terms in the same order as the element-by-element
// loops they replace, so results are bit for bit those of before and do not depend on the thread
// count (parallel_for gives each output to exactly one chunk).
#pragma once
#include <cstdint>

#include "core/backend/backend.h"

namespace mpwb {

// columns[(c*kh + i)*kw + j][s*ohw + oy*ow + ox] for samples [n0, n0+nb).
void im2col(const ConvGeometry& g, const float* x, int64_t n0, int64_t nb, float* cols);
// Writes dx for samples [n0, n0+nb): each element the sum of its column gradients, in (i, j) order.
void col2im(const ConvGeometry& g, const float* cols, int64_t n0, int64_t nb, float* dx);
// col2im for one sample on the calling thread: cols is its first column, width the row stride.
void col2im_sample(const ConvGeometry& g, const float* cols, int64_t width, float* sample_dx);
// Columns [first, first+count) of im2col's matrix for samples from n0, as [ckk x count], on the
// calling thread: a block small enough to stay in cache between its gathering and its product.
void im2col_columns(const ConvGeometry& g, const float* x, int64_t n0, int64_t first, int64_t count,
                    float* cols);

// Max pooling: the first NaN of a window wins (so overflow is never hidden), else the first
// largest value; argmax is its index in x.
void maxpool_forward_planes(const PoolGeometry& g, const float* x, float* y, int32_t* argmax);

}  // namespace mpwb
