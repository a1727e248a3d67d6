// Gradient statistics of a device step, host side: which histograms a statistics step takes, in
// the order and with the names Network::backward hands them to a GradientProbe (the loss
// gradient first, then from the top layer down each parameter's gradient and the layer's input
// gradient), and the bridge from the device's counters (DeviceHistogram, filled by the
// exponent-histogram kernel) to ExponentHistogram. No CUDA types: tests run it without a GPU.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/backend/cuda/step_math.h"
#include "core/nn/network.h"
#include "core/numeric/exponent_histogram.h"

namespace mpwb::cuda {

struct GradientStatsTarget {
    size_t layer = 0;  // the layer whose output (Activation) or parameter (Weight) it is
    GradientKind kind = GradientKind::Activation;
    std::string parameter;       // Weight: the parameter's name
    size_t parameter_index = 0;  // Weight: index into Network::parameters()
};

// Every histogram a statistics step of this built network takes, in Network::backward's order.
std::vector<GradientStatsTarget> gradient_stats_targets(Network& network);

// The device's counts as the CPU's ExponentHistogram (the same bins, zeros, non-finite,
// above-max per format and largest magnitude).
ExponentHistogram exponent_histogram_from(const DeviceHistogram& counts);

}  // namespace mpwb::cuda
