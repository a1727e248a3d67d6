// The one random generator of the engine. A fixed algorithm (not std::default_random_engine,
// and no std:: distributions) so the same seed gives the same run on every platform.
#pragma once
#include <cmath>
#include <cstdint>

namespace mpwb {

// SplitMix64-seeded xoshiro256**.
class Rng {
public:
    explicit Rng(uint64_t seed = 0) { reseed(seed); }

    void reseed(uint64_t seed) {
        uint64_t x = seed;
        for (auto& s : state_) {
            x += 0x9E3779B97F4A7C15ull;
            uint64_t z = x;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            s = z ^ (z >> 31);
        }
        has_spare_normal_ = false;
    }

    uint64_t next_u64() {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // The whole state, for checkpoints: a generator given a saved state draws what the saved one
    // would have drawn next.
    struct State {
        uint64_t words[4]{};
        bool has_spare_normal = false;
        float spare_normal = 0.0f;
    };
    State state() const {
        State s{{state_[0], state_[1], state_[2], state_[3]}, has_spare_normal_, spare_normal_};
        return s;
    }
    void set_state(const State& s) {
        for (int i = 0; i < 4; ++i) state_[i] = s.words[i];
        has_spare_normal_ = s.has_spare_normal;
        spare_normal_ = s.spare_normal;
    }

    // Uniform in [0, 1) with 24 random bits, exact in float.
    float uniform() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }
    float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
    // Uniform integer in [0, n).
    uint64_t below(uint64_t n) { return n ? next_u64() % n : 0; }

    // Standard normal by Box-Muller (in double, then rounded).
    float normal() {
        if (has_spare_normal_) {
            has_spare_normal_ = false;
            return spare_normal_;
        }
        double u1 = (static_cast<double>(next_u64() >> 11) + 1.0) * 0x1.0p-53;
        double u2 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
        double r = std::sqrt(-2.0 * std::log(u1));
        spare_normal_ = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
        has_spare_normal_ = true;
        return static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    }
    float normal(float mean, float stddev) { return mean + stddev * normal(); }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t state_[4]{};
    bool has_spare_normal_ = false;
    float spare_normal_ = 0.0f;
};

}  // namespace mpwb
