// The summary figures of a stored run, defined once (see run_figures.h).
#include "sessions/run_figures.h"

#include "core/common/json_input.h"
#include "core/numeric/exponent_histogram.h"
#include "sessions/metric_keys.h"
#include "sessions/run_store.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace mpwb {

namespace {

const LatestMetric* latest(const Run& run, const char* key) {
    const auto it = run.latest.find(key);
    return it == run.latest.end() || it->second.count == 0 ? nullptr : &it->second;
}

std::optional<double> finite(double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; }

// RunSummary::samples_per_second from the run's last "summary" event; nullopt without one.
std::optional<double> summary_throughput(RunStore& store, const Run& run) {
    const auto events = store.events(run.id, metric_key::summary_event);
    if (events.empty()) return std::nullopt;
    try {
        const auto j = parse_json_text(events.back().json, "summary of run " + std::to_string(run.id));
        const auto it = j.find(metric_key::samples_per_second);
        if (it != j.end() && it->is_number() && it->get<double>() > 0) return it->get<double>();
    } catch (const JsonInputError&) {
        // A damaged summary: the series give the same figure.
    }
    return std::nullopt;
}

// The same ratio from the per-step series: each step's samples are its samples/s times its
// seconds, so the sums give samples trained over training seconds.
std::optional<double> series_throughput(RunStore& store, const Run& run) {
    if (!latest(run, metric_key::step_seconds) || !latest(run, metric_key::samples_per_second))
        return std::nullopt;
    const auto seconds = store.series(run.id, metric_key::step_seconds);
    const auto rates = store.series(run.id, metric_key::samples_per_second);
    double samples = 0, total_seconds = 0;
    std::size_t r = 0;
    for (const MetricPoint& s : seconds) {
        while (r < rates.size() && rates[r].step < s.step) ++r;
        if (r == rates.size() || rates[r].step != s.step) continue;
        if (!std::isfinite(s.value) || !std::isfinite(rates[r].value)) continue;
        samples += rates[r].value * s.value;
        total_seconds += s.value;
    }
    if (!(total_seconds > 0)) return std::nullopt;
    return samples / total_seconds;
}

std::optional<double> mean_underflow(RunStore& store, const Run& run, Format format) {
    double sum = 0;
    int n = 0;
    for (const Histogram& h : store.histograms(run.id, {}, {}, {}, metric_key::activation_grad)) {
        try {
            const ExponentHistogram eh = ExponentHistogram::from_blob(h.blob);
            if (eh.total() == 0) continue;
            sum += range_stats(eh, format).underflow_fraction;
            ++n;
        } catch (const std::exception&) {
            // A damaged blob is left out of the mean rather than failing the whole summary.
        }
    }
    if (n == 0) return std::nullopt;
    return sum / n;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

}  // namespace

std::optional<double> run_duration(const Run& run) {
    if (!run.started) return std::nullopt;
    const double end =
        run.ended ? *run.ended : (run.status == RunStatus::Running ? store_now() : *run.started);
    return end - *run.started;
}

std::optional<double> training_throughput(RunStore& store, const Run& run) {
    if (auto v = summary_throughput(store, run)) return v;
    return series_throughput(store, run);
}

RunFigures list_figures(RunStore& store, const Run& run) {
    RunFigures f;
    for (const auto& [key, m] : run.latest) f.steps = std::max(f.steps, m.step);
    if (const LatestMetric* acc = latest(run, metric_key::test_accuracy)) {
        f.final_test_accuracy = finite(acc->value);
        f.best_test_accuracy = finite(acc->max);
    }
    if (const LatestMetric* loss = latest(run, metric_key::test_loss)) f.final_test_loss = loss->value;
    f.samples_per_second = training_throughput(store, run);
    if (const LatestMetric* m = latest(run, metric_key::skipped_count))
        f.skipped_steps = static_cast<std::int64_t>(m->max);
    if (const LatestMetric* m = latest(run, metric_key::overflow_count))
        f.overflow_count = static_cast<std::int64_t>(m->max);
    if (const LatestMetric* m = latest(run, metric_key::loss_scale))
        f.loss_scale = ScaleRange{m->min, m->max};
    f.underflow_format = gradient_reference_format(run.precision);
    f.duration_seconds = run_duration(run);
    f.text = text_run_figures(run, f.samples_per_second);
    return f;
}

RunFigures run_figures(RunStore& store, const Run& run) {
    RunFigures f = list_figures(store, run);
    f.mean_activation_underflow = mean_underflow(store, run, f.underflow_format);
    return f;
}

std::optional<TextRunFigures> text_run_figures(const Run& run, std::optional<double> samples_per_second) {
    nlohmann::json dataset;
    try {
        const auto config =
            parse_json_text(run.config_json, "configuration of run " + std::to_string(run.id));
        if (!config.is_object() || !config.contains("dataset") || !config["dataset"].is_object())
            return std::nullopt;
        dataset = config["dataset"];
    } catch (const JsonInputError&) {
        return std::nullopt;  // runs show and the report name a damaged configuration themselves
    }
    const auto kind = dataset.find("kind");
    if (kind == dataset.end() || !kind->is_string() || (*kind != "text" && *kind != "fortunes"))
        return std::nullopt;
    TextRunFigures text;
    const auto tokenizer = dataset.find("tokenizer");
    if (tokenizer != dataset.end() && *tokenizer == "byte") text.unit = "byte";
    const auto context = dataset.find("context");
    if (context != dataset.end() && context->is_number_integer() && context->get<std::int64_t>() > 0)
        text.context = context->get<std::int64_t>();
    if (const LatestMetric* bits = latest(run, metric_key::test_bits_per_token))
        text.final_test_bits_per_token = finite(bits->value);
    if (samples_per_second && text.context > 0)
        text.tokens_per_second = *samples_per_second * static_cast<double>(text.context);
    return text;
}

std::optional<TargetReach> time_to_accuracy(RunStore& store, const Run& run, double target) {
    const double t0 = run.started.value_or(run.created);
    for (const MetricPoint& p : store.series(run.id, metric_key::test_accuracy))
        if (std::isfinite(p.value) && p.value >= target)
            return TargetReach{p.step, std::max(0.0, p.wall_time - t0)};
    return std::nullopt;
}

std::optional<std::size_t> fp32_reference(const std::vector<RunThroughput>& runs) {
    for (std::size_t i = 0; i < runs.size(); ++i)
        if (lower(runs[i].precision) == "fp32" && runs[i].samples_per_second) return i;
    return std::nullopt;
}

std::vector<std::optional<double>> speedups_over_fp32(const std::vector<RunThroughput>& runs) {
    std::vector<std::optional<double>> out(runs.size());
    const auto reference = fp32_reference(runs);
    if (!reference) return out;
    const double base = *runs[*reference].samples_per_second;
    if (!(base > 0)) return out;
    for (std::size_t i = 0; i < runs.size(); ++i)
        if (runs[i].samples_per_second) out[i] = *runs[i].samples_per_second / base;
    return out;
}

std::vector<std::optional<double>> speedups_over_fp32(const std::vector<Run>& runs,
                                                      const std::vector<RunFigures>& figures) {
    std::vector<RunThroughput> throughputs;
    for (std::size_t i = 0; i < runs.size() && i < figures.size(); ++i)
        throughputs.push_back({runs[i].precision, figures[i].samples_per_second});
    auto out = speedups_over_fp32(throughputs);
    out.resize(figures.size());
    return out;
}

Format gradient_reference_format(const std::string& precision) {
    if (lower(precision).rfind("bf16", 0) == 0) return Format::BF16;
    return Format::FP16;  // FP16 policies, and FP32/TF32: what FP16 storage would lose
}

std::string power_of_two_text(double value) {
    char buf[64];
    if (value > 0 && std::isfinite(value)) {
        const double k = std::log2(value);
        if (std::abs(k - std::round(k)) < 1e-9) {
            std::snprintf(buf, sizeof buf, "2^%ld", std::lround(k));
            return buf;
        }
    }
    std::snprintf(buf, sizeof buf, "%.4g", value);
    return buf;
}

std::string scale_range_text(const ScaleRange& range) {
    if (range.min == range.max) return power_of_two_text(range.min);
    return power_of_two_text(range.min) + " … " + power_of_two_text(range.max);
}

std::string accuracy_name(const RunFigures& figures) {
    return figures.text ? "next-token accuracy" : "test accuracy";
}

std::string bits_unit_text(const TextRunFigures& text) { return "bits/" + text.unit; }

std::string test_loss_text(const RunFigures& figures) {
    if (!figures.final_test_loss || !std::isfinite(*figures.final_test_loss)) {
        if (figures.final_test_loss) return shortest_text(*figures.final_test_loss);
        return "-";
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.4g", *figures.final_test_loss);
    std::string out = buf;
    if (!figures.text) return out;
    out += " nats/token";
    if (figures.text->final_test_bits_per_token) {
        std::snprintf(buf, sizeof buf, " (%.4g %s)", *figures.text->final_test_bits_per_token,
                      bits_unit_text(*figures.text).c_str());
        out += buf;
    }
    return out;
}

std::string throughput_text(const RunFigures& figures) {
    if (figures.text) {
        if (!figures.text->tokens_per_second) return "-";
        return samples_per_second_text(*figures.text->tokens_per_second) + " tokens/s";
    }
    if (!figures.samples_per_second) return "-";
    return samples_per_second_text(*figures.samples_per_second) + " samples/s";
}

std::string speedup_text(double speedup) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f×", speedup);
    return buf;
}

}  // namespace mpwb
