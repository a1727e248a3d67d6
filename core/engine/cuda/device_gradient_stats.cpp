// Gradient statistics of a device step, host side (see device_gradient_stats.h).
#include "core/engine/cuda/device_gradient_stats.h"

#include <cstring>

namespace mpwb::cuda {

std::vector<GradientStatsTarget> gradient_stats_targets(Network& network) {
    const size_t n = network.size();
    std::vector<GradientStatsTarget> targets;
    if (n == 0) return targets;
    // Network::backward writes no input gradient at or below the lowest layer with parameters.
    size_t lowest_trained = n;
    size_t first_parameter = 0;
    std::vector<size_t> first_of_layer(n, 0);
    for (size_t i = 0; i < n; ++i) {
        first_of_layer[i] = first_parameter;
        const size_t count = network.layer(i).parameters().size();
        if (count > 0 && lowest_trained == n) lowest_trained = i;
        first_parameter += count;
    }
    targets.push_back({n - 1, GradientKind::Activation, {}, 0});
    for (size_t i = n; i-- > 0;) {
        const auto params = network.layer(i).parameters();
        for (size_t p = 0; p < params.size(); ++p)
            targets.push_back({i, GradientKind::Weight, params[p]->name, first_of_layer[i] + p});
        if (i > lowest_trained) targets.push_back({i - 1, GradientKind::Activation, {}, 0});
    }
    return targets;
}

ExponentHistogram exponent_histogram_from(const DeviceHistogram& counts) {
    static_assert(DeviceHistogram::kBinCount == static_cast<int>(ExponentHistogram::kBinCount));
    static_assert(DeviceHistogram::kMinExponent == ExponentHistogram::kMinExponent);
    constexpr size_t device_formats = sizeof(counts.above_max) / sizeof(counts.above_max[0]);
    static_assert(device_formats <= kFormatCount);
    ExponentHistogram h;
    for (size_t b = 0; b < ExponentHistogram::kBinCount; ++b) h.bins[b] = counts.bins[b];
    h.zeros = counts.zeros;
    h.non_finite = counts.non_finite;
    for (size_t f = 0; f < device_formats; ++f) h.above_max[f] = counts.above_max[f];
    std::memcpy(&h.max_abs, &counts.max_abs_bits, sizeof h.max_abs);
    return h;
}

}  // namespace mpwb::cuda
