// Synthetic 2-D classification sets in the style of the TensorFlow Playground (spiral, circles,
// xor, gauss, plus sklearn-style moons). They train in seconds, so a user can watch FP32 and mixed
// precision diverge or agree without downloading anything.
//
// Coordinates: points are generated with the Playground's formulas in its own units (spiral and
// circle radius 5, xor square [-5,5]^2, gauss centres (+-2, +-2)) and then divided by
// kSyntheticScale = 6, so every set lies roughly in [-1,1]^2 (noise can push a few points
// slightly outside). Unit-range inputs need no normalisation before the first layer.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/dataset.h"

namespace mpwb {

enum class SyntheticKind { Spiral, Circles, Xor, Gauss, Moons };

// Playground units per output unit (see the header comment).
inline constexpr float kSyntheticScale = 6.0f;
// The most points a synthetic set may have (train + test): 1.6 GB of points while generating.
inline constexpr int64_t kMaxSyntheticSamples = 100'000'000;

struct SyntheticConfig {
    SyntheticKind kind = SyntheticKind::Spiral;
    int64_t samples = 1000;   // total, train + test
    float noise = 0.0f;       // 0..1, the Playground's noise slider as a fraction
    double test_ratio = 0.2;  // fraction of samples held out, 0 < r < 1
    uint64_t seed = 1;
    int classes = 2;  // spiral arms; the other kinds are two-class and require 2
};

// "spiral", "circles" (also "circle"), "xor", "gauss" (also "gaussian"), "moons" (also "moon"),
// case-insensitive. Throws ConfigError naming the bad name and listing the valid ones.
SyntheticKind parse_synthetic_kind(std::string_view name);
std::string synthetic_kind_name(SyntheticKind kind);
std::vector<std::string> synthetic_kind_names();

// Throws ConfigError for a setting out of range (noise, test_ratio, samples, classes).
void validate_synthetic_config(const SyntheticConfig& config);

// The train and test sizes make_synthetic(config) gives, known without generating a point (a
// sweep's plan checks its networks against them).
struct SyntheticSplit {
    int64_t train = 0;
    int64_t test = 0;
};
SyntheticSplit synthetic_split(const SyntheticConfig& config);

// Deterministic per config (same seed => same points, same split). sample_shape {2}; y holds class
// indices; the classes are balanced to within one sample before labels are affected by noise
// (circles and xor label a noisy point by where it landed, as the Playground does).
Dataset make_synthetic(const SyntheticConfig& config);

}  // namespace mpwb
