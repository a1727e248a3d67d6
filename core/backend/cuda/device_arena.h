// DeviceArena: the device memory of one training plan. Everything a step touches (weights,
// optimizer state, activations, gradients, workspaces, the dataset) is carved out of a few large
// cudaMalloc blocks when the plan is built, so the step loop never allocates, a CUDA graph can
// capture fixed addresses, and running out of memory happens up front with a message naming
// what asked for how much. PinnedBuffer is the host side of the asynchronous read-backs.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace mpwb::cuda {

class DeviceArena {
public:
    explicit DeviceArena(size_t block_bytes = size_t{64} << 20) : block_bytes_(block_bytes) {}
    ~DeviceArena();
    DeviceArena(const DeviceArena&) = delete;
    DeviceArena& operator=(const DeviceArena&) = delete;

    // 256-byte aligned, zero-filled device memory living as long as the arena. `what` names the
    // buffer in the DeviceOutOfMemory message ("activations of layer 3 (Linear)").
    void* allocate(size_t bytes, const std::string& what);
    template <class T>
    T* allocate_array(size_t count, const std::string& what) {
        return static_cast<T*>(allocate(count * sizeof(T), what));
    }
    size_t bytes_reserved() const { return reserved_; }

private:
    struct Block {
        char* base;
        size_t size;
        size_t used;
    };
    size_t block_bytes_;
    std::vector<Block> blocks_;
    size_t reserved_ = 0;
};

// Page-locked host memory, so cudaMemcpyAsync to and from it is truly asynchronous.
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    // mapped: the device can address it too (cudaHostGetDevicePointer), so a kernel can write
    // results straight into host memory.
    explicit PinnedBuffer(size_t bytes, bool mapped = false);
    ~PinnedBuffer();
    PinnedBuffer(PinnedBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
        o.data_ = nullptr;
        o.bytes_ = 0;
    }
    PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    template <class T>
    T* as() const {
        return static_cast<T*>(data_);
    }
    size_t bytes() const { return bytes_; }

private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
};

}  // namespace mpwb::cuda
