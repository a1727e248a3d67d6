// Tensor: a shape and contiguous FP32 storage (NCHW for images, N x F for features).
// Reduced formats are emulated by storing values that are exactly representable in the format
// (every FP16/BF16/FP8 value is an FP32 value), so one storage type serves every policy and the
// CPU results are bit for bit what the format holds. Copies are deep; storage grows, never shrinks,
// so a step loop that resizes to the same shapes allocates nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/tensor/shape.h"

namespace mpwb {

enum class Device : uint8_t { CPU, CUDA };

class Tensor {
public:
    Tensor() = default;
    explicit Tensor(Shape shape) { resize(std::move(shape)); }
    Tensor(Shape shape, float fill_value) {
        resize(std::move(shape));
        fill(fill_value);
    }
    Tensor(const Tensor& other);
    Tensor& operator=(const Tensor& other);
    Tensor(Tensor&&) noexcept = default;
    Tensor& operator=(Tensor&&) noexcept = default;

    const Shape& shape() const { return shape_; }
    int64_t dim(size_t i) const { return shape_.at(i); }
    size_t rank() const { return shape_.size(); }
    int64_t numel() const { return numel_; }
    bool empty() const { return numel_ == 0; }
    Device device() const { return Device::CPU; }

    float* data() { return data_.get(); }
    const float* data() const { return data_.get(); }
    std::span<float> span() { return {data_.get(), static_cast<size_t>(numel_)}; }
    std::span<const float> span() const { return {data_.get(), static_cast<size_t>(numel_)}; }
    float& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
    float operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }

    // Keeps the contents when the element count does not grow; new elements are zero.
    void resize(Shape shape);
    void fill(float value);
    void zero() { fill(0.0f); }

private:
    struct AlignedFree {
        void operator()(float* p) const;
    };
    Shape shape_;
    int64_t numel_ = 0;
    size_t capacity_ = 0;
    std::unique_ptr<float[], AlignedFree> data_;
};

}  // namespace mpwb
