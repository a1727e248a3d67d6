// Progress of a run on the terminal: a bar with an ETA redrawn at most 10 times a second when
// stderr is a terminal, one plain line per evaluation otherwise (logs, CI).
#pragma once
#include <chrono>
#include <string>

#include "core/train/observer.h"

namespace mpwb::cli {

class ProgressPrinter final : public TrainingObserver {
public:
    explicit ProgressPrinter(std::string label, bool quiet = false);
    void on_run_start(const RunStartInfo& info) override;
    void on_step(const StepMetrics& m) override;
    void on_eval(const EvalMetrics& m) override;
    void on_event(const TrainingEvent& e) override;
    void on_run_end(const RunSummary& s) override;

private:
    void clear_bar();
    std::string label_;
    bool quiet_;
    bool tty_;
    bool bar_shown_ = false;
    int64_t total_steps_ = 0, steps_per_epoch_ = 0;
    StepMetrics last_{};
    double last_bits_per_token_ = 0;  // a text run's last evaluation
    std::chrono::steady_clock::time_point last_draw_{};
    double smoothed_loss_ = -1;
};

}  // namespace mpwb::cli
