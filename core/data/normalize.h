// Input normalisation and finiteness checks. Statistics come from the train split only and are
// applied to both splits, so nothing about the test set leaks into training; a NaN in the inputs
// is caught here, before it could be mistaken for an overflow of the loss scaler.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"

namespace mpwb {

enum class NormalizeMode {
    Global,      // one mean and std over every value
    PerFeature,  // one per element of a sample (each of the prod(sample_shape) positions)
    PerChannel,  // one per index of the first sample dimension (image channels)
};

struct NormStats {
    NormalizeMode mode = NormalizeMode::Global;
    Shape sample_shape;
    std::vector<float> mean, stddev;  // 1, prod(sample_shape) or sample_shape[0] entries
};

// Mean and population std over the samples of x ([N, ...sample]), accumulated in double.
// A constant feature gets std 1 so it maps to 0 instead of dividing by zero.
NormStats compute_norm_stats(const Tensor& x, NormalizeMode mode);
// x = (x - mean) / std. Throws DataError if x's sample shape differs from the stats'.
void apply_norm_stats(Tensor& x, const NormStats& stats);
// Computes on train_x, applies to train_x and test_x, returns the stats (to save with a run).
NormStats normalize_dataset(Dataset& dataset, NormalizeMode mode);

// Throws DataError "<what>: non-finite value <v> at index <i> (sample <s>)" for the first NaN/inf.
void check_finite(const Tensor& t, const std::string& what);
// check_finite on all four tensors, named "<dataset> train x" etc.
void check_dataset_finite(const Dataset& dataset);

}  // namespace mpwb
