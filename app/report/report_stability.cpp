// The Stability section of a report (see report_stability.h).
#include "app/report/report_stability.h"

#include "app/report/report_scaling.h"  // render_plot
#include "widgets/plots/plot_widget.h"
#include "widgets/plots/stability_plots.h"
#include "widgets/plots/stability_view.h"

#include <map>

namespace mpwb::report_detail {

namespace {

constexpr int kMaxStabilityPoints = 2000;

}  // namespace

StabilitySection stability_section(RunStore& store, const std::vector<RunRow>& rows, int width, int height) {
    StabilitySection section;
    StabilityView view;
    view.resize(width, height * 3);
    for (const RunRow& row : rows) {
        const auto latest = latest_stability(row.run);
        if (latest.empty()) continue;
        const int index = view.addRun(row.label);
        view.setStoredSeries(index, read_stability_series(store, row.run, kMaxStabilityPoints));
        section.latest.push_back({row.label, latest});
    }
    if (section.latest.empty()) return section;
    view.refresh(true);
    for (size_t i = 0; i < view.plotCount(); ++i) {
        PlotWidget* plot = view.plot(i);
        if (plot->graphCount() == 0) continue;
        plot->setBackground(Qt::white);
        // The figure's own title says what the plot shows; the view's title row would repeat it.
        if (auto* title = plot->plotLayout()->element(0, 0)) {
            plot->plotLayout()->remove(title);
            plot->plotLayout()->simplify();
        }
        section.figures.push_back(
            render_plot(plot, QString::fromUtf8(kStabilityPlots[i].title),
                        QStringLiteral("One line per run and block, over the statistics "
                                       "steps."),
                        width, height));
    }
    return section;
}

extern const QString kStabilityNote = QStringLiteral(
    "Instability indicators (Wortsman et al., arXiv 2309.14322) on the statistics steps: per transformer "
    "block the largest attention logit (scaled scores over unmasked positions), the attention entropy "
    "(each head's mean row entropy in nats; mean and minimum over heads), the residual stream's RMS at the "
    "block's output and its outlier ratio (largest over median per-channel RMS); for the output, the "
    "largest logit and the mean log Z of the loss's softmax rows. The table holds each run's last values.");

Table stability_table(const StabilitySection& section) {
    namespace key = metric_key;
    const char* const columns[] = {key::attn_logit_max, key::attn_entropy_mean, key::attn_entropy_min,
                                   key::residual_rms,   key::outlier_ratio,     key::logit_max,
                                   key::log_z_mean};
    Table t;
    t.header << QStringLiteral("Run") << QStringLiteral("Source") << QStringLiteral("Step")
             << QStringLiteral("Max attn logit") << QStringLiteral("Entropy mean")
             << QStringLiteral("Entropy min") << QStringLiteral("Residual RMS")
             << QStringLiteral("Outlier ratio") << QStringLiteral("Max output logit")
             << QStringLiteral("Mean log Z");
    t.widths = {14, 14, 6, 9, 9, 9, 9, 9, 11, 10};
    for (const auto& [label, latest] : section.latest) {
        // One row per source (block or output), in the order latest_stability gives them.
        std::vector<std::pair<std::string, std::map<std::string, const StabilityLatest*>>> sources;
        for (const StabilityLatest& l : latest) {
            if (sources.empty() || sources.back().first != l.source) sources.push_back({l.source, {}});
            sources.back().second[l.indicator] = &l;
        }
        for (const auto& [source, values] : sources) {
            QStringList row;
            row << html_escape(label) << html_escape(QString::fromStdString(source))
                << QString::number(values.begin()->second->step);
            for (const char* c : columns) {
                const auto it = values.find(c);
                row << (it == values.end() ? QStringLiteral("–")
                                           : QString::number(it->second->value, 'g', 4));
            }
            t.rows << row;
        }
    }
    return t;
}

}  // namespace mpwb::report_detail
