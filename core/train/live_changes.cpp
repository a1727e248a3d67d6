// LiveChanges: the check of each kind of live change, and the queue the trainer drains at a step
// boundary.
#include "core/train/live_changes.h"

#include <string>
#include <type_traits>

#include "core/common/error.h"

namespace mpwb {

namespace {

template <class Change, class Kind>
constexpr bool is_kind = std::is_same_v<std::remove_cvref_t<Change>, Kind>;

}  // namespace

LiveChange checked_live_change(LiveChange change, const PrecisionPolicy& policy) {
    std::visit(
        [&](auto& c) {
            using C = decltype(c);
            if constexpr (is_kind<C, LearningRateChange>) {
                check_learning_rate(c.lr);
            } else if constexpr (is_kind<C, LossScalerConfig>) {
                c.validate();
            } else if constexpr (is_kind<C, LossScaleChange>) {
                if (std::string problem = loss_scale_problem("requested scale", c.scale); !problem.empty())
                    throw ScalerConfigError({"requested scale", std::move(problem)});
            } else {
                static_assert(is_kind<C, ScaledRecipeConfig>, "a live change without a check");
                if (!policy.scaled())
                    throw ConfigError(
                        "recipe settings need a scaled precision (fp8-delayed, fp8-current, fp8-block, "
                        "mxfp8, "
                        "nvfp4 or mxfp4), not " +
                        policy.name());
                c.recipe = policy.recipe;  // the policy decides the recipe
                c.validate();
            }
        },
        change);
    return change;
}

void apply_before_start(TrainConfig& config, const LiveChange& change) {
    std::visit(
        [&](const auto& c) {
            using C = decltype(c);
            if constexpr (is_kind<C, LearningRateChange>)
                config.lr = c.lr;
            else if constexpr (is_kind<C, LossScalerConfig>)
                config.scaler = c;
            else if constexpr (is_kind<C, ScaledRecipeConfig>)
                config.recipe = c;
            else
                static_assert(is_kind<C, LossScaleChange>, "a live change without a start value");
        },
        checked_live_change(change, config.policy()));
}

void LiveChanges::request(LiveChange change) {
    LiveChange checked = checked_live_change(std::move(change), policy_);  // throws to the caller
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(checked));
}

std::vector<LiveChange> LiveChanges::take() {
    std::lock_guard lock(mutex_);
    std::vector<LiveChange> out;
    out.swap(pending_);
    return out;
}

}  // namespace mpwb
