// HparamAxis: the layout of one parallel-coordinates axis (see hparam_axis.h).
#include "widgets/hparam_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "core/common/text_format.h"

namespace mpwb {

namespace {

constexpr char kMissing[] = "—";
// Distinct values up to this many are ticked one by one; more get evenly spaced ticks.
constexpr std::size_t kMaxValueTicks = 7;
// Positive values whose largest is at least this multiple of the smallest go on a log scale.
constexpr double kLogSpan = 10.0;

}  // namespace

std::string hparam_number_text(double value) {
    const float narrow = float(value);
    return double(narrow) == value ? shortest_text(narrow) : shortest_text(value);
}

std::string hparam_value_text(const std::optional<std::string>& json_text) {
    if (!json_text) return kMissing;
    const auto j = nlohmann::json::parse(*json_text, nullptr, false);
    if (j.is_string()) return j.get<std::string>();
    if (j.is_number()) return hparam_number_text(j.get<double>());
    return *json_text;
}

std::optional<double> hparam_value_number(const std::optional<std::string>& json_text) {
    if (!json_text) return std::nullopt;
    const auto j = nlohmann::json::parse(*json_text, nullptr, false);
    if (!j.is_number()) return std::nullopt;
    return j.get<double>();
}

HparamAxis HparamAxis::from_json_values(std::string name,
                                        const std::vector<std::optional<std::string>>& values) {
    HparamAxis axis;
    axis.name_ = std::move(name);
    std::vector<std::optional<double>> numbers;
    bool all_numbers = true;
    for (const auto& v : values) {
        numbers.push_back(hparam_value_number(v));
        all_numbers = all_numbers && numbers.back().has_value();
    }
    if (all_numbers && !values.empty()) {
        axis.lay_out_numbers(numbers, nullptr);
    } else {
        std::vector<std::string> texts;
        for (const auto& v : values) texts.push_back(hparam_value_text(v));
        axis.lay_out_categories(texts);
    }
    return axis;
}

HparamAxis HparamAxis::from_numbers(std::string name, const std::vector<std::optional<double>>& values,
                                    std::string (*text)(double)) {
    HparamAxis axis;
    axis.name_ = std::move(name);
    axis.lay_out_numbers(values, text);
    return axis;
}

void HparamAxis::lay_out_categories(const std::vector<std::string>& texts) {
    scale_ = Scale::Categorical;
    const std::set<std::string> sorted(texts.begin(), texts.end());
    const std::vector<std::string> categories(sorted.begin(), sorted.end());
    auto place = [&](std::size_t i) {
        return categories.size() == 1 ? 0.5 : double(i) / double(categories.size() - 1);
    };
    for (std::size_t i = 0; i < categories.size(); ++i) ticks_.push_back({place(i), categories[i]});
    for (const auto& t : texts) {
        const auto at =
            std::size_t(std::lower_bound(categories.begin(), categories.end(), t) - categories.begin());
        positions_.push_back(place(at));
        labels_.push_back(t);
    }
}

void HparamAxis::lay_out_numbers(const std::vector<std::optional<double>>& numbers,
                                 std::string (*text)(double)) {
    std::set<double> distinct;
    for (const auto& v : numbers)
        if (v && std::isfinite(*v)) distinct.insert(*v);
    const double lo = distinct.empty() ? 0 : *distinct.begin();
    const double hi = distinct.empty() ? 0 : *distinct.rbegin();
    scale_ = lo > 0 && hi / lo >= kLogSpan ? Scale::Log : Scale::Linear;
    lo_ = scale_ == Scale::Log ? std::log10(lo) : lo;
    hi_ = scale_ == Scale::Log ? std::log10(hi) : hi;
    for (const auto& v : numbers) {
        const bool usable = v && std::isfinite(*v);
        positions_.push_back(usable ? std::optional<double>(to_unit(*v)) : std::nullopt);
        labels_.push_back(!v ? std::string(kMissing) : text ? text(*v) : hparam_number_text(*v));
    }
    if (distinct.size() <= kMaxValueTicks) {
        for (double v : distinct) ticks_.push_back({to_unit(v), text ? text(v) : hparam_number_text(v)});
        return;
    }
    for (int i = 0; i <= 4; ++i) {
        // Evenly spaced ticks fall between the values: three significant digits say enough.
        const double v = value_at(i / 4.0);
        char plain[32];
        std::snprintf(plain, sizeof plain, "%.3g", v);
        ticks_.push_back({i / 4.0, text ? text(v) : std::string(plain)});
    }
}

double HparamAxis::to_unit(double value) const {
    const double x = scale_ == Scale::Log ? std::log10(value) : value;
    if (!(hi_ > lo_)) return 0.5;
    return std::clamp((x - lo_) / (hi_ - lo_), 0.0, 1.0);
}

double HparamAxis::value_at(double position) const {
    if (scale_ == Scale::Categorical) return std::nan("");
    const double x = lo_ + position * (hi_ - lo_);
    return scale_ == Scale::Log ? std::pow(10.0, x) : x;
}

}  // namespace mpwb
