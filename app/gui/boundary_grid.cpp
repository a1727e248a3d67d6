// BoundaryGrid storage (boundary_grid.h).
#include "app/gui/boundary_grid.h"

#include <cstring>
#include <string>

#include "core/common/byte_blob.h"
#include "core/common/error.h"

namespace mpwb {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'W', 'B', 'G', 'R', 'D', '1'};
constexpr int kMaxSide = 4096;

}  // namespace

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
        throw DataError("stored decision boundary has a " + std::to_string(g.nx) + " x " + std::to_string(g.ny) +
                        " grid of " + std::to_string(g.classes) + " classes");
    const auto cells = static_cast<size_t>(g.nx) * static_cast<size_t>(g.ny);
    if (r.remaining() != cells * 8)
        throw DataError("stored decision boundary holds " + std::to_string(r.remaining()) + " bytes of cells for " +
                        std::to_string(cells) + " cells");
    g.predicted.resize(cells);
    g.confidence.resize(cells);
    for (size_t i = 0; i < cells; ++i) {
        g.predicted[i] = r.get<int32_t>();
        g.confidence[i] = r.get<float>();
    }
    return g;
}

}  // namespace mpwb
