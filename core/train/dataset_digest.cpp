// The dataset digest (dataset_digest.h): four independent 64-bit lanes, each folding in every
// fourth word with a rotate and a multiply, so the multiplies of a block overlap and the digest
// runs at memory speed; each piece's length is folded in as well, and the lanes are combined with
// SplitMix64's finaliser.
#include "core/train/dataset_digest.h"

#include <array>
#include <cstdio>
#include <cstring>

namespace mpwb {
namespace {

constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull;  // odd, so each fold is a bijection
constexpr size_t kLanes = 4;
constexpr size_t kBlockBytes = kLanes * sizeof(uint64_t);

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t fold(uint64_t lane, uint64_t word) { return rotl(lane ^ word, 29) * kMultiplier; }

uint64_t finalise(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

class Digest {
public:
    void add(const void* bytes, size_t size) {
        const auto* p = static_cast<const uint8_t*>(bytes);
        size_t at = 0;
        for (; at + kBlockBytes <= size; at += kBlockBytes) add_block(p + at);
        if (at < size) {
            uint8_t tail[kBlockBytes] = {};
            std::memcpy(tail, p + at, size - at);
            add_block(tail);
        }
        lanes_[0] = fold(lanes_[0], size);  // frames the piece: a zero-padded tail is not its zeros
    }
    template <class T>
    void add_value(T v) {
        add(&v, sizeof v);
    }
    void add_tensor(const Tensor& t) {
        add_value(static_cast<uint64_t>(t.rank()));
        for (size_t d = 0; d < t.rank(); ++d) add_value(static_cast<int64_t>(t.dim(d)));
        add(t.data(), static_cast<size_t>(t.numel()) * sizeof(float));
    }
    uint64_t value() const {
        uint64_t h = finalise(kMultiplier);
        for (const uint64_t lane : lanes_) h = finalise(h ^ lane);
        return h;
    }

private:
    void add_block(const uint8_t* block) {
        for (size_t l = 0; l < kLanes; ++l) {
            uint64_t word;
            std::memcpy(&word, block + l * sizeof word, sizeof word);
            lanes_[l] = fold(lanes_[l], word);
        }
    }

    std::array<uint64_t, kLanes> lanes_ = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull,
                                           0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull};
};

}  // namespace

uint64_t dataset_digest(const Dataset& data) {
    Digest d;
    d.add_value(static_cast<int64_t>(data.num_classes));
    for (const Tensor* t : {&data.train_x, &data.train_y, &data.test_x, &data.test_y}) d.add_tensor(*t);
    // Text: the ids alone miss a file whose characters changed but sort the same (every 'a' now a
    // 'b'). Only text datasets fold it in, so the digests other runs' checkpoints hold stay.
    if (data.vocabulary) {
        const std::string vocabulary = data.vocabulary->to_json().dump();
        d.add(vocabulary.data(), vocabulary.size());
    }
    return d.value();
}

std::string digest_text(uint64_t digest) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(digest));
    return text;
}

}  // namespace mpwb
