// event_text: a sentence per event kind; unknown kinds and extra fields fall back to key=value.
#include "core/train/event_text.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "core/common/text_format.h"
#include "core/precision/scaler_event.h"

namespace mpwb {
namespace {

std::string value_text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return shortest_text(v.get<double>());
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    if (v.is_object() && v.contains("from") && v.contains("to"))
        return value_text(v["from"]) + " → " + value_text(v["to"]);
    return v.dump();
}

double get(const nlohmann::json& d, const char* key, double fallback = std::nan("")) {
    const auto it = d.find(key);
    return it != d.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string text(const nlohmann::json& d, const char* key) {
    const auto it = d.find(key);
    return it != d.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Text on one line for a list row: newlines become ⏎, tabs a space.
std::string one_line(const std::string& text) {
    std::string s;
    for (const char c : text)
        s += c == '\n' ? std::string("⏎") : c == '\t' ? std::string(" ") : std::string(1, c);
    return s;
}

bool flag(const nlohmann::json& d, const char* key) {
    const auto it = d.find(key);
    return it != d.end() && it->is_boolean() && it->get<bool>();
}

std::string in_layer(const nlohmann::json& d) {
    const std::string layer = text(d, "layer");
    return layer.empty() ? std::string() : ", overflow in " + layer;
}

std::string note(const nlohmann::json& d) {
    const std::string n = text(d, "note");
    return n.empty() ? std::string() : " (" + n + ")";
}

}  // namespace

std::string scale_text(double scale) {
    if (scale > 0 && std::isfinite(scale)) {
        int e = 0;
        const double m = std::frexp(scale, &e);
        if (m == 0.5) return "2^" + std::to_string(e - 1);
    }
    return shortest_text(scale);
}

namespace {

// Trainer::write_text_sample's events: one line, newlines shown as ⏎.
std::optional<std::string> sample_event_text(const std::string& kind, const nlohmann::json& d) {
    if (kind == "sample")
        return "sample at T=" + shortest_text(get(d, "temperature", 0)) + ": " +
               one_line(text(d, "prompt") + text(d, "text"));
    if (kind == "sample_failed") return "no sample: " + text(d, "error");
    return std::nullopt;
}

}  // namespace

std::string event_text(const std::string& kind, const nlohmann::json& detail) {
    namespace k = scaler_event_kind;
    const nlohmann::json& d = detail.is_object() ? detail : nlohmann::json::object();
    if (kind == k::backoff)
        return "scale " + scale_text(get(d, "from")) + " → " + scale_text(get(d, "to")) +
               (flag(d, "clamped_at_min") ? " (clamped at min_scale)" : "") + in_layer(d);
    if (kind == k::growth)
        return "scale " + scale_text(get(d, "from")) + " → " + scale_text(get(d, "to")) +
               (flag(d, "clamped_at_max") ? " (clamped at max_scale)" : "");
    if (kind == k::overflow_skip) {
        std::string s = "step skipped at scale " + scale_text(get(d, "scale_used")) + in_layer(d) +
                        "; next scale " + scale_text(get(d, "next_scale"));
        if (get(d, "retries", 0) > 0) s += " after " + shortest_text(get(d, "retries")) + " retries";
        if (flag(d, "at_min")) s += " (scale at its minimum)";
        return s;
    }
    if (kind == k::retry)
        return "retry " + shortest_text(get(d, "retry")) + " of " + shortest_text(get(d, "max_retries")) +
               ": overflow at scale " + scale_text(get(d, "scale_used")) + in_layer(d) + ", again at " +
               scale_text(get(d, "next_scale"));
    if (kind == k::hysteresis_consumed)
        return "overflow tolerated at scale " + scale_text(get(d, "scale")) +
               " (hysteresis: " + shortest_text(get(d, "overflows_still_tolerated")) +
               " more before a backoff)" + in_layer(d);
    if (kind == k::scale_at_min) return "scale at its minimum " + scale_text(get(d, "scale")) + note(d);
    if (kind == k::scale_at_max) return "scale at its maximum " + scale_text(get(d, "scale")) + note(d);
    if (kind == k::user_set_scale)
        return "scale set to " + scale_text(get(d, "requested")) + ": " + scale_text(get(d, "scale_before")) +
               " → " + scale_text(get(d, "scale_after")) + note(d);
    if (kind == k::config_changed) {
        std::string s = "scaler settings:";
        bool first = true;
        if (const auto it = d.find("changes"); it != d.end() && it->is_object())
            for (const auto& [key, change] : it->items()) {
                s += (first ? " " : "; ") + key + " " + value_text(change);
                first = false;
            }
        if (first) s += " unchanged";
        const double before = get(d, "scale_before"), after = get(d, "scale_after");
        if (before != after) s += "; scale " + scale_text(before) + " → " + scale_text(after);
        return s;
    }
    if (kind == "recipe_changed") {  // Trainer::request_recipe_config: {"field": {"from", "to"}}
        std::string s = "recipe settings:";
        for (const auto& [key, change] : d.items())
            s += (s.back() == ':' ? " " : "; ") + key + " " + value_text(change);
        return s.back() == ':' ? s + " unchanged" : s;
    }
    if (kind == "lr_changed")
        return "learning rate " + shortest_text(get(d, "from")) + " → " + shortest_text(get(d, "to"));
    if (kind == "failed") return text(d, "error");
    if (kind == "interrupted")  // Trainer::checkpoint_and_stop (SIGTERM)
        return "checkpoint at step " + shortest_text(get(d, "checkpoint_step", 0)) + "; resumable";
    if (kind == "resumed_from_checkpoint")
        return "resumed from the checkpoint at step " + shortest_text(get(d, "step", 0)) + " (epoch " +
               shortest_text(get(d, "epoch", 0) + 1) + ", batch " + shortest_text(get(d, "batch", 0) + 1) +
               ")";
    if (kind == "data_changed") {  // Trainer::resume_from with allow_changed_data
        const std::string path = text(d, "path");
        return "the data changed since the run trained on it: dataset '" + text(d, "dataset") + "'" +
               (path.empty() ? "" : " (" + path + ")") + " now has digest " + text(d, "digest") +
               ", the run trained on data with digest " + text(d, "trained_digest") +
               "; continued on the new data";
    }
    if (auto sample = sample_event_text(kind, d)) return *sample;
    if (kind == "checkpoints_unavailable")
        return "no checkpoints: the " + text(d, "engine") + " engine cannot save its state";
    if (kind == "summary") {
        std::string s = text(d, "status") + " after " + shortest_text(get(d, "steps", 0)) +
                        " steps, test accuracy " + percent_text(get(d, "test_accuracy", 0)) + ", " +
                        samples_per_second_text(get(d, "samples_per_second", 0)) + " samples/s";
        if (get(d, "skipped_steps", 0) > 0) s += ", " + shortest_text(get(d, "skipped_steps")) + " skipped";
        if (!text(d, "error").empty()) s += ": " + text(d, "error");
        return s;
    }
    // Anything else: its fields as key=value (an empty detail reads as nothing).
    std::string s;
    for (const auto& [key, v] : d.items()) s += (s.empty() ? "" : ", ") + key + "=" + value_text(v);
    return s;
}

}  // namespace mpwb
