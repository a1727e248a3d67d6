// A tensor's first rows: the tests that train presets on part of a dataset cut its splits with it
// (what they check is the arithmetic, not the learning).
#pragma once
#include <algorithm>
#include <cstring>

#include "core/tensor/tensor.h"

namespace mpwb::test {

inline Tensor first_rows(const Tensor& t, int64_t n) {
    Shape shape = t.shape();
    n = std::min(n, shape[0]);
    const int64_t row = t.numel() / shape[0];
    shape[0] = n;
    Tensor out(shape);
    std::memcpy(out.data(), t.data(), static_cast<size_t>(n * row) * sizeof(float));
    return out;
}

}  // namespace mpwb::test
