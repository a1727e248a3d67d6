// Internal to mpwb_report: the sections of a report that describe each run beyond its curves:
// the network architecture (layer table per distinct network), the full configuration, the
// events, the gradient-exponent histograms of every layer as small multiples and the stored
// decision boundary of 2-D runs. Collected from the run store (read-only) into ReportContent.
#pragma once
#include "app/report/report_html.h"
#include "sessions/run_store.h"

#include "core/data/dataset.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpwb::report_detail {

// Each run's dataset, loaded once per distinct dataset setting (the layer tables need its input
// shape, the decision boundary its points).
class DatasetCache {
public:
    // nullptr with *error set when the run's configuration or data cannot be read.
    const Dataset* get(const Run& run, QString* error);

private:
    std::map<std::string, std::optional<Dataset>> loaded_;
    std::map<std::string, QString> errors_;
};

inline constexpr std::size_t kMaxEventsPerRun = 25;  // then "… and N more"

// One table per distinct (network description, input shape); runs sharing one are listed on it.
std::vector<Architecture> architectures(const std::vector<RunRow>& rows, DatasetCache& data);
// Every flattened setting of every run's TrainConfig (values "(absent)" where a run lacks it).
std::vector<ConfigDiffEntry> full_config(const std::vector<RunRow>& rows);
std::vector<RunEvents> run_events(RunStore& store, const std::vector<RunRow>& rows);
// cell_width x cell_height CSS pixels per small plot.
std::vector<HistogramGrid> gradient_grids(RunStore& store, const std::vector<RunRow>& rows, int cell_width,
                                          int cell_height);
// The runs on 2-D classification data that stored a decision boundary (none for the others).
std::vector<Figure> boundary_figures(RunStore& store, const std::vector<RunRow>& rows, DatasetCache& data,
                                     int size);

inline constexpr std::size_t kMaxTextSamplesPerRun = 3;  // the first and the last two
inline constexpr std::size_t kTestWindowsPerRun = 3;     // the first, the middle and the last
// The stored "sample" events of every text run (none for the other runs), and a few of its test
// windows with its final weights' next-token predictions.
std::vector<TextSamples> text_samples(RunStore& store, const std::vector<RunRow>& rows, DatasetCache& data);

// A stored JSON value as people read it: strings without quotes, floats stored as doubles in
// their shortest float form (0.01, not 0.009999999776482582).
QString setting_text(const std::string& json_value);

}  // namespace mpwb::report_detail
