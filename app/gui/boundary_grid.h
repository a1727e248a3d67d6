// BoundaryGrid: the network's predicted class over a grid of the 2-D input plane (the decision
// boundary), and its storage form: the workbench computes one on the training thread every
// ~quarter second, draws it, and stores the final one with the run (RunStore::set_boundary) so a
// reopened run shows its boundary again.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace mpwb {

struct BoundaryGrid {
    int64_t step = 0;
    double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
    int nx = 0, ny = 0;  // cell (ix, iy) at index iy * nx + ix; x = x_min + ix * (x_max - x_min) / (nx - 1)
    int classes = 0;
    std::vector<int> predicted;     // argmax class per cell
    std::vector<float> confidence;  // softmax probability of that class
};

// A versioned little-endian byte layout: magic, step, ranges, sizes, then per cell the class
// (int32) and the confidence (float32).
std::vector<uint8_t> boundary_to_blob(const BoundaryGrid& grid);
// Throws mpwb::DataError naming what is wrong when the bytes are not such a grid.
BoundaryGrid boundary_from_blob(std::span<const uint8_t> blob);

}  // namespace mpwb
