// Terminal progress.
#include "app/cli/progress_printer.h"

#include "core/train/event_text.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace mpwb::cli {
namespace {

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "--:--";
    const auto s = static_cast<long>(seconds + 0.5);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
    return buf;
}

}  // namespace

ProgressPrinter::ProgressPrinter(std::string label, bool quiet)
    : label_(std::move(label)), quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0) {}

void ProgressPrinter::on_run_start(const RunStartInfo& info) {
    total_steps_ = info.total_steps;
    steps_per_epoch_ = info.steps_per_epoch;
    if (quiet_) return;
    std::fprintf(stderr,
                 "%s: %s on %s, %s, %lld parameters, %lld train / %lld test samples, backend %s (%s)\n",
                 label_.c_str(), info.network.value("name", "network").c_str(), info.dataset.c_str(),
                 info.precision.c_str(), static_cast<long long>(info.parameters),
                 static_cast<long long>(info.train_samples), static_cast<long long>(info.test_samples),
                 info.backend.c_str(), info.device.c_str());
}

void ProgressPrinter::clear_bar() {
    if (bar_shown_) {
        std::fprintf(stderr, "\r\033[K");
        bar_shown_ = false;
    }
}

void ProgressPrinter::on_step(const StepMetrics& m) {
    last_ = m;
    if (std::isfinite(m.loss))
        smoothed_loss_ = smoothed_loss_ < 0 ? m.loss : 0.95 * smoothed_loss_ + 0.05 * m.loss;
    if (quiet_ || !tty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (m.step != total_steps_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const double fraction =
        total_steps_ ? static_cast<double>(m.step) / static_cast<double>(total_steps_) : 0;
    const int width = 24;
    const int filled = static_cast<int>(fraction * width);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    const double eta =
        m.step ? m.wall_time / static_cast<double>(m.step) * static_cast<double>(total_steps_ - m.step) : NAN;
    std::fprintf(stderr, "\r\033[K%s [%s] %3.0f%% step %lld/%lld loss %.4f scale %g %6.0f samples/s ETA %s",
                 label_.c_str(), bar.c_str(), fraction * 100, static_cast<long long>(m.step),
                 static_cast<long long>(total_steps_), smoothed_loss_, m.loss_scale, m.samples_per_second,
                 format_duration(eta).c_str());
    std::fflush(stderr);
    bar_shown_ = true;
}

void ProgressPrinter::on_eval(const EvalMetrics& m) {
    if (quiet_) return;
    clear_bar();
    // A text run reads per token: the loss in nats and bits, the throughput in tokens.
    const bool text = m.test_bits_per_token > 0;
    last_bits_per_token_ = m.test_bits_per_token;
    char bits[48] = "";
    if (text) std::snprintf(bits, sizeof bits, " (%.3f bits/token)", m.test_bits_per_token);
    const double rate = text ? last_.tokens_per_second : last_.samples_per_second;
    std::fprintf(stderr,
                 "%s: epoch %lld step %lld  train loss %.4f acc %.4f | test loss %.4f%s acc %.4f | %.0f "
                 "%s/s | skipped %lld | %s\n",
                 label_.c_str(), static_cast<long long>(m.epoch + 1), static_cast<long long>(m.step),
                 m.train_loss, m.train_accuracy, m.test_loss, bits, m.test_accuracy, rate,
                 text ? "tokens" : "samples", static_cast<long long>(last_.skipped_count),
                 format_duration(m.wall_time).c_str());
}

void ProgressPrinter::on_event(const TrainingEvent& e) {
    if (e.kind == "sample" && !quiet_) {  // what a text run writes, as it writes it
        clear_bar();
        const std::string prompt = e.detail.value("prompt", std::string());
        const std::string written = e.detail.value("text", std::string());
        std::fprintf(stderr, "%s: sample at step %lld:\n%s%s\n", label_.c_str(),
                     static_cast<long long>(e.step), prompt.c_str(), written.c_str());
        return;
    }
    // What a person did or asked for, and how the run was cut and continued; not the scaler's
    // own decisions (too many) nor a failure (on_run_end says it).
    const bool shown = e.source == "user" || e.source == "signal" || e.kind == "resumed_from_checkpoint" ||
                       e.kind == "checkpoints_unavailable";
    if (quiet_ || !shown) return;
    clear_bar();
    const std::string text = event_text(e.kind, e.detail);
    std::fprintf(stderr, "%s: step %lld: %s%s%s\n", label_.c_str(), static_cast<long long>(e.step),
                 e.kind.c_str(), text.empty() ? "" : ": ", text.c_str());
}

void ProgressPrinter::on_run_end(const RunSummary& s) {
    clear_bar();
    if (quiet_) return;
    if (s.status == RunStatus::Failed) {
        std::fprintf(stderr, "%s: failed at step %lld: %s\n", label_.c_str(), static_cast<long long>(s.steps),
                     s.error.c_str());
        return;
    }
    if (last_.tokens_per_second > 0 && last_.samples_per_second > 0) {
        // A text run: per token, its throughput the samples/s times the positions of a window.
        const double context = std::round(last_.tokens_per_second / last_.samples_per_second);
        std::fprintf(stderr,
                     "%s: %s after %lld steps in %s: next-token accuracy %.4f (best %.4f), test loss %.4f "
                     "nats/token (%.3f bits/token), %.0f tokens/s, %lld skipped steps\n",
                     label_.c_str(), run_status_name(s.status), static_cast<long long>(s.steps),
                     format_duration(s.wall_seconds).c_str(), s.test_accuracy, s.best_test_accuracy,
                     s.test_loss, last_bits_per_token_, s.samples_per_second * context,
                     static_cast<long long>(s.skipped_steps));
        return;
    }
    std::fprintf(stderr,
                 "%s: %s after %lld steps in %s: test accuracy %.4f (best %.4f), test loss %.4f, %.0f "
                 "samples/s, %lld skipped steps\n",
                 label_.c_str(), run_status_name(s.status), static_cast<long long>(s.steps),
                 format_duration(s.wall_seconds).c_str(), s.test_accuracy, s.best_test_accuracy, s.test_loss,
                 s.samples_per_second, static_cast<long long>(s.skipped_steps));
}

}  // namespace mpwb::cli
