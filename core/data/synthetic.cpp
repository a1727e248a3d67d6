// Synthetic 2-D sets. The formulas follow the TensorFlow Playground's dataset.ts (spiral, circle,
// xor, gauss) so a user who knows the Playground sees the same shapes; moons follow sklearn's
// make_moons. Everything is drawn from one mpwb::Rng, so a seed fixes points and split.
#include "core/data/synthetic.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numbers>

#include "core/common/error.h"
#include "core/common/rng.h"

namespace mpwb {
namespace {

struct Point {
    float x, y;
    int label;
};

constexpr float kTwoPi = 2.0f * std::numbers::pi_v<float>;

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Splits total into `parts` counts that differ by at most one.
int64_t share(int64_t total, int parts, int index) { return total / parts + (index < total % parts ? 1 : 0); }

void gen_spiral(const SyntheticConfig& c, Rng& rng, std::vector<Point>& out) {
    // Playground: r = 5 i/n, t = 1.75 * 2pi * i/n + delta, one arm per class, delta = 2pi k/K
    // (pi for two arms); noise uniform in [-noise, noise] per coordinate.
    for (int k = 0; k < c.classes; ++k) {
        const int64_t n = share(c.samples, c.classes, k);
        const float delta = kTwoPi * static_cast<float>(k) / static_cast<float>(c.classes);
        for (int64_t i = 0; i < n; ++i) {
            const float f = static_cast<float>(i) / static_cast<float>(n);
            const float r = 5.0f * f;
            const float t = 1.75f * kTwoPi * f + delta;
            const float x = r * std::sin(t) + rng.uniform(-1.0f, 1.0f) * c.noise;
            const float y = r * std::cos(t) + rng.uniform(-1.0f, 1.0f) * c.noise;
            out.push_back({x, y, k});
        }
    }
}

void gen_circles(const SyntheticConfig& c, Rng& rng, std::vector<Point>& out) {
    // Playground: class 1 inside radius 2.5, class 0 in the ring [3.5, 5]; the noisy point is
    // labelled by where it landed, so high noise mixes the classes as in the Playground.
    constexpr float radius = 5.0f;
    for (int cls = 1; cls >= 0; --cls) {
        const int64_t n = share(c.samples, 2, 1 - cls);
        for (int64_t i = 0; i < n; ++i) {
            const float r = cls == 1 ? rng.uniform(0.0f, radius * 0.5f) : rng.uniform(radius * 0.7f, radius);
            const float angle = rng.uniform(0.0f, kTwoPi);
            const float x = r * std::sin(angle) + rng.uniform(-radius, radius) * c.noise;
            const float y = r * std::cos(angle) + rng.uniform(-radius, radius) * c.noise;
            const int label = std::sqrt(x * x + y * y) < radius * 0.5f ? 1 : 0;
            out.push_back({x, y, label});
        }
    }
}

void gen_xor(const SyntheticConfig& c, Rng& rng, std::vector<Point>& out) {
    // Playground: uniform in [-5,5]^2 pushed 0.3 away from the axes; class 1 where x*y >= 0.
    constexpr float padding = 0.3f;
    for (int64_t i = 0; i < c.samples; ++i) {
        float x = rng.uniform(-5.0f, 5.0f);
        x += x > 0 ? padding : -padding;
        float y = rng.uniform(-5.0f, 5.0f);
        y += y > 0 ? padding : -padding;
        x += rng.uniform(-5.0f, 5.0f) * c.noise;
        y += rng.uniform(-5.0f, 5.0f) * c.noise;
        out.push_back({x, y, x * y >= 0 ? 1 : 0});
    }
}

void gen_gauss(const SyntheticConfig& c, Rng& rng, std::vector<Point>& out) {
    // Playground: blobs at (2,2) (class 1) and (-2,-2) (class 0); variance 0.5 at noise 0 rising
    // linearly to 4 at noise 0.5 (the Playground's slider maximum), continued linearly to 1.
    const float stddev = std::sqrt(0.5f + 7.0f * c.noise);
    for (int cls = 1; cls >= 0; --cls) {
        const float centre = cls == 1 ? 2.0f : -2.0f;
        const int64_t n = share(c.samples, 2, 1 - cls);
        for (int64_t i = 0; i < n; ++i) {
            const float x = rng.normal(centre, stddev);
            const float y = rng.normal(centre, stddev);
            out.push_back({x, y, cls});
        }
    }
}

void gen_moons(const SyntheticConfig& c, Rng& rng, std::vector<Point>& out) {
    // sklearn make_moons: upper moon (cos t, sin t), lower (1 - cos t, 0.5 - sin t), t in [0, pi];
    // centred and stretched by 10/3 so x spans [-5, 5] like the Playground sets. Gaussian noise
    // with std 0.5 * noise in sklearn units.
    constexpr float stretch = 10.0f / 3.0f;
    const float pi = std::numbers::pi_v<float>;
    for (int cls = 0; cls < 2; ++cls) {
        const int64_t n = share(c.samples, 2, cls);
        for (int64_t i = 0; i < n; ++i) {
            const float t = rng.uniform(0.0f, pi);
            float x = cls == 0 ? std::cos(t) : 1.0f - std::cos(t);
            float y = cls == 0 ? std::sin(t) : 0.5f - std::sin(t);
            x += rng.normal() * 0.5f * c.noise;
            y += rng.normal() * 0.5f * c.noise;
            out.push_back({(x - 0.5f) * stretch, (y - 0.25f) * stretch, cls});
        }
    }
}

}  // namespace

std::vector<std::string> synthetic_kind_names() { return {"spiral", "circles", "xor", "gauss", "moons"}; }

std::string synthetic_kind_name(SyntheticKind kind) {
    switch (kind) {
        case SyntheticKind::Spiral:
            return "spiral";
        case SyntheticKind::Circles:
            return "circles";
        case SyntheticKind::Xor:
            return "xor";
        case SyntheticKind::Gauss:
            return "gauss";
        case SyntheticKind::Moons:
            return "moons";
    }
    return "unknown";
}

SyntheticKind parse_synthetic_kind(std::string_view name) {
    const std::string n = lower(name);
    if (n == "spiral") return SyntheticKind::Spiral;
    if (n == "circles" || n == "circle") return SyntheticKind::Circles;
    if (n == "xor") return SyntheticKind::Xor;
    if (n == "gauss" || n == "gaussian") return SyntheticKind::Gauss;
    if (n == "moons" || n == "moon") return SyntheticKind::Moons;
    std::string valid;
    for (const auto& k : synthetic_kind_names()) valid += (valid.empty() ? "" : ", ") + k;
    throw ConfigError("unknown synthetic dataset '" + std::string(name) + "' (valid: " + valid + ")");
}

void validate_synthetic_config(const SyntheticConfig& c) {
    if (!std::isfinite(c.noise) || c.noise < 0.0f || c.noise > 1.0f)
        throw ConfigError("synthetic noise " + std::to_string(c.noise) + " out of range [0, 1]");
    if (!std::isfinite(c.test_ratio) || c.test_ratio <= 0.0 || c.test_ratio >= 1.0)
        throw ConfigError("synthetic test_ratio " + std::to_string(c.test_ratio) + " out of range (0, 1)");
    if (c.kind == SyntheticKind::Spiral) {
        if (c.classes < 2 || c.classes > 16)
            throw ConfigError("spiral classes " + std::to_string(c.classes) + " out of range [2, 16]");
    } else if (c.classes != 2) {
        throw ConfigError("synthetic dataset '" + synthetic_kind_name(c.kind) + "' has 2 classes, not " +
                          std::to_string(c.classes) + " (only spiral takes a class count)");
    }
    const int64_t min_samples = std::max<int64_t>(4, 2 * c.classes);
    if (c.samples < min_samples || c.samples > kMaxSyntheticSamples)
        throw ConfigError("synthetic samples " + std::to_string(c.samples) + " out of range [" +
                          std::to_string(min_samples) + ", " + std::to_string(kMaxSyntheticSamples) + "]");
}

SyntheticSplit synthetic_split(const SyntheticConfig& config) {
    const int64_t n = config.samples;
    const int64_t n_test =
        std::clamp<int64_t>(std::llround(static_cast<double>(n) * config.test_ratio), 1, n - 1);
    return {n - n_test, n_test};
}

Dataset make_synthetic(const SyntheticConfig& config) {
    validate_synthetic_config(config);
    Rng rng(config.seed);
    std::vector<Point> points;
    points.reserve(static_cast<size_t>(config.samples));
    switch (config.kind) {
        case SyntheticKind::Spiral:
            gen_spiral(config, rng, points);
            break;
        case SyntheticKind::Circles:
            gen_circles(config, rng, points);
            break;
        case SyntheticKind::Xor:
            gen_xor(config, rng, points);
            break;
        case SyntheticKind::Gauss:
            gen_gauss(config, rng, points);
            break;
        case SyntheticKind::Moons:
            gen_moons(config, rng, points);
            break;
    }

    // Generated class by class; shuffle so the split (and any unshuffled evaluation) is mixed.
    const auto n = static_cast<int64_t>(points.size());
    for (int64_t i = n - 1; i > 0; --i)
        std::swap(points[static_cast<size_t>(i)],
                  points[static_cast<size_t>(rng.below(static_cast<uint64_t>(i + 1)))]);

    const auto [n_train, n_test] = synthetic_split(config);

    Dataset ds;
    ds.name = synthetic_kind_name(config.kind);
    ds.sample_shape = {2};
    ds.num_classes = config.classes;
    for (int k = 0; k < config.classes; ++k) ds.class_names.push_back(std::to_string(k));
    ds.train_x.resize({n_train, 2});
    ds.train_y.resize({n_train});
    ds.test_x.resize({n_test, 2});
    ds.test_y.resize({n_test});
    for (int64_t i = 0; i < n; ++i) {
        const Point& p = points[static_cast<size_t>(i)];
        Tensor& x = i < n_train ? ds.train_x : ds.test_x;
        Tensor& y = i < n_train ? ds.train_y : ds.test_y;
        const int64_t j = i < n_train ? i : i - n_train;
        x[2 * j] = p.x / kSyntheticScale;
        x[2 * j + 1] = p.y / kSyntheticScale;
        y[j] = static_cast<float>(p.label);
    }
    return ds;
}

}  // namespace mpwb
