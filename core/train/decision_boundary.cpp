// BoundarySampler and the BoundaryGrid storage (decision_boundary.h).
#include "core/train/decision_boundary.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/common/byte_blob.h"
#include "core/common/error.h"

namespace mpwb {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'W', 'B', 'G', 'R', 'D', '1'};
constexpr int kMaxSide = 4096;

}  // namespace

BoundarySampler::BoundarySampler(const Dataset& data, int resolution) {
    applies_ = data.is_classification() && data.sample_shape == Shape{2} && data.train_size() > 0;
    if (!applies_) return;
    const int n = std::max(8, resolution);
    const auto xs = data.train_x.span();
    double x0 = xs[0], x1 = xs[0], y0 = xs[1], y1 = xs[1];
    for (size_t i = 0; i + 1 < xs.size(); i += 2) {
        x0 = std::min<double>(x0, xs[i]);
        x1 = std::max<double>(x1, xs[i]);
        y0 = std::min<double>(y0, xs[i + 1]);
        y1 = std::max<double>(y1, xs[i + 1]);
    }
    const double mx = 0.08 * (x1 - x0) + 1e-3, my = 0.08 * (y1 - y0) + 1e-3;
    frame_.x_min = x0 - mx;
    frame_.x_max = x1 + mx;
    frame_.y_min = y0 - my;
    frame_.y_max = y1 + my;
    frame_.nx = frame_.ny = n;
    frame_.classes = data.num_classes;
    points_.resize({static_cast<int64_t>(n) * n, 2});
    for (int iy = 0; iy < n; ++iy)
        for (int ix = 0; ix < n; ++ix) {
            const int64_t c = static_cast<int64_t>(iy) * n + ix;
            points_[2 * c] = static_cast<float>(frame_.x_min + ix * (frame_.x_max - frame_.x_min) / (n - 1));
            points_[2 * c + 1] =
                static_cast<float>(frame_.y_min + iy * (frame_.y_max - frame_.y_min) / (n - 1));
        }
}

BoundaryGrid BoundarySampler::sample(Network& network, Backend& backend, const PrecisionPolicy& policy,
                                     int64_t step) const {
    LayerContext ctx{backend, policy.gemm_operands, false, nullptr};
    const Tensor& out = network.forward(ctx, points_, policy);
    const int64_t cells = points_.dim(0);
    const int64_t k = out.numel() / cells;
    BoundaryGrid g = frame_;
    g.step = step;
    g.predicted.resize(static_cast<size_t>(cells));
    g.confidence.resize(static_cast<size_t>(cells));
    const float* o = out.data();
    for (int64_t c = 0; c < cells; ++c) {
        const float* row = o + c * k;
        int64_t best = 0;
        for (int64_t j = 1; j < k; ++j)
            if (row[j] > row[best]) best = j;
        double z = 0;
        for (int64_t j = 0; j < k; ++j) z += std::exp(static_cast<double>(row[j] - row[best]));
        g.predicted[static_cast<size_t>(c)] = static_cast<int>(best);
        g.confidence[static_cast<size_t>(c)] = std::isfinite(z) && z > 0 ? static_cast<float>(1.0 / z) : 0.0f;
    }
    return g;
}

std::vector<uint8_t> boundary_to_blob(const BoundaryGrid& g) {
    std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
    put_value(out, g.step);
    for (double v : {g.x_min, g.x_max, g.y_min, g.y_max}) put_value(out, v);
    for (int32_t v : {g.nx, g.ny, g.classes}) put_value(out, v);
    for (size_t i = 0; i < g.predicted.size(); ++i) {
        put_value(out, static_cast<int32_t>(g.predicted[i]));
        put_value(out, i < g.confidence.size() ? g.confidence[i] : 0.0f);
    }
    return out;
}

BoundaryGrid boundary_from_blob(std::span<const uint8_t> blob) {
    if (blob.size() < sizeof kMagic || std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0)
        throw DataError("not a stored decision boundary (bad magic)");
    BlobReader r(blob.subspan(sizeof kMagic), "stored decision boundary");
    BoundaryGrid g;
    g.step = r.get<int64_t>();
    g.x_min = r.get<double>();
    g.x_max = r.get<double>();
    g.y_min = r.get<double>();
    g.y_max = r.get<double>();
    g.nx = r.get<int32_t>();
    g.ny = r.get<int32_t>();
    g.classes = r.get<int32_t>();
    if (g.nx < 2 || g.ny < 2 || g.nx > kMaxSide || g.ny > kMaxSide || g.classes < 2)
        throw DataError("stored decision boundary has a " + std::to_string(g.nx) + " x " +
                        std::to_string(g.ny) + " grid of " + std::to_string(g.classes) + " classes");
    const auto cells = static_cast<size_t>(g.nx) * static_cast<size_t>(g.ny);
    if (r.remaining() != cells * 8)
        throw DataError("stored decision boundary holds " + std::to_string(r.remaining()) +
                        " bytes of cells for " + std::to_string(cells) + " cells");
    g.predicted.resize(cells);
    g.confidence.resize(cells);
    for (size_t i = 0; i < cells; ++i) {
        g.predicted[i] = r.get<int32_t>();
        g.confidence[i] = r.get<float>();
    }
    return g;
}

}  // namespace mpwb
