// The instability indicators' arithmetic (see stability_indicators.h). Per-row work runs in
// parallel into one slot per row, and the sums over rows run in order afterwards, so a figure
// does not depend on the thread count.
#include "core/nn/stability_indicators.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/common/parallel.h"

namespace mpwb {
namespace {

constexpr int64_t kRowGrain = 64;

}  // namespace

double max_causal_logit(const float* scores, int64_t sequences, int64_t tokens, float scale) {
    std::vector<double> row_max(static_cast<size_t>(sequences * tokens));
    parallel_for(sequences * tokens, kRowGrain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* row = scores + r * tokens;
            float top = -std::numeric_limits<float>::infinity();
            for (int64_t j = 0; j <= r % tokens; ++j) top = std::max(top, row[j] * scale);
            row_max[static_cast<size_t>(r)] = top;
        }
    });
    double top = -std::numeric_limits<double>::infinity();
    for (double v : row_max) top = std::isnan(v) ? v : std::max(top, v);
    return top;
}

HeadEntropy attention_entropy(const float* probabilities, int64_t samples, int64_t heads, int64_t tokens) {
    const int64_t rows = samples * heads * tokens;
    std::vector<double> row_entropy(static_cast<size_t>(rows));
    parallel_for(rows, kRowGrain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* p = probabilities + r * tokens;
            double h = 0;
            for (int64_t j = 0; j <= r % tokens; ++j)
                if (p[j] > 0) h -= static_cast<double>(p[j]) * std::log(static_cast<double>(p[j]));
            row_entropy[static_cast<size_t>(r)] = h;
        }
    });
    std::vector<double> head_sum(static_cast<size_t>(heads), 0.0);
    for (int64_t r = 0; r < rows; ++r)
        head_sum[static_cast<size_t>((r / tokens) % heads)] += row_entropy[static_cast<size_t>(r)];
    HeadEntropy e;
    e.min = std::numeric_limits<double>::infinity();
    for (double sum : head_sum) {
        const double head_mean = sum / static_cast<double>(samples * tokens);
        e.mean += head_mean / static_cast<double>(heads);
        e.min = std::min(e.min, head_mean);
    }
    return e;
}

ResidualStability residual_stability(const float* values, int64_t rows, int64_t channels) {
    std::vector<double> square_sum(static_cast<size_t>(channels), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = values + r * channels;
        for (int64_t c = 0; c < channels; ++c)
            square_sum[static_cast<size_t>(c)] += static_cast<double>(row[c]) * row[c];
    }
    ResidualStability s;
    double total = 0;
    std::vector<double> channel_rms(square_sum.size());
    for (size_t c = 0; c < square_sum.size(); ++c) {
        total += square_sum[c];
        channel_rms[c] = std::sqrt(square_sum[c] / static_cast<double>(rows));
    }
    s.rms = std::sqrt(total / static_cast<double>(rows * channels));
    const double largest = *std::max_element(channel_rms.begin(), channel_rms.end());
    const size_t middle = channel_rms.size() / 2;
    std::nth_element(channel_rms.begin(), channel_rms.begin() + static_cast<std::ptrdiff_t>(middle),
                     channel_rms.end());
    double median = channel_rms[middle];
    if (channel_rms.size() % 2 == 0)  // the lower middle one is the largest of the lower half
        median = (median + *std::max_element(channel_rms.begin(),
                                             channel_rms.begin() + static_cast<std::ptrdiff_t>(middle))) /
                 2;
    s.outlier_ratio = median > 0 ? largest / median : 0.0;
    return s;
}

OutputStability output_stability(const float* logits, int64_t rows, int64_t classes) {
    std::vector<double> row_max(static_cast<size_t>(rows)), row_log_z(static_cast<size_t>(rows));
    parallel_for(rows, kRowGrain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* row = logits + r * classes;
            double top = -std::numeric_limits<double>::infinity();
            for (int64_t j = 0; j < classes; ++j) top = std::max(top, static_cast<double>(row[j]));
            double sum = 0;
            for (int64_t j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(row[j]) - top);
            row_max[static_cast<size_t>(r)] = top;
            row_log_z[static_cast<size_t>(r)] = top + std::log(sum);
        }
    });
    OutputStability o;
    o.logit_max = -std::numeric_limits<double>::infinity();
    for (int64_t r = 0; r < rows; ++r) {
        o.logit_max = std::max(o.logit_max, row_max[static_cast<size_t>(r)]);
        o.log_z_mean += row_log_z[static_cast<size_t>(r)] / static_cast<double>(rows);
    }
    return o;
}

}  // namespace mpwb
