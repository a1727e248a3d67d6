// BoundaryGrid: the network's predicted class over a grid of the 2-D input plane (the decision
// boundary), BoundarySampler, which computes one with the current weights, and its storage form.
// The workbench samples one on the training thread every ~quarter second and draws it; the
// workbench and mpwb-cli store the final one with the run (RunRecorder::store_boundary), so a
// reopened run shows its boundary again.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/backend/backend.h"
#include "core/data/dataset.h"
#include "core/nn/network.h"
#include "core/precision/precision_policy.h"

namespace mpwb {

struct BoundaryGrid {
    int64_t step = 0;
    double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
    int nx = 0, ny = 0;  // cell (ix, iy) at index iy * nx + ix; x = x_min + ix * (x_max - x_min) / (nx - 1)
    int classes = 0;
    std::vector<int> predicted;     // argmax class per cell
    std::vector<float> confidence;  // softmax probability of that class
};

// The grid over a 2-D classification set's training points (8 % margin on each side), and the
// forward pass that fills it between two steps (as the trainer's evaluation uses the network).
class BoundarySampler {
public:
    // `applies()` is false for any other dataset; sample() must not be called then.
    BoundarySampler(const Dataset& data, int resolution);
    bool applies() const { return applies_; }
    // Throws what the network's forward throws (a network the grid cannot go through).
    BoundaryGrid sample(Network& network, Backend& backend, const PrecisionPolicy& policy,
                        int64_t step) const;

private:
    bool applies_ = false;
    BoundaryGrid frame_;  // ranges, sizes and classes; no cells
    Tensor points_;       // [nx * ny, 2]
};

// A versioned little-endian byte layout: magic, step, ranges, sizes, then per cell the class
// (int32) and the confidence (float32).
std::vector<uint8_t> boundary_to_blob(const BoundaryGrid& grid);
// Throws mpwb::DataError naming what is wrong when the bytes are not such a grid.
BoundaryGrid boundary_from_blob(std::span<const uint8_t> blob);

}  // namespace mpwb
