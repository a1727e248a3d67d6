// RecordedRun (recorded_run.h): the network, trainer, recorder and boundary grid of one stored run.
#include "sessions/recorded_run.h"

#include <exception>

namespace mpwb {

RecordedRun::RecordedRun(const nlohmann::json& network, const Dataset& data, const TrainConfig& config,
                         Backend& backend, std::unique_ptr<RunRecorder> recorder)
    : backend_(backend),
      recorder_(std::move(recorder)),
      network_(Network::from_json(network)),
      trainer_(network_, data, config, backend),
      boundary_sampler_(data, kBoundaryResolution) {}

void RecordedRun::add_observer(TrainingObserver* observer) {
    if (observer) trainer_.add_observer(observer);
}

BoundaryGrid RecordedRun::sample_boundary(std::int64_t step) {
    return boundary_sampler_.sample(network_, backend_, trainer_.policy(), step);
}

std::string RecordedRun::store_final_boundary(const RunSummary& summary,
                                              const std::optional<BoundaryGrid>& final_grid) {
    if (!recorder_ || recorder_->run_id() <= 0 || !has_boundary()) return {};
    if (!final_grid && summary.status == RunStatus::Failed) return {};
    try {
        recorder_->store_boundary(final_grid ? *final_grid : sample_boundary(summary.steps));
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

}  // namespace mpwb
