// HparamData: loading a run set's differing settings and figures (see hparam_data.h).
#include "widgets/hparam_data.h"

#include <nlohmann/json.hpp>

#include "core/common/text_format.h"
#include "sessions/run_store.h"

namespace mpwb {

const std::vector<HparamFigure>& hparam_figures() {
    static const std::vector<HparamFigure> figures = {
        {"Final test acc", [](const RunFigures& f) { return f.final_test_accuracy; },
         [](double v) { return percent_text(v); }, true},
        {"Best test acc", [](const RunFigures& f) { return f.best_test_accuracy; },
         [](double v) { return percent_text(v); }, true},
        {"Final test loss", [](const RunFigures& f) { return f.final_test_loss; },
         [](double v) { return shortest_text(float(v)); }, false},
        {"Skipped steps",
         [](const RunFigures& f) {
             return f.steps > 0 ? std::optional<double>(double(f.skipped_steps)) : std::nullopt;
         },
         [](double v) { return std::to_string(std::int64_t(v)); }, false},
        {"Samples/s", [](const RunFigures& f) { return f.samples_per_second; },
         [](double v) { return samples_per_second_text(v); }, true},
    };
    return figures;
}

HparamData load_hparam_data(RunStore& store, const std::vector<std::int64_t>& run_ids) {
    HparamData data;
    for (std::int64_t id : run_ids) {
        const Run run = store.get_run(id);
        data.runs.push_back({run.id, run.name, run.status, list_figures(store, run)});
    }
    if (run_ids.size() > 1) data.settings = store.config_diff(run_ids);
    return data;
}

HparamData load_sweep_hparam_data(RunStore& store, std::int64_t sweep_id) {
    const SweepRecord sweep = store.get_sweep(sweep_id);
    std::vector<std::int64_t> ids;
    for (const auto& member : sweep.runs) ids.push_back(member.run_id);
    HparamData data = load_hparam_data(store, ids);
    data.sweep_id = sweep_id;
    const auto spec = nlohmann::json::parse(sweep.spec_json, nullptr, false);
    if (spec.is_object() && spec.contains("axes") && spec["axes"].is_array())
        for (const auto& axis : spec["axes"])
            if (axis.is_object() && axis.contains("setting") && axis["setting"].is_string())
                data.swept.push_back(axis["setting"].get<std::string>());
    return data;
}

}  // namespace mpwb
