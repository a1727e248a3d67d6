// Mini-batches for the step loop. The order of epoch k depends only on (seed, k), so a run that
// resumes at epoch k, or the FP32 and mixed runs of a comparison, see exactly the same batches.
// Batches are gathered into tensors the caller owns and reuses, so the loop allocates nothing
// once the shapes have been seen.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/data/dataset.h"
#include "core/tensor/tensor.h"

namespace mpwb {

// dst = src rows at indices ([len(indices), ...src sample shape]); no allocation when dst already
// has that shape or a larger capacity. Throws DataError on an index out of range.
void gather_rows(const Tensor& src, std::span<const int64_t> indices, Tensor& dst);

// The seed of the shuffle of one epoch: a hash of both, so nearby seeds and epochs give
// unrelated orders.
uint64_t epoch_seed(uint64_t seed, int64_t epoch);

// Text datasets (Dataset::train_tokens): where epoch k's training windows start. Window w reads
// tokens [phase + w·T, phase + w·T + T] (inputs, then next-token targets); the phase is 0 for
// epoch 0 and drawn in [0, T) from (seed, k) for later epochs, so a run repeats and resumes
// exactly with no state beside the epoch. 0 for every other dataset.
int64_t window_phase(const Dataset& data, uint64_t seed, int64_t epoch);

// The training batch of window (sample) indices at a phase into bx and by ([b, ...], reusing
// their storage): the rows of train_x and train_y at phase 0 or for a dataset without tokens,
// else windows read from train_tokens. The last window of a phase past the part's slack (the
// tokens beyond the last whole window at phase 0) has no room there and reads phase 0's.
// DataError on an index or phase out of range.
void gather_train_batch(const Dataset& data, int64_t phase, std::span<const int64_t> rows, Tensor& bx,
                        Tensor& by);

class BatchIterator {
public:
    // x: [N, ...], y: [N, ...]; both must outlive the iterator. shuffle=false keeps the order
    // 0..N-1 (evaluation). drop_last drops a final batch smaller than batch_size.
    // Throws ConfigError for batch_size < 1, DataError when x and y disagree on N.
    BatchIterator(const Tensor& x, const Tensor& y, int64_t batch_size, uint64_t seed, bool shuffle = true,
                  bool drop_last = false);

    // Starts epoch (>= 0): Fisher-Yates shuffle of 0..N-1 with Rng(epoch_seed(seed, epoch)).
    void start_epoch(int64_t epoch);
    // Gathers the next batch into bx, by (resized to [b, ...]); false when the epoch is over.
    bool next(Tensor& bx, Tensor& by);

    int64_t samples() const { return n_; }
    int64_t batch_size() const { return batch_size_; }
    int64_t batches_per_epoch() const;
    int64_t epoch() const { return epoch_; }
    // Sample indices of the current batch (valid after next() returned true).
    std::span<const int64_t> last_indices() const { return last_; }
    const std::vector<int64_t>& order() const { return order_; }

private:
    const Tensor* x_;
    const Tensor* y_;
    int64_t n_;
    int64_t batch_size_;
    uint64_t seed_;
    bool shuffle_, drop_last_;
    int64_t epoch_ = 0;
    int64_t batch_ = 0;
    std::vector<int64_t> order_;
    std::span<const int64_t> last_;
};

}  // namespace mpwb
