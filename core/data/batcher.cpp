// Seeded shuffling and batch gathering. The epoch's permutation is rebuilt from the identity
// every epoch (never from the previous epoch's order), which is what makes epoch k reproducible
// on its own.
#include "core/data/batcher.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/common/error.h"
#include "core/common/rng.h"

namespace mpwb {
namespace {

uint64_t splitmix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// dst shaped [b, ...sample of src], resized only when the shape differs (Shape is a vector, so
// building one allocates; comparing in place does not).
void ensure_batch_shape(Tensor& dst, int64_t b, const Tensor& src) {
    const Shape& want = src.shape();
    const Shape& have = dst.shape();
    bool same = have.size() == want.size() && !have.empty() && have[0] == b;
    for (size_t i = 1; same && i < want.size(); ++i) same = have[i] == want[i];
    if (same) return;
    Shape s = want;
    s[0] = b;
    dst.resize(std::move(s));
}

// Mixed into the epoch's seed for its window phase, a stream apart from its shuffle's.
constexpr uint64_t kPhaseSalt = 0x7068617365ull;  // "phase"

}  // namespace

uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
    return splitmix(splitmix(seed) ^ splitmix(static_cast<uint64_t>(epoch) + 0x5EEDull));
}

void gather_rows(const Tensor& src, std::span<const int64_t> indices, Tensor& dst) {
    if (src.rank() < 1) throw DataError("gather_rows: source tensor has no sample dimension");
    const int64_t n = src.dim(0);
    const int64_t per = n ? src.numel() / n : shape_numel(Shape(src.shape().begin() + 1, src.shape().end()));
    ensure_batch_shape(dst, static_cast<int64_t>(indices.size()), src);
    const float* s = src.data();
    float* d = dst.data();
    for (size_t i = 0; i < indices.size(); ++i) {
        const int64_t r = indices[i];
        if (r < 0 || r >= n)
            throw DataError("gather_rows: sample index " + std::to_string(r) + " out of range [0, " +
                            std::to_string(n) + ")");
        std::memcpy(d + static_cast<int64_t>(i) * per, s + r * per, static_cast<size_t>(per) * sizeof(float));
    }
}

int64_t window_phase(const Dataset& data, uint64_t seed, int64_t epoch) {
    if (data.train_tokens.empty() || epoch == 0 || data.sample_shape.size() != 1) return 0;
    // Its own stream beside the epoch's shuffle (which draws from epoch_seed(seed, epoch) itself).
    Rng rng(epoch_seed(seed, epoch) ^ kPhaseSalt);
    return static_cast<int64_t>(rng.below(static_cast<uint64_t>(data.sample_shape[0])));
}

void gather_train_batch(const Dataset& data, int64_t phase, std::span<const int64_t> rows, Tensor& bx,
                        Tensor& by) {
    if (phase == 0 || data.train_tokens.empty()) {
        gather_rows(data.train_x, rows, bx);
        gather_rows(data.train_y, rows, by);
        return;
    }
    const int64_t T = data.sample_shape.at(0), windows = data.train_size();
    const auto tokens = static_cast<int64_t>(data.train_tokens.size());
    if (phase < 0 || phase >= T)
        throw DataError("window phase " + std::to_string(phase) + " is outside [0, " + std::to_string(T) +
                        ")");
    ensure_batch_shape(bx, static_cast<int64_t>(rows.size()), data.train_x);
    ensure_batch_shape(by, static_cast<int64_t>(rows.size()), data.train_y);
    for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t w = rows[i];
        if (w < 0 || w >= windows)
            throw DataError("gather_train_batch: window " + std::to_string(w) + " out of range [0, " +
                            std::to_string(windows) + ")");
        // The last window of a phase past the part's slack has no room: it keeps phase 0's.
        int64_t start = phase + w * T;
        if (start + T + 1 > tokens) start = w * T;
        const int32_t* from = data.train_tokens.data() + start;
        float* x = bx.data() + static_cast<int64_t>(i) * T;
        float* y = by.data() + static_cast<int64_t>(i) * T;
        for (int64_t k = 0; k < T; ++k) {
            x[k] = static_cast<float>(from[k]);
            y[k] = static_cast<float>(from[k + 1]);
        }
    }
}

BatchIterator::BatchIterator(const Tensor& x, const Tensor& y, int64_t batch_size, uint64_t seed,
                             bool shuffle, bool drop_last)
    : x_(&x),
      y_(&y),
      n_(x.rank() ? x.dim(0) : 0),
      batch_size_(batch_size),
      seed_(seed),
      shuffle_(shuffle),
      drop_last_(drop_last) {
    if (batch_size < 1) throw ConfigError("batch size " + std::to_string(batch_size) + " must be at least 1");
    const int64_t ny = y.rank() ? y.dim(0) : 0;
    if (ny != n_)
        throw DataError("batching: inputs hold " + std::to_string(n_) + " samples but targets hold " +
                        std::to_string(ny));
    order_.resize(static_cast<size_t>(n_));
    start_epoch(0);
}

int64_t BatchIterator::batches_per_epoch() const {
    return drop_last_ ? n_ / batch_size_ : (n_ + batch_size_ - 1) / batch_size_;
}

void BatchIterator::start_epoch(int64_t epoch) {
    if (epoch < 0) throw ConfigError("epoch " + std::to_string(epoch) + " must not be negative");
    epoch_ = epoch;
    batch_ = 0;
    last_ = {};
    for (int64_t i = 0; i < n_; ++i) order_[static_cast<size_t>(i)] = i;
    if (!shuffle_) return;
    Rng rng(epoch_seed(seed_, epoch));
    for (int64_t i = n_ - 1; i > 0; --i)
        std::swap(order_[static_cast<size_t>(i)],
                  order_[static_cast<size_t>(rng.below(static_cast<uint64_t>(i + 1)))]);
}

bool BatchIterator::next(Tensor& bx, Tensor& by) {
    if (batch_ >= batches_per_epoch()) return false;
    const int64_t begin = batch_ * batch_size_;
    const int64_t b = std::min(batch_size_, n_ - begin);
    last_ = std::span<const int64_t>(order_.data() + begin, static_cast<size_t>(b));
    gather_rows(*x_, last_, bx);
    gather_rows(*y_, last_, by);
    ++batch_;
    return true;
}

}  // namespace mpwb
