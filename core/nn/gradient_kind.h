// Which gradient a statistic is of: a layer's output (activation) gradient or a parameter's
// (weight) gradient. A header of its own so that the run records (core/train/run_records.h) name
// it without the network.
#pragma once
#include <cstdint>

namespace mpwb {

enum class GradientKind : uint8_t { Activation, Weight };

}  // namespace mpwb
