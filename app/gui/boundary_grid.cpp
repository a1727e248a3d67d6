// BoundaryGrid storage (boundary_grid.h).
#include "app/gui/boundary_grid.h"

#include <cstring>
#include <string>

#include "core/common/error.h"

namespace mpwb {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'W', 'B', 'G', 'R', 'D', '1'};
constexpr int kMaxSide = 4096;

template <class T>
void put(std::vector<uint8_t>& out, const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

class Reader {
public:
    explicit Reader(std::span<const uint8_t> blob) : blob_(blob) {}
    template <class T>
    T get(const char* what) {
        if (sizeof(T) > blob_.size() - pos_)
            throw DataError(std::string("decision boundary blob ends inside its ") + what + " (" +
                            std::to_string(blob_.size()) + " bytes)");
        T v;
        std::memcpy(&v, blob_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    size_t remaining() const { return blob_.size() - pos_; }

private:
    std::span<const uint8_t> blob_;
    size_t pos_ = 0;
};

}  // namespace

std::vector<uint8_t> boundary_to_blob(const BoundaryGrid& g) {
    std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
    put(out, g.step);
    for (double v : {g.x_min, g.x_max, g.y_min, g.y_max}) put(out, v);
    for (int32_t v : {g.nx, g.ny, g.classes}) put(out, v);
    for (size_t i = 0; i < g.predicted.size(); ++i) {
        put(out, static_cast<int32_t>(g.predicted[i]));
        put(out, i < g.confidence.size() ? g.confidence[i] : 0.0f);
    }
    return out;
}

BoundaryGrid boundary_from_blob(std::span<const uint8_t> blob) {
    if (blob.size() < sizeof kMagic || std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0)
        throw DataError("not a stored decision boundary (bad magic)");
    Reader r(blob.subspan(sizeof kMagic));
    BoundaryGrid g;
    g.step = r.get<int64_t>("step");
    g.x_min = r.get<double>("range");
    g.x_max = r.get<double>("range");
    g.y_min = r.get<double>("range");
    g.y_max = r.get<double>("range");
    g.nx = r.get<int32_t>("size");
    g.ny = r.get<int32_t>("size");
    g.classes = r.get<int32_t>("class count");
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
        g.predicted[i] = r.get<int32_t>("cells");
        g.confidence[i] = r.get<float>("cells");
    }
    return g;
}

}  // namespace mpwb
