// Normalisation statistics (double accumulation, two passes for a stable variance) and the
// finiteness check that guards every dataset before training.
#include "core/data/normalize.h"

#include <algorithm>
#include <cmath>

#include "core/common/error.h"

namespace mpwb {
namespace {

Shape sample_shape_of(const Tensor& x) { return Shape(x.shape().begin() + 1, x.shape().end()); }

// Which statistic element i of a sample (of `per_sample` elements) uses.
struct Grouping {
    int64_t groups = 1;
    int64_t inner = 1;  // consecutive sample elements sharing a group (PerChannel)
    int64_t group_of(int64_t i) const { return groups == 1 ? 0 : (i / inner) % groups; }
};

Grouping grouping(NormalizeMode mode, const Shape& sample) {
    const int64_t per_sample = shape_numel(sample);
    switch (mode) {
        case NormalizeMode::Global:
            return {1, per_sample};
        case NormalizeMode::PerFeature:
            return {per_sample, 1};
        case NormalizeMode::PerChannel:
            if (sample.empty()) return {1, 1};
            return {sample[0], per_sample / std::max<int64_t>(sample[0], 1)};
    }
    return {};
}

}  // namespace

NormStats compute_norm_stats(const Tensor& x, NormalizeMode mode) {
    if (x.rank() < 1 || x.dim(0) == 0)
        throw DataError("cannot compute normalisation statistics of an empty tensor");
    NormStats st;
    st.mode = mode;
    st.sample_shape = sample_shape_of(x);
    const int64_t n = x.dim(0), per = shape_numel(st.sample_shape);
    const Grouping g = grouping(mode, st.sample_shape);
    std::vector<double> sum(static_cast<size_t>(g.groups), 0.0), sq(sum.size(), 0.0);
    std::vector<int64_t> count(sum.size(), 0);
    const float* p = x.data();
    for (int64_t s = 0; s < n; ++s)
        for (int64_t i = 0; i < per; ++i) {
            const auto k = static_cast<size_t>(g.group_of(i));
            sum[k] += p[s * per + i];
            ++count[k];
        }
    std::vector<double> mean(sum.size());
    for (size_t k = 0; k < sum.size(); ++k) mean[k] = sum[k] / static_cast<double>(count[k]);
    for (int64_t s = 0; s < n; ++s)
        for (int64_t i = 0; i < per; ++i) {
            const auto k = static_cast<size_t>(g.group_of(i));
            const double d = p[s * per + i] - mean[k];
            sq[k] += d * d;
        }
    for (size_t k = 0; k < sum.size(); ++k) {
        const double sd = std::sqrt(sq[k] / static_cast<double>(count[k]));
        st.mean.push_back(static_cast<float>(mean[k]));
        // A constant feature carries no information; std 1 maps it to 0 instead of NaN.
        st.stddev.push_back(sd > 1e-12 ? static_cast<float>(sd) : 1.0f);
    }
    return st;
}

void apply_norm_stats(Tensor& x, const NormStats& st) {
    if (x.rank() < 1) throw DataError("cannot normalise a scalar tensor");
    const Shape sample = sample_shape_of(x);
    if (sample != st.sample_shape)
        throw DataError("normalisation statistics are for samples of shape " +
                        shape_to_string(st.sample_shape) + ", tensor has samples of shape " +
                        shape_to_string(sample));
    const Grouping g = grouping(st.mode, sample);
    if (st.mean.size() != static_cast<size_t>(g.groups) || st.stddev.size() != st.mean.size())
        throw DataError("normalisation statistics hold " + std::to_string(st.mean.size()) +
                        " entries, expected " + std::to_string(g.groups));
    const int64_t n = x.dim(0), per = shape_numel(sample);
    std::vector<float> inv(st.stddev.size());
    for (size_t k = 0; k < inv.size(); ++k) inv[k] = 1.0f / st.stddev[k];
    float* p = x.data();
    for (int64_t s = 0; s < n; ++s)
        for (int64_t i = 0; i < per; ++i) {
            const auto k = static_cast<size_t>(g.group_of(i));
            p[s * per + i] = (p[s * per + i] - st.mean[k]) * inv[k];
        }
}

NormStats normalize_dataset(Dataset& ds, NormalizeMode mode) {
    NormStats st = compute_norm_stats(ds.train_x, mode);
    apply_norm_stats(ds.train_x, st);
    if (!ds.test_x.empty()) apply_norm_stats(ds.test_x, st);
    return st;
}

void check_finite(const Tensor& t, const std::string& what) {
    const float* p = t.data();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) {
        if (std::isfinite(p[i])) continue;
        std::string msg = what + ": non-finite value " +
                          (std::isnan(p[i]) ? std::string("NaN")
                           : p[i] > 0       ? "+inf"
                                            : "-inf") +
                          " at index " + std::to_string(i);
        if (t.rank() > 1) {
            const int64_t per = t.numel() / t.dim(0);
            msg += " (sample " + std::to_string(i / per) + ", element " + std::to_string(i % per) + ")";
        }
        throw DataError(msg);
    }
}

void check_dataset_finite(const Dataset& ds) {
    const std::string name = ds.name.empty() ? "dataset" : "dataset '" + ds.name + "'";
    check_finite(ds.train_x, name + " train x");
    check_finite(ds.train_y, name + " train y");
    check_finite(ds.test_x, name + " test x");
    check_finite(ds.test_y, name + " test y");
}

}  // namespace mpwb
