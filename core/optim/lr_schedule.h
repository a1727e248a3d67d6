// Learning-rate schedules: a pure function of the iteration, so a paused, resumed or replayed run
// gets the same rate at the same step (whether skipped overflow steps count as iterations is the
// trainer's choice). Optional linear warm-up composes with every kind; the kind then runs over
// the iterations after the warm-up.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace mpwb {

struct ScheduleConfig {
    std::string kind = "constant";     // "constant", "step", "cosine"
    int64_t step_size = 1000;          // step: multiply by gamma every step_size iterations
    float gamma = 0.1f;                // step
    int64_t total_steps = 0;           // cosine: length of the whole run, warm-up included;
                                       // 0 = the run's length, filled in by the trainer
    float min_lr = 0.0f;               // cosine: eta_min, the rate reached at total_steps
    int64_t warmup_steps = 0;          // linear warm-up length; 0 = none
    float warmup_start_factor = 0.0f;  // warm-up starts at base_lr * this, in [0, 1]

    // Throws ConfigError naming the setting and its value.
    void validate() const;
    bool operator==(const ScheduleConfig&) const = default;
};

const std::vector<std::string>& schedule_kinds();

// JSON with the field names above; missing keys keep their defaults, unknown keys and values of
// the wrong type throw ConfigError naming the key. from_json validates the result.
void to_json(nlohmann::json& j, const ScheduleConfig& c);
void from_json(const nlohmann::json& j, ScheduleConfig& c);

class LrSchedule {
public:
    // base_lr must be finite and >= 0 (ConfigError).
    LrSchedule(ScheduleConfig config, float base_lr);

    // The rate for a 0-based iteration (negative counts as 0):
    //   warm-up (t < W):  base * (f + (1 - f) * t / W)                 (PyTorch LinearLR)
    //   then u = t - W:
    //   constant:         base
    //   step:             base * gamma^floor(u / step_size)            (PyTorch StepLR)
    //   cosine:           min + (base - min) * (1 + cos(pi * u / T)) / 2, T = total - W
    //                     (PyTorch CosineAnnealingLR's closed form); held at min_lr for u >= T
    //                     instead of rising again, so a run longer than planned stays at the floor.
    float lr_at(int64_t iteration) const;

    const ScheduleConfig& config() const { return config_; }
    float base_lr() const { return base_lr_; }

private:
    ScheduleConfig config_;
    float base_lr_;
};

}  // namespace mpwb
