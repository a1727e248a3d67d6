// HparamAxis: one vertical axis of the hyperparameter view's parallel-coordinates plot, built
// from the values the compared runs have for one setting (JSON text, as RunStore::config_diff
// gives them) or for one summary figure. It decides how the values are laid out from 0 (bottom)
// to 1 (top): settings whose values are all numbers are scaled linearly, or logarithmically
// when they span a decade or more (learning rates); anything else (precisions, optimizers,
// a setting some runs lack) is a category, the categories evenly spaced in sorted order.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mpwb {

struct HparamAxisTick {
    double position = 0;  // 0 = bottom of the axis, 1 = top
    std::string label;
};

class HparamAxis {
public:
    enum class Scale { Categorical, Linear, Log };

    // `values`: one per run, nullopt where the run has none (a setting it lacks, a figure it
    // never measured). Settings arrive as JSON text; figures as plain numbers.
    static HparamAxis from_json_values(std::string name,
                                       const std::vector<std::optional<std::string>>& values);
    // `text` writes a figure's values and ticks as the table does ("73.50%"); null: plain numbers.
    static HparamAxis from_numbers(std::string name, const std::vector<std::optional<double>>& values,
                                   std::string (*text)(double) = nullptr);

    const std::string& name() const { return name_; }
    Scale scale() const { return scale_; }
    // Where run `run` sits on the axis, in [0, 1]; nullopt when it has no value on a numeric axis.
    std::optional<double> position(std::size_t run) const { return positions_.at(run); }
    const std::vector<HparamAxisTick>& ticks() const { return ticks_; }
    // The value of run `run` as the table shows it ("0.01", "fp16-mixed", "—" when missing).
    const std::string& label(std::size_t run) const { return labels_.at(run); }
    std::size_t run_count() const { return positions_.size(); }
    // For a numeric axis: the value at `position` (inverse of the layout); NaN for categories.
    double value_at(double position) const;

private:
    void lay_out_numbers(const std::vector<std::optional<double>>& numbers, std::string (*text)(double));
    void lay_out_categories(const std::vector<std::string>& texts);
    double to_unit(double value) const;

    std::string name_;
    Scale scale_ = Scale::Categorical;
    double lo_ = 0, hi_ = 0;  // numeric range (log10 of it for Log)
    std::vector<std::optional<double>> positions_;
    std::vector<std::string> labels_;
    std::vector<HparamAxisTick> ticks_;
};

// A number as short as it reads back: a setting stored from a float (lr 0.3f is
// 0.30000001192092896 as a double) shows as the float it was.
std::string hparam_number_text(double value);
// The display text of a JSON value: strings without their quotes, "—" for nullopt.
std::string hparam_value_text(const std::optional<std::string>& json_text);
// The number a JSON value holds; nullopt for strings, booleans, objects, missing values.
std::optional<double> hparam_value_number(const std::optional<std::string>& json_text);

}  // namespace mpwb
