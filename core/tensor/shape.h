// Shapes of tensors. A layer sees per-sample shapes ({784} or {C, H, W}); the batch dimension
// is added in front when tensors are allocated.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mpwb {

using Shape = std::vector<int64_t>;

inline int64_t shape_numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

inline std::string shape_to_string(const Shape& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) {
        if (i) out += "x";
        out += std::to_string(s[i]);
    }
    return out + "]";
}

inline Shape with_batch(int64_t batch, const Shape& sample) {
    Shape s{batch};
    s.insert(s.end(), sample.begin(), sample.end());
    return s;
}

}  // namespace mpwb
