// Learning-rate schedules in closed form, evaluated in double and rounded once to float.
#include "core/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/common/text_format.h"

namespace mpwb {

namespace {

// Names the settings in messages and is the path prefix of their fields ("schedule.gamma").
constexpr const char* kWhat = "schedule";

void check_finite(const char* key, float v) {
    if (!std::isfinite(v))
        throw ConfigError(std::string("schedule ") + key + " = " + shortest_text(v) +
                          " is not a finite number");
}

}  // namespace

const std::vector<std::string>& schedule_kinds() {
    static const std::vector<std::string> kinds{"constant", "step", "cosine"};
    return kinds;
}

void ScheduleConfig::validate() const {
    const auto& kinds = schedule_kinds();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
        std::string valid;
        for (const auto& k : kinds) valid += (valid.empty() ? "" : ", ") + k;
        throw ConfigError("schedule kind '" + kind + "' is unknown (valid kinds: " + valid + ")");
    }
    check_finite("gamma", gamma);
    check_finite("min_lr", min_lr);
    check_finite("warmup_start_factor", warmup_start_factor);
    if (warmup_steps < 0)
        throw ConfigError("schedule warmup_steps = " + std::to_string(warmup_steps) + " is negative");
    if (warmup_start_factor < 0.0f || warmup_start_factor > 1.0f)
        throw ConfigError("schedule warmup_start_factor = " + shortest_text(warmup_start_factor) +
                          " is outside [0, 1]");
    if (min_lr < 0.0f) throw ConfigError("schedule min_lr = " + shortest_text(min_lr) + " is negative");
    if (kind == "step") {
        if (step_size < 1)
            throw ConfigError("schedule step_size = " + std::to_string(step_size) +
                              " must be >= 1 for the step schedule");
        if (gamma <= 0.0f) throw ConfigError("schedule gamma = " + shortest_text(gamma) + " must be > 0");
    }
    // total_steps 0 means "the whole run": the trainer fills it in once it knows the length.
    if (kind == "cosine" && total_steps != 0 && total_steps <= warmup_steps)
        throw ConfigError("schedule total_steps = " + std::to_string(total_steps) +
                          " must be greater than warmup_steps = " + std::to_string(warmup_steps) +
                          " for the cosine schedule");
}

void to_json(nlohmann::json& j, const ScheduleConfig& c) {
    j = nlohmann::json{{"kind", c.kind},
                       {"step_size", c.step_size},
                       {"gamma", float_as_json_double(c.gamma)},
                       {"total_steps", c.total_steps},
                       {"min_lr", float_as_json_double(c.min_lr)},
                       {"warmup_steps", c.warmup_steps},
                       {"warmup_start_factor", float_as_json_double(c.warmup_start_factor)}};
}

void from_json(const nlohmann::json& j, ScheduleConfig& c) {
    check_setting_keys(
        j, kWhat,
        {"kind", "step_size", "gamma", "total_steps", "min_lr", "warmup_steps", "warmup_start_factor"});
    ScheduleConfig out;
    read_setting(j, kWhat, "kind", out.kind);
    read_setting(j, kWhat, "step_size", out.step_size);
    read_setting(j, kWhat, "gamma", out.gamma);
    read_setting(j, kWhat, "total_steps", out.total_steps);
    read_setting(j, kWhat, "min_lr", out.min_lr);
    read_setting(j, kWhat, "warmup_steps", out.warmup_steps);
    read_setting(j, kWhat, "warmup_start_factor", out.warmup_start_factor);
    out.validate();
    c = std::move(out);
}

LrSchedule::LrSchedule(ScheduleConfig config, float base_lr) : config_(std::move(config)), base_lr_(base_lr) {
    config_.validate();
    if (config_.kind == "cosine" && config_.total_steps == 0)
        throw ConfigError("the cosine schedule needs total_steps (the length of the run)");
    if (!std::isfinite(base_lr) || base_lr < 0.0f)
        throw ConfigError("learning rate = " + shortest_text(base_lr) + " must be finite and >= 0");
}

float LrSchedule::lr_at(int64_t iteration) const {
    const double base = base_lr_;
    const int64_t t = std::max<int64_t>(iteration, 0);
    const int64_t w = config_.warmup_steps;
    if (t < w) {
        const double f = config_.warmup_start_factor;
        return static_cast<float>(base * (f + (1.0 - f) * static_cast<double>(t) / static_cast<double>(w)));
    }
    const int64_t u = t - w;
    if (config_.kind == "step") {
        const auto k = static_cast<double>(u / config_.step_size);
        return static_cast<float>(base * std::pow(static_cast<double>(config_.gamma), k));
    }
    if (config_.kind == "cosine") {
        const int64_t span = config_.total_steps - w;
        const double lo = config_.min_lr;
        if (u >= span) return config_.min_lr;
        const double phase = std::numbers::pi * static_cast<double>(u) / static_cast<double>(span);
        return static_cast<float>(lo + (base - lo) * (1.0 + std::cos(phase)) / 2.0);
    }
    return base_lr_;
}

}  // namespace mpwb
