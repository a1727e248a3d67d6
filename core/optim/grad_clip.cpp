// Global-norm gradient clipping. The norm is reduced in fixed 16K-element blocks whose partial
// sums are added in order, so the result is identical for any thread count.
#include "core/optim/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/common/parallel.h"
#include "core/common/text_format.h"

namespace mpwb {

namespace {
constexpr int64_t kBlock = int64_t{1} << 14;
}

float global_grad_norm(std::span<Parameter* const> params) {
    double total = 0.0;
    std::vector<double> partial;
    for (size_t i = 0; i < params.size(); ++i) {
        if (!params[i]) throw Error("clip_grad_norm: parameter " + std::to_string(i) + " is null");
        const Tensor& g = params[i]->grad;
        const int64_t n = g.numel();
        if (n == 0) continue;
        const float* data = g.data();
        const int64_t blocks = (n + kBlock - 1) / kBlock;
        partial.assign(static_cast<size_t>(blocks), 0.0);
        // Only worth threads when there are several blocks; grain 2 keeps one block inline.
        parallel_for(blocks, 2, [&](int64_t b0, int64_t b1) {
            for (int64_t b = b0; b < b1; ++b) {
                const int64_t end = std::min(n, (b + 1) * kBlock);
                double s = 0.0;
                for (int64_t k = b * kBlock; k < end; ++k) {
                    const double x = data[k];
                    s += x * x;
                }
                partial[static_cast<size_t>(b)] = s;
            }
        });
        for (double s : partial) total += s;
    }
    return static_cast<float>(std::sqrt(total));
}

float clip_grad_norm(std::span<Parameter* const> params, float max_norm) {
    if (!std::isfinite(max_norm) || max_norm <= 0.0f)
        throw ConfigError("gradient clipping max_norm = " + shortest_text(max_norm) +
                          " must be finite and > 0");
    const float norm = global_grad_norm(params);
    if (!std::isfinite(norm) || norm <= max_norm) return norm;
    const float coef = max_norm / (norm + 1e-6f);
    for (Parameter* p : params) {
        float* g = p->grad.data();
        parallel_for(p->grad.numel(), kBlock, [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) g[k] *= coef;
        });
    }
    return norm;
}

}  // namespace mpwb
