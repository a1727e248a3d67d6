// put_value and BlobReader: the fixed-width binary blobs the project stores (the optimizer's state
// checkpoint, the workbench's decision boundary). Values are copied as their bytes in the host's
// order (every supported host, x86-64 and arm64, is little-endian); a reader that runs past the
// end throws DataError naming the blob and the byte, so a damaged blob is an error, never garbage.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/common/error.h"

namespace mpwb {

template <class T>
void put_value(std::vector<uint8_t>& out, const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
}

class BlobReader {
public:
    // `what` names the blob in errors ("optimizer state blob").
    BlobReader(std::span<const uint8_t> blob, std::string what) : blob_(blob), what_(std::move(what)) {}
    void read(void* dst, size_t bytes) {
        if (bytes > blob_.size() - pos_)
            throw DataError(what_ + " is truncated at byte " + std::to_string(pos_) + " of " +
                            std::to_string(blob_.size()));
        if (bytes > 0) std::memcpy(dst, blob_.data() + pos_, bytes);  // an empty vector's data() may be null
        pos_ += bytes;
    }
    template <class T>
    T get() {
        static_assert(std::is_trivially_copyable_v<T>);
        T v;
        read(&v, sizeof(T));
        return v;
    }
    size_t remaining() const { return blob_.size() - pos_; }

private:
    std::span<const uint8_t> blob_;
    std::string what_;
    size_t pos_ = 0;
};

}  // namespace mpwb
