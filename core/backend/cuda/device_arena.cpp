// DeviceArena and PinnedBuffer.
#include "core/backend/cuda/device_arena.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "core/backend/cuda/cuda_check.h"

namespace mpwb::cuda {
namespace {
constexpr size_t kAlignment = 256;  // cuBLASLt and cuDNN want 16; 256 keeps every buffer on its own line
size_t align_up(size_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

DeviceArena::~DeviceArena() {
    for (auto& b : blocks_) cudaFree(b.base);
}

void* DeviceArena::allocate(size_t bytes, const std::string& what) {
    const size_t need = align_up(std::max<size_t>(bytes, 1));
    Block* block = nullptr;
    for (auto& b : blocks_)
        if (b.size - b.used >= need) {
            block = &b;
            break;
        }
    if (!block) {
        const size_t size = std::max(need, block_bytes_);
        void* base = nullptr;
        const cudaError_t status = cudaMalloc(&base, size);
        if (status == cudaErrorMemoryAllocation) {
            cudaGetLastError();  // clear the sticky error so the context stays usable
            size_t free_bytes = 0, total_bytes = 0;
            cudaMemGetInfo(&free_bytes, &total_bytes);
            throw DeviceOutOfMemory(size, free_bytes, total_bytes, what + " (" + format_bytes(bytes) + ")");
        }
        check_cuda(status, "cudaMalloc");
        check_cuda(cudaMemset(base, 0, size), "cudaMemset");
        blocks_.push_back({static_cast<char*>(base), size, 0});
        block = &blocks_.back();
        reserved_ += size;
    }
    void* p = block->base + block->used;
    block->used += need;
    return p;
}

PinnedBuffer::PinnedBuffer(size_t bytes, bool mapped) : bytes_(bytes) {
    check_cuda(cudaHostAlloc(&data_, std::max<size_t>(bytes, 1),
                             mapped ? cudaHostAllocMapped : cudaHostAllocDefault),
               "cudaHostAlloc", bytes);
}

PinnedBuffer::~PinnedBuffer() {
    if (data_) cudaFreeHost(data_);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
        if (data_) cudaFreeHost(data_);
        data_ = o.data_;
        bytes_ = o.bytes_;
        o.data_ = nullptr;
        o.bytes_ = 0;
    }
    return *this;
}

}  // namespace mpwb::cuda
