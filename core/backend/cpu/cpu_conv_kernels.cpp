// Convolution layout kernels and max pooling of the CPU backend; see cpu_conv_kernels.h.
#include "core/backend/cpu/cpu_conv_kernels.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/common/parallel.h"

namespace mpwb {
namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// The outputs [lo, hi) of a window offset whose input index o*stride - padding + offset lies in
// [0, in); empty (lo == hi) when none does.
struct OutputRange {
    int64_t lo = 0, hi = 0;
};
OutputRange outputs_inside(int64_t out, int64_t in, int64_t stride, int64_t padding, int64_t offset) {
    OutputRange r;
    r.lo = std::max<int64_t>(0, ceil_div(padding - offset, stride));
    r.hi = std::min(out, floor_div(in - 1 + padding - offset, stride) + 1);
    if (r.hi < r.lo) r.hi = r.lo;
    return r;
}

// Outputs [ox0, ox1) of one output row of a column (dst and row indexed by ox, row already
// offset by the window's column): zeros outside the input, the input row's samples inside.
void gather_row(const float* row, OutputRange inside, int64_t ox0, int64_t ox1, int64_t stride, float* dst) {
    const int64_t lo = std::clamp(inside.lo, ox0, ox1), hi = std::clamp(inside.hi, lo, ox1);
    // Rows are short (tens of floats): one loop, not a memcpy call per row (a call costs more
    // than the copy here, and g++ turns a unit-stride copy loop into one).
    for (int64_t o = ox0; o < lo; ++o) dst[o] = 0.0f;
    for (int64_t o = lo; o < hi; ++o) dst[o] = row[o * stride];
    for (int64_t o = hi; o < ox1; ++o) dst[o] = 0.0f;
}

// A row of 2x2 windows wholly inside the input (padding 0), the usual pooling: the rules of
// maxpool_forward_planes written branch-free, so the loop vectorises.
void maxpool_row_2x2(const float* top, const float* bottom, int64_t stride, int64_t ow, int64_t top_index,
                     int64_t in_w, float* y, int32_t* argmax) {
    for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t j = ox * stride;
        float best = top[j];
        int at = 0;  // 0, 1: top row; 2, 3: bottom row
        const bool top_nan = best != best;
        float v = top[j + 1];
        bool take = v > best || (v != v && !top_nan);
        best = take ? v : best;
        at = take ? 1 : at;
        v = bottom[j];
        const bool bottom_nan = v != v;
        take = v > best || bottom_nan;
        best = take ? v : best;
        at = take ? 2 : at;
        v = bottom[j + 1];
        take = v > best || (v != v && !bottom_nan);
        best = take ? v : best;
        at = take ? 3 : at;
        y[ox] = best;
        argmax[ox] = static_cast<int32_t>(top_index + j + (at & 1) + (at >> 1) * in_w);
    }
}

// Column row r (channel c, offset ki, kj) of one sample: [ohw] from that sample's plane of c.
void im2col_row(const ConvGeometry& g, int64_t r, const float* sample_x, float* out) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    const int64_t c = r / (g.kernel_h * g.kernel_w);
    const int64_t ki = (r / g.kernel_w) % g.kernel_h;
    const int64_t kj = r % g.kernel_w;
    const OutputRange ys = outputs_inside(oh, g.in_h, g.stride, g.padding, ki);
    const OutputRange xs = outputs_inside(ow, g.in_w, g.stride, g.padding, kj);
    const float* plane = sample_x + c * g.in_h * g.in_w;
    std::fill(out, out + ys.lo * ow, 0.0f);
    for (int64_t oy = ys.lo; oy < ys.hi; ++oy)
        gather_row(plane + (oy * g.stride - g.padding + ki) * g.in_w + kj - g.padding, xs, 0, ow, g.stride,
                   out + oy * ow);
    std::fill(out + ys.hi * ow, out + oh * ow, 0.0f);
}

// Channel c's plane of one sample's dx: its column rows (row stride width) added back in (i, j) order.
void col2im_channel(const ConvGeometry& g, int64_t c, const float* cols, int64_t width, float* plane) {
    const int64_t oh = g.out_h(), ow = g.out_w();
    std::fill(plane, plane + g.in_h * g.in_w, 0.0f);
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
        const OutputRange ys = outputs_inside(oh, g.in_h, g.stride, g.padding, ki);
        for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
            const OutputRange xs = outputs_inside(ow, g.in_w, g.stride, g.padding, kj);
            const float* src = cols + ((c * g.kernel_h + ki) * g.kernel_w + kj) * width;
            for (int64_t oy = ys.lo; oy < ys.hi; ++oy) {
                float* row = plane + (oy * g.stride - g.padding + ki) * g.in_w + kj - g.padding;
                const float* grad = src + oy * ow;
                if (g.stride == 1) {
                    for (int64_t ox = xs.lo; ox < xs.hi; ++ox) row[ox] += grad[ox];
                } else {
                    for (int64_t ox = xs.lo; ox < xs.hi; ++ox) row[ox * g.stride] += grad[ox];
                }
            }
        }
    }
}

}  // namespace

void im2col(const ConvGeometry& g, const float* x, int64_t n0, int64_t nb, float* cols) {
    const int64_t ohw = g.out_h() * g.out_w(), width = nb * ohw;
    const int64_t chw = g.in_channels * g.in_h * g.in_w;
    parallel_for(g.in_channels * g.kernel_h * g.kernel_w, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t s = 0; s < nb; ++s) im2col_row(g, r, x + (n0 + s) * chw, cols + r * width + s * ohw);
    });
}

void im2col_columns(const ConvGeometry& g, const float* x, int64_t n0, int64_t first, int64_t count,
                    float* cols) {
    const int64_t ohw = g.out_h() * g.out_w(), ow = g.out_w();
    const int64_t chw = g.in_channels * g.in_h * g.in_w, ihw = g.in_h * g.in_w;
    // The block's stretches of output rows, the same for every column row: found once.
    struct Stretch {
        int64_t sample, oy, ox0, ox1, at;
    };
    thread_local std::vector<Stretch> stretches;
    stretches.clear();
    for (int64_t j = first; j < first + count;) {
        const int64_t ox0 = j % ow, ox1 = std::min(ow, ox0 + (first + count - j));
        stretches.push_back({n0 + j / ohw, j % ohw / ow, ox0, ox1, j - first - ox0});
        j += ox1 - ox0;
    }
    for (int64_t r = 0; r < g.in_channels * g.kernel_h * g.kernel_w; ++r) {
        const int64_t c = r / (g.kernel_h * g.kernel_w);
        const int64_t ki = (r / g.kernel_w) % g.kernel_h;
        const int64_t kj = r % g.kernel_w;
        const OutputRange xs = outputs_inside(ow, g.in_w, g.stride, g.padding, kj);
        float* out = cols + r * count;
        for (const Stretch& st : stretches) {
            float* dst = out + st.at;  // indexed by ox
            const int64_t iy = st.oy * g.stride - g.padding + ki;
            if (iy < 0 || iy >= g.in_h) {
                for (int64_t o = st.ox0; o < st.ox1; ++o) dst[o] = 0.0f;
                continue;
            }
            gather_row(x + st.sample * chw + c * ihw + iy * g.in_w + kj - g.padding, xs, st.ox0, st.ox1,
                       g.stride, dst);
        }
    }
}

void col2im(const ConvGeometry& g, const float* cols, int64_t n0, int64_t nb, float* dx) {
    const int64_t ohw = g.out_h() * g.out_w(), width = nb * ohw, ihw = g.in_h * g.in_w;
    parallel_for(nb * g.in_channels, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const int64_t s = p / g.in_channels, c = p % g.in_channels;
            col2im_channel(g, c, cols + s * ohw, width, dx + ((n0 + s) * g.in_channels + c) * ihw);
        }
    });
}

void col2im_sample(const ConvGeometry& g, const float* cols, int64_t width, float* sample_dx) {
    const int64_t ihw = g.in_h * g.in_w;
    for (int64_t c = 0; c < g.in_channels; ++c) col2im_channel(g, c, cols, width, sample_dx + c * ihw);
}

void maxpool_forward_planes(const PoolGeometry& g, const float* x, float* y, int32_t* argmax) {
    const int64_t oh = g.out_h(), ow = g.out_w(), ihw = g.in_h * g.in_w;
    parallel_for(g.batch * g.channels, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
            const int64_t base = p * ihw;
            for (int64_t oy = 0; oy < oh; ++oy) {
                const int64_t top = oy * g.stride - g.padding;
                if (g.kernel == 2 && g.padding == 0) {
                    const float* row = x + base + top * g.in_w;
                    maxpool_row_2x2(row, row + g.in_w, g.stride, ow, base + top * g.in_w, g.in_w,
                                    y + p * oh * ow + oy * ow, argmax + p * oh * ow + oy * ow);
                    continue;
                }
                const int64_t i0 = std::max<int64_t>(0, -top), i1 = std::min(g.kernel, g.in_h - top);
                for (int64_t ox = 0; ox < ow; ++ox) {
                    const int64_t left = ox * g.stride - g.padding;
                    const int64_t j0 = std::max<int64_t>(0, -left), j1 = std::min(g.kernel, g.in_w - left);
                    float best = -std::numeric_limits<float>::infinity();
                    int64_t best_index = -1;  // a window wholly in the padding
                    for (int64_t ki = i0; ki < i1; ++ki) {
                        bool nan_in_row = false;  // a row's first NaN ends that row, not the window
                        for (int64_t kj = j0; kj < j1; ++kj) {
                            const int64_t index = base + (top + ki) * g.in_w + left + kj;
                            const float v = x[index];
                            const bool is_nan = v != v;
                            const bool take = is_nan ? !nan_in_row : (best_index < 0 || v > best);
                            nan_in_row = nan_in_row || (take && is_nan);
                            best = take ? v : best;
                            best_index = take ? index : best_index;
                        }
                    }
                    const int64_t o = p * oh * ow + oy * ow + ox;
                    y[o] = best;
                    argmax[o] = static_cast<int32_t>(best_index);
                }
            }
        }
    });
}

}  // namespace mpwb
