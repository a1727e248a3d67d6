// Tensor storage: 64-byte aligned host memory for the vector units and BLAS.
#include "core/tensor/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/common/checked_arith.h"
#include "core/common/error.h"

namespace mpwb {

void Tensor::AlignedFree::operator()(float* p) const { std::free(p); }

Tensor::Tensor(const Tensor& other) { *this = other; }

Tensor& Tensor::operator=(const Tensor& other) {
    if (this == &other) return *this;
    if (other.numel_ == 0 && other.shape_.empty()) {  // default-constructed: stays empty
        shape_.clear();
        numel_ = 0;
        return *this;
    }
    resize(other.shape_);
    if (numel_) std::memcpy(data_.get(), other.data_.get(), static_cast<size_t>(numel_) * sizeof(float));
    return *this;
}

void Tensor::resize(Shape shape) {
    // A wrapped product would allocate a buffer smaller than the shape says: refuse it instead,
    // and say what could not be allocated rather than a bare std::bad_alloc.
    const auto count = checked_product(shape);
    const bool negative = std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; });
    if (!count || negative || *count > kInt64Max / 4 - 64)
        throw DeviceError("cannot allocate a tensor of shape " + shape_to_string(shape) +
                          ": not a valid size");
    const int64_t n = *count;
    const auto needed = static_cast<size_t>(n);
    if (needed > capacity_) {
        const size_t bytes = ((needed * sizeof(float) + 63) / 64) * 64;
        auto* fresh = static_cast<float*>(std::aligned_alloc(64, bytes));
        if (!fresh)
            throw DeviceError("out of memory allocating a tensor of shape " + shape_to_string(shape) + " (" +
                              size_text(static_cast<int64_t>(bytes >> 20)) + " MiB)");
        if (numel_) std::memcpy(fresh, data_.get(), static_cast<size_t>(numel_) * sizeof(float));
        std::memset(fresh + numel_, 0, (needed - static_cast<size_t>(numel_)) * sizeof(float));
        data_.reset(fresh);
        capacity_ = needed;
    } else if (needed > static_cast<size_t>(numel_)) {
        std::memset(data_.get() + numel_, 0, (needed - static_cast<size_t>(numel_)) * sizeof(float));
    }
    shape_ = std::move(shape);
    numel_ = n;
}

void Tensor::fill(float value) { std::fill(data_.get(), data_.get() + numel_, value); }

}  // namespace mpwb
