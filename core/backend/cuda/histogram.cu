// The exponent-histogram kernel: ExponentHistogram::compute's counts (one bin per power of two,
// zeros, non-finite, per-format values above the largest finite, the largest magnitude) on the
// device, added into a DeviceHistogram. element_math.h's histogram_* functions decide every
// element, so the counts equal the CPU's for the same values (counts are integers: the order of
// the additions cannot change them).
//
// Each block counts into shared memory first: lanes of a warp that hit the same slot are
// combined with __match_any_sync, so a gradient whose values crowd a few binades costs one
// shared atomic per slot per warp, not 32 colliding ones; the per-format overflow flags are
// counted with a ballot. Each block then adds its nonzero counts to global memory.
#include <cuda_runtime.h>

#include "core/backend/cuda/element_math.h"
#include "core/backend/cuda/kernel_launch.cuh"
#include "core/backend/cuda/kernels.h"

namespace mpwb::cuda::kernels {

using launch::check_launch;
using launch::with_dtype;

namespace {

static_assert(DeviceHistogram::kBinCount == kHistogramBinCount);
static_assert(DeviceHistogram::kMinExponent == kHistogramMinExponent);
constexpr int kFormats = 6;
static_assert(sizeof(DeviceHistogram::above_max) / sizeof(DeviceHistogram::above_max[0]) == kFormats);

constexpr int kHistogramThreads = 256;
// Each block flushes ~285 counters; a couple of blocks per SM keep the loads flowing.
constexpr int64_t kHistogramMaxBlocks = 264;

template <DType T>
__global__ void exponent_histogram_kernel(const void* x, int64_t n, DeviceHistogram* out) {
    __shared__ unsigned int slots[kHistogramSlotCount];
    __shared__ unsigned int above[kFormats];
    __shared__ unsigned int block_max;
    for (int s = threadIdx.x; s < kHistogramSlotCount; s += blockDim.x) slots[s] = 0;
    if (threadIdx.x < kFormats) above[threadIdx.x] = 0;
    if (threadIdx.x == 0) block_max = 0;
    __syncthreads();

    const int lane = threadIdx.x & 31;
    unsigned int max_bits = 0;
    // The loop bound is the block's, not the thread's, so every lane of a warp takes part in
    // the warp-wide votes; lanes past the end vote with slot -1.
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x; base < n;
         base += launch::grid_threads()) {
        const int64_t i = base + threadIdx.x;
        int slot = -1;
        float v = 0.0f;
        if (i < n) {
            v = load_value<T>(x, i);
            slot = histogram_slot(v);
            const unsigned int m = histogram_max_abs_bits(v);
            max_bits = m > max_bits ? m : max_bits;
        }
        const unsigned int peers = __match_any_sync(0xffffffffu, slot);
        if (slot >= 0 && lane == __ffs(peers) - 1)
            atomicAdd(&slots[slot], static_cast<unsigned int>(__popc(peers)));
        for (int f = 0; f < kFormats; ++f) {
            const unsigned int over = __ballot_sync(0xffffffffu, i < n && histogram_above_max(v, f));
            if (lane == 0 && over) atomicAdd(&above[f], static_cast<unsigned int>(__popc(over)));
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        const unsigned int other = __shfl_xor_sync(0xffffffffu, max_bits, offset);
        max_bits = other > max_bits ? other : max_bits;
    }
    if (lane == 0) atomicMax(&block_max, max_bits);
    __syncthreads();

    for (int s = threadIdx.x; s < kHistogramSlotCount; s += blockDim.x) {
        const unsigned long long count = slots[s];
        if (!count) continue;
        unsigned long long* target = s < kHistogramBinCount    ? &out->bins[s]
                                     : s == kHistogramZeroSlot ? &out->zeros
                                                               : &out->non_finite;
        atomicAdd(target, count);
    }
    if (threadIdx.x < kFormats && above[threadIdx.x])
        atomicAdd(&out->above_max[threadIdx.x], static_cast<unsigned long long>(above[threadIdx.x]));
    if (threadIdx.x == 0 && block_max) atomicMax(&out->max_abs_bits, block_max);
}

}  // namespace

void exponent_histogram(DType t, const void* x, int64_t n, DeviceHistogram* out, cudaStream_t stream) {
    if (n <= 0) return;
    // Shared counters are 32-bit: no block may see 2^32 values.
    const int64_t min_blocks = (n >> 31) + 1;
    int64_t blocks = launch::blocks_for(n, kHistogramThreads, kHistogramMaxBlocks);
    if (blocks < min_blocks) blocks = min_blocks;
    with_dtype(t, [&](auto t_tag) {
        constexpr DType T = decltype(t_tag)::value;
        exponent_histogram_kernel<T>
            <<<static_cast<unsigned>(blocks), kHistogramThreads, 0, stream>>>(x, n, out);
    });
    check_launch("exponent_histogram");
}

}  // namespace mpwb::cuda::kernels
