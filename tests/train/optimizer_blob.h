// OptimizerBlob: the optimizer's state blob (Optimizer::save_state) taken apart and put back
// together, so tests can forge states whose checksum is right but whose buffers are not.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace mpwb::test {

// The layout: "MPWBOPT1", the kind (uint32 length and its text), the count (uint64), then per
// parameter its step (int64) and two buffers, each a uint64 count and its floats.
struct OptimizerBlob {
    struct Entry {
        int64_t step = 0;
        std::vector<float> a, b;
    };
    std::string kind;
    std::vector<Entry> entries;

    explicit OptimizerBlob(const std::vector<uint8_t>& blob) {
        size_t at = 8;
        const auto take = [&](void* to, size_t n) {
            if (n == 0) return;  // an empty buffer's data() may be null, which memcpy must not get
            std::memcpy(to, blob.data() + at, n);
            at += n;
        };
        uint32_t kind_len = 0;
        take(&kind_len, 4);
        kind.resize(kind_len);
        take(kind.data(), kind_len);
        uint64_t count = 0;
        take(&count, 8);
        entries.resize(count);
        for (Entry& e : entries) {
            take(&e.step, 8);
            for (std::vector<float>* v : {&e.a, &e.b}) {
                uint64_t n = 0;
                take(&n, 8);
                v->resize(n);
                take(v->data(), n * sizeof(float));
            }
        }
    }
    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> out = {'M', 'P', 'W', 'B', 'O', 'P', 'T', '1'};
        const auto put = [&](const void* from, size_t n) {
            const auto* p = static_cast<const uint8_t*>(from);
            out.insert(out.end(), p, p + n);
        };
        const auto kind_len = static_cast<uint32_t>(kind.size());
        put(&kind_len, 4);
        put(kind.data(), kind.size());
        const uint64_t count = entries.size();
        put(&count, 8);
        for (const Entry& e : entries) {
            put(&e.step, 8);
            for (const std::vector<float>* v : {&e.a, &e.b}) {
                const uint64_t n = v->size();
                put(&n, 8);
                put(v->data(), n * sizeof(float));
            }
        }
        return out;
    }
};

}  // namespace mpwb::test
