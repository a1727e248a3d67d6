// Checking a checkpoint against the run it restores into, section by section, and applying it
// once everything passed (checkpoint_restore.h).
#include "core/train/checkpoint_restore.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/checked_arith.h"
#include "core/common/error.h"
#include "core/common/text_format.h"
#include "core/numeric/format.h"
#include "core/optim/optimizer.h"
#include "core/precision/gemm_quantizer.h"
#include "core/train/dataset_digest.h"

namespace mpwb {
namespace {

// Names the checkpoint in every refusal.
class Refusal {
public:
    explicit Refusal(const TrainingCheckpoint& c)
        : name_(c.source.empty() ? "checkpoint at step " + std::to_string(c.step) : c.source) {}

    // Damage: `where` is "section WGHT", "position" and the like.
    [[noreturn]] void damage(std::string_view where, const std::string& problem) const {
        throw DataError(name_ + ": " + std::string(where) + ": " + problem);
    }
    // Another network, other settings or other data.
    [[noreturn]] void mismatch(const std::string& problem) const {
        throw ConfigError(name_ + ": " + problem);
    }
    // Runs f; the app's errors it throws are damage in `where`.
    template <class F>
    void as_damage(std::string_view where, F&& f) const {
        try {
            f();
        } catch (const Error& e) {
            damage(where, e.what());
        }
    }

private:
    std::string name_;
};

// "parameter 2 (1 Linear weight)".
std::string parameter_text(const Network& network, size_t i) {
    return "parameter " + std::to_string(i) + " (" + network.parameter_owner(i) + " " +
           network.parameters()[i]->name + ")";
}

// The first element where `bad` holds, as "nan at element 5 of 256"; empty when none.
template <class Bad>
std::string first_bad(std::span<const float> values, Bad bad) {
    for (size_t k = 0; k < values.size(); ++k)
        if (bad(values[k]))
            return shortest_text(values[k]) + " at element " + std::to_string(k) + " of " +
                   std::to_string(values.size());
    return {};
}

// The first element where two lists differ bit for bit, as "element 3 (1.5, 1.25)"; empty if none.
std::string first_difference(const std::vector<float>& got, const std::vector<float>& want) {
    for (size_t k = 0; k < got.size(); ++k)
        if (std::memcmp(&got[k], &want[k], sizeof(float)) != 0)
            return "element " + std::to_string(k) + " is " + shortest_text(got[k]) + " where " +
                   shortest_text(want[k]) + " belongs";
    return {};
}

// Up to four settings that differ, as "precision: the checkpoint's \"fp16-mixed\", this run's
// \"fp32\"", for a checkpoint that does not fit.
std::string json_differences(const nlohmann::json& checkpoint, const nlohmann::json& here) {
    const nlohmann::json patch = nlohmann::json::diff(here, checkpoint);
    const auto value_at = [](const nlohmann::json& j, const nlohmann::json::json_pointer& at) {
        std::string text = j.contains(at) ? j.at(at).dump() : std::string("none");
        return text.size() > 60 ? text.substr(0, 57) + "..." : text;
    };
    std::string text;
    for (size_t i = 0; i < patch.size() && i < 4; ++i) {
        std::string name = patch[i].at("path").get<std::string>();
        nlohmann::json::json_pointer at;
        try {
            at = nlohmann::json::json_pointer(name);
        } catch (const nlohmann::json::exception&) {}
        std::replace(name.begin(), name.end(), '/', '.');
        text += (i ? "; " : "") + (name.empty() ? std::string("(all)") : name.substr(1)) +
                ": the checkpoint's " + value_at(checkpoint, at) + ", this run's " + value_at(here, at);
    }
    if (patch.size() > 4) text += "; and " + std::to_string(patch.size() - 4) + " more";
    return text;
}

// The settings a resumed run must share with its checkpoint: all but how it executes (threads,
// CUDA graphs) and the live ones the checkpoint carries itself (scaler, recipe).
nlohmann::json settings_that_must_match(nlohmann::json config) {
    for (const char* key : {"threads", "device_graphs", "scaler", "recipe"})
        if (config.is_object()) config.erase(key);
    return config;
}

void check_settings(const CheckpointState& s, const RestoreTarget& t, const Refusal& r) {
    const nlohmann::json network = t.network.to_json();
    if (s.network != network) r.mismatch("it is of another network: " + json_differences(s.network, network));
    const nlohmann::json mine = settings_that_must_match(to_json(t.config));
    const nlohmann::json theirs = settings_that_must_match(s.config);
    if (theirs != mine) r.mismatch("its settings differ from this run's: " + json_differences(theirs, mine));
    if (s.train_samples != t.data.train_size())
        r.mismatch("its dataset has " + std::to_string(s.train_samples) + " training samples, this run's " +
                   std::to_string(t.data.train_size()));
}

// The digest of the data the run trained on, when it differs from this data's and that is
// allowed; a version-1 state has none to compare.
std::optional<uint64_t> check_data(const CheckpointState& s, const RestoreTarget& t, const Refusal& r) {
    if (!s.data_digest || *s.data_digest == t.data_digest) return std::nullopt;
    if (t.allow_changed_data) return s.data_digest;
    const std::string& path = t.config.dataset.path;
    r.mismatch("the data changed since the run trained on it: dataset '" + t.data.name + "'" +
               (path.empty() ? "" : " (" + path + ")") + " now has digest " + digest_text(t.data_digest) +
               ", the run trained on data with digest " + digest_text(*s.data_digest) +
               " (the same number of samples, other values); --allow-changed-data continues on the new data");
}

// Each step is one batch, epoch after epoch: the step fixes the epoch and the batch.
void check_position(const TrainingCheckpoint& c, const CheckpointState& s, const RestoreTarget& t,
                    const Refusal& r) {
    const int64_t per_epoch = t.steps_per_epoch;
    const bool in_range = c.step >= 0 && c.step <= t.total_steps && c.epoch >= 0 &&
                          c.epoch <= t.total_steps && c.batch >= 0 && c.batch < per_epoch;
    const auto start = checked_mul(c.epoch, per_epoch);
    const bool consistent =
        in_range && start && checked_add(*start, c.batch) == c.step && c.step == s.sums.steps;
    if (!consistent)
        r.damage("position", "step " + std::to_string(c.step) + ", epoch " + std::to_string(c.epoch) +
                                 ", batch " + std::to_string(c.batch) + " does not fit a run of " +
                                 std::to_string(t.total_steps) + " steps, " + std::to_string(per_epoch) +
                                 " per epoch (its state has " + std::to_string(s.sums.steps) + " steps)");
    if (!std::isfinite(c.wall_seconds) || c.wall_seconds < 0)
        r.damage("position", "a run time of " + shortest_text(c.wall_seconds) + " seconds");
    if (!std::isfinite(s.lr_scale) || !(s.lr_scale > 0))
        r.damage("section LIVE", "a learning-rate factor of " + shortest_text(s.lr_scale));
}

// A master weight and its reduced copy per parameter: the copy where the network keeps one (a
// reduced layer), and maybe elsewhere too (the optimizer writes one for every parameter it
// updates under a reduced copy format).
void check_weight_sizes(const CheckpointState& s, const RestoreTarget& t, const Refusal& r) {
    const auto params = t.network.parameters();
    if (s.values.size() != params.size())
        r.damage("section WGHT", std::to_string(s.values.size()) + " parameters, the network has " +
                                     std::to_string(params.size()));
    for (size_t i = 0; i < params.size(); ++i) {
        const auto n = static_cast<size_t>(params[i]->value.numel());
        const bool needs_copy = !params[i]->compute.empty();
        const size_t copy = s.copies[i].size();
        if (s.values[i].size() != n || !(copy == n || (copy == 0 && !needs_copy)))
            r.damage("section WGHT",
                     parameter_text(t.network, i) + " holds " + std::to_string(s.values[i].size()) +
                         " values and " + std::to_string(copy) + " reduced ones, the network's " +
                         std::to_string(n) + " and " + (needs_copy ? "" : "0 or ") + std::to_string(n));
    }
}

// Masters are finite (a run whose weights are not can only skip every later step) and in the
// master format; a reduced copy is its master rounded to the copy format, as the optimizer and
// Network::prepare_weights write it.
void check_weight_values(const CheckpointState& s, const RestoreTarget& t, const Refusal& r) {
    const PrecisionPolicy& policy = t.policy;
    for (size_t i = 0; i < s.values.size(); ++i) {
        const std::vector<float>& master = s.values[i];
        const std::string name = parameter_text(t.network, i);
        const std::string bad = first_bad(master, [](float v) { return !std::isfinite(v); });
        if (!bad.empty()) r.damage("section WGHT", name + " holds a non-finite master weight: " + bad);
        std::vector<float> rounded(master.size());
        if (policy.master != Format::FP32) {
            round_to_format(policy.master, master.data(), rounded.data(), master.size());
            const std::string off = first_difference(master, rounded);
            if (!off.empty())
                r.damage("section WGHT", name + " holds a master weight that " + format_name(policy.master) +
                                             " cannot hold, which this policy keeps it in: " + off);
        }
        if (s.copies[i].empty()) continue;
        if (policy.weight_copy == Format::FP32)
            r.damage("section WGHT", name + " holds a reduced copy, which this policy does not keep");
        round_to_format(policy.weight_copy, master.data(), rounded.data(), master.size());
        const std::string off = first_difference(s.copies[i], rounded);
        if (!off.empty())
            r.damage("section WGHT", name + "'s reduced copy is not its master rounded to " +
                                         format_name(policy.weight_copy) + ": " + off);
    }
}

void check_buffers(const CheckpointState& s, const RestoreTarget& t, const Refusal& r) {
    const auto buffers = t.network.buffers();
    if (s.buffers.size() != buffers.size())
        r.damage("section BUFF", std::to_string(s.buffers.size()) + " buffers, the network has " +
                                     std::to_string(buffers.size()));
    for (size_t i = 0; i < buffers.size(); ++i)
        if (std::ssize(s.buffers[i]) != buffers[i]->numel())
            r.damage("section BUFF", "buffer " + std::to_string(i) + " holds " +
                                         std::to_string(s.buffers[i].size()) + " values, the network's " +
                                         std::to_string(buffers[i]->numel()));
}

// The optimizer's own check of its buffers against the parameters, in an optimizer of the run's
// kind that is then thrown away; no parameter has more updates than the run has steps.
void check_optimizer(const TrainingCheckpoint& c, const CheckpointState& s, const RestoreTarget& t,
                     const Refusal& r) {
    const auto optimizer = make_optimizer(t.config.optimizer);
    const auto params = t.network.parameters();
    r.as_damage("section OPTM", [&] {
        optimizer->load_state(s.engine.optimizer, params,
                              [&](size_t i) { return parameter_text(t.network, i); });
    });
    for (size_t i = 0; i < params.size(); ++i)
        if (optimizer->step_count(i) > c.step)
            r.damage("section OPTM", "the optimizer state of " + parameter_text(t.network, i) + " counts " +
                                         std::to_string(optimizer->step_count(i)) + " updates after " +
                                         std::to_string(c.step) + " steps");
}

// Every step is applied or skipped once (retries are not steps).
void check_scaler(const TrainingCheckpoint& c, const CheckpointState& s, const Refusal& r) {
    LossScaler scaler;
    r.as_damage("section SCAL", [&] { scaler.restore_state(s.scaler); });
    const int64_t counted = saturating_add(scaler.applied_steps(), scaler.skipped_steps());
    if (counted > c.step || scaler.optimizer_iteration() > c.step)
        r.damage("section SCAL", "the loss scaler counts " + std::to_string(scaler.applied_steps()) +
                                     " applied and " + std::to_string(scaler.skipped_steps()) +
                                     " skipped steps (optimizer iteration " +
                                     std::to_string(scaler.optimizer_iteration()) + ") after " +
                                     std::to_string(c.step) + " steps");
}

// One state per quantizer of each GEMM (one per recipe its passes use, precision_plan) under the
// settings the run had reached, in (layer, GEMM, slot) order, each checked by a quantizer with
// the settings that slot runs with.
void check_quantizers(const CheckpointState& s, const RestoreTarget& t, const ScaledRecipeConfig& recipe,
                      const Refusal& r) {
    Network& network = t.network;
    struct Expected {
        uint64_t layer, gemm, slot;
        ScaledRecipeConfig settings;
        std::string label;
    };
    std::vector<Expected> expected;
    const GemmPrecisionPlan& plan = network.precision_plan();
    if (network.quantizes())
        for (const GemmPrecision& g : plan.gemms) {
            const auto slots =
                slot_settings(pass_recipes_of(g, network.gemms(g.layer)[g.gemm], recipe, plan.policy.recipe));
            for (size_t i = 0; i < slots.size(); ++i)
                expected.push_back({g.layer, g.gemm, i, slots[i],
                                    network.gemm_label(g.layer, network.gemms(g.layer)[g.gemm].name)});
        }
    if (s.quantizers.size() != expected.size())
        r.damage("section QUAN", std::to_string(s.quantizers.size()) +
                                     " recipe quantizers, the network has " +
                                     std::to_string(expected.size()));
    for (size_t i = 0; i < s.quantizers.size(); ++i) {
        const QuantizerCheckpoint& q = s.quantizers[i];
        const Expected& e = expected[i];
        if (q.layer != e.layer || q.gemm != e.gemm || q.slot != e.slot)
            r.damage("section QUAN", "entry " + std::to_string(i) + " is for layer " +
                                         std::to_string(q.layer) + " GEMM " + std::to_string(q.gemm) +
                                         " quantizer " + std::to_string(q.slot) + ", the network's is for " +
                                         e.label + " quantizer " + std::to_string(e.slot));
        GemmQuantizer probe(e.settings, t.config.seed, gemm_quantizer_key(q.layer, q.gemm));
        r.as_damage("section QUAN, " + e.label, [&] { probe.load_state(q.state); });
    }
}

void check_rng(const CheckpointState& s, const Refusal& r) {
    const Rng::State& rng = s.engine.dropout;
    if (std::all_of(std::begin(rng.words), std::end(rng.words), [](uint64_t w) { return w == 0; }))
        r.damage("section RNGS",
                 "the dropout generator's state is all zeros, which xoshiro256** never reaches");
    if (rng.has_spare_normal && !std::isfinite(rng.spare_normal))
        r.damage("section RNGS",
                 "the dropout generator holds a spare normal draw of " + shortest_text(rng.spare_normal));
}

// The summary's counts against the position: none negative, none more than the steps taken
// allow.
void check_sums(const TrainingCheckpoint& c, const CheckpointState& s, const RestoreTarget& t,
                const Refusal& r) {
    const RunSums& sums = s.sums;
    const int64_t samples = saturating_mul(c.step, t.config.batch_size);
    const struct {
        const char* name;
        int64_t value, most;
    } counts[] = {{"epochs_completed", sums.epochs_completed, c.epoch},
                  {"since_eval_steps", sums.since_eval_steps, c.step},
                  {"since_eval_samples", sums.since_eval_samples, samples},
                  {"epoch_steps", sums.epoch_steps, t.steps_per_epoch},
                  {"trained_samples", sums.trained_samples, samples},
                  {"underflow_count", sums.underflow_count, kInt64Max}};
    for (const auto& count : counts)
        if (count.value < 0 || count.value > count.most)
            r.damage("section SUMS", std::string(count.name) + " is " + std::to_string(count.value) +
                                         " after " + std::to_string(c.step) + " steps (epoch " +
                                         std::to_string(c.epoch) + "); it lies between 0 and " +
                                         size_text(count.most));
    if (!std::isfinite(sums.train_seconds) || sums.train_seconds < 0)
        r.damage("section SUMS", "train_seconds is " + shortest_text(sums.train_seconds));
    for (const float scale : {sums.min_scale, sums.max_scale})
        if (!std::isfinite(scale) || !(scale > 0))
            r.damage("section SUMS",
                     "a loss scale of " + shortest_text(scale) + " in min_scale or max_scale");
}

void copy_values(const std::vector<float>& from, Tensor& to) {
    std::copy(from.begin(), from.end(), to.span().begin());
}

}  // namespace

CheckedCheckpoint check_checkpoint(const TrainingCheckpoint& checkpoint, const RestoreTarget& target) {
    const Refusal refusal(checkpoint);
    CheckedCheckpoint checked;
    checked.step = checkpoint.step;
    checked.epoch = checkpoint.epoch;
    checked.batch = checkpoint.batch;
    checked.wall_seconds = checkpoint.wall_seconds;
    refusal.as_damage("its state", [&] { checked.state = decode_checkpoint_state(checkpoint.state); });
    const CheckpointState& s = checked.state;
    check_settings(s, target, refusal);
    checked.trained_data_digest = check_data(s, target, refusal);
    refusal.as_damage("section CONF",
                      [&] { checked.reached = train_config_from_json(s.config, target.config); });
    check_position(checkpoint, s, target, refusal);
    check_weight_sizes(s, target, refusal);
    check_weight_values(s, target, refusal);
    check_buffers(s, target, refusal);
    check_optimizer(checkpoint, s, target, refusal);
    check_scaler(checkpoint, s, refusal);
    check_quantizers(s, target, checked.reached.effective_recipe(), refusal);
    check_rng(s, refusal);
    check_sums(checkpoint, s, target, refusal);
    return checked;
}

void restore_checkpoint(const CheckedCheckpoint& checked, Network& network, LossScaler& scaler) {
    const CheckpointState& s = checked.state;
    const auto params = network.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
        copy_values(s.values[i], params[i]->value);
        if (s.copies[i].empty()) {
            params[i]->compute = Tensor();
        } else {
            params[i]->compute.resize(params[i]->value.shape());
            copy_values(s.copies[i], params[i]->compute);
        }
    }
    const auto buffers = network.buffers();
    for (size_t i = 0; i < buffers.size(); ++i) copy_values(s.buffers[i], *buffers[i]);
    scaler.restore_state(s.scaler);
    network.set_recipe_config(checked.reached.effective_recipe());
    for (const QuantizerCheckpoint& q : s.quantizers)
        network.quantizers(static_cast<size_t>(q.layer), static_cast<size_t>(q.gemm))
            ->slot(static_cast<size_t>(q.slot))
            .load_state(q.state);
}

}  // namespace mpwb
