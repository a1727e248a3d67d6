// libFuzzer harness: a checkpoint's binary state (core/train/checkpoint.cpp), which comes back
// from run databases and bundles, so from outside. The checksum would turn away almost every
// mutation before the sections are read, so the harness writes the right checksum over the
// input's last eight bytes first and lets the decoder's own checks face the damage. A state that
// decodes must encode and decode again (the round trip the trainer relies on) and give a digest.
#include <cstring>
#include <vector>

#include "core/train/checkpoint.h"
#include "core/train/checkpoint_state.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// The checksum the format uses (checkpoint_state.h): FNV-1a 64 of everything before it.
uint64_t fnv1a64(const uint8_t* bytes, size_t size) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    mpwb::TrainingCheckpoint checkpoint;
    checkpoint.state.assign(data, data + size);
    if (size >= sizeof(uint64_t)) {
        const uint64_t sum = fnv1a64(data, size - sizeof sum);
        std::memcpy(checkpoint.state.data() + size - sizeof sum, &sum, sizeof sum);
    }
    mpwb::fuzz::expect_app_errors([&] {
        const mpwb::CheckpointState state = mpwb::decode_checkpoint_state(checkpoint.state);
        (void)mpwb::weights_digest(checkpoint);
        const std::vector<uint8_t> again = mpwb::encode_checkpoint_state(state);
        try {
            (void)mpwb::decode_checkpoint_state(again);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "finding: a decoded state does not decode after encoding: %s\n", e.what());
            std::abort();
        }
    });
    return 0;
}
