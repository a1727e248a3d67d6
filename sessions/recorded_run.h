// RecordedRun: the one recipe for a run that goes into the run store, shared by `mpwb-cli train`,
// `mpwb-cli compare` and the workbench's TrainingController: the network built from its
// description, a Trainer on the caller's dataset and backend, the run recorder (none when not
// recording), and after the run the final weights' decision boundary stored with the run on 2-D
// classification sets, at one grid size, so a run looks the same whichever program trained it.
// The dataset and the backend stay the caller's: a comparison shares both between its runs.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/train/decision_boundary.h"
#include "core/train/trainer.h"
#include "sessions/run_recorder.h"

namespace mpwb {

// Decision-boundary grid cells per side, drawn live by the workbench and stored with every run.
inline constexpr int kBoundaryResolution = 80;

class RecordedRun {
public:
    // Throws what Network::from_json and the Trainer throw (a bad description, a bad config).
    // `data` and `backend` must outlive this object; `recorder` may be null.
    RecordedRun(const nlohmann::json& network, const Dataset& data, const TrainConfig& config,
                Backend& backend, std::unique_ptr<RunRecorder> recorder);
    RecordedRun(const RecordedRun&) = delete;
    RecordedRun& operator=(const RecordedRun&) = delete;

    Network& network() { return network_; }
    Trainer& trainer() { return trainer_; }
    // Null when the run is not recorded.
    RunRecorder* recorder() const { return recorder_.get(); }
    // The run store's id once the run started recording; 0 before, and when not recording.
    std::int64_t run_id() const { return recorder_ ? recorder_->run_id() : 0; }
    // False off 2-D classification sets: there is no decision boundary to draw or store.
    bool has_boundary() const { return boundary_sampler_.applies(); }
    // The current weights' grid at kBoundaryResolution, between two steps or after the run (only
    // when has_boundary()). Throws what the network's forward throws.
    BoundaryGrid sample_boundary(std::int64_t step);

    // Observers are told in the order they are added; a null one (say, recorder() when not
    // recording) is skipped. The recorder must come before any observer that reads run_id().
    void add_observer(TrainingObserver* observer);

    // After the run: stores the final weights' decision boundary with the run. `final_grid` is
    // one the caller already sampled from the final weights (the workbench's last drawn one);
    // without it one is sampled now, unless the run failed. Nothing when not recording, off 2-D
    // sets, or before a run row exists. Returns why the store refused, or "" when nothing went wrong.
    std::string store_final_boundary(const RunSummary& summary,
                                     const std::optional<BoundaryGrid>& final_grid = std::nullopt);

private:
    Backend& backend_;
    std::unique_ptr<RunRecorder> recorder_;
    Network network_;
    Trainer trainer_;
    BoundarySampler boundary_sampler_;
};

}  // namespace mpwb
