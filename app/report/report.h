// Comparison reports: any set of stored runs as one self-contained HTML file (inline CSS, plots
// embedded as data: URIs, no external URL) and/or an A4 PDF, plus the series as CSV beside the
// output. Content: the runs with their tags and notes, configuration differences, a summary table
// (final/best test accuracy, time to a target accuracy, throughput and speed-up over FP32,
// skipped steps, loss-scale range, mean underflow fraction), plots (loss, accuracy, throughput,
// loss scale with overflows, the stored decision boundary of 2-D runs, every layer's gradient
// exponent histograms against the format zones as small multiples), the network architecture
// (a layer table per distinct network), the events, the full configuration and the machine and
// library versions of each run.
// Plots are QWidgets rendered offscreen, so a QApplication must exist (run_report_command
// creates one with the offscreen platform when there is none).
#pragma once
#include "core/common/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpwb {

class ReportError : public Error {
    using Error::Error;
};

struct ReportRequest {
    std::string database;               // empty: default_database_path()
    std::vector<std::int64_t> run_ids;  // in the order the report lists them
    // .html or .pdf. The CSV of every series goes beside it as <stem>.csv.
    std::string output;
    // More outputs of the same report (e.g. the PDF when output is the HTML file).
    std::vector<std::string> extra_outputs;
    // Test accuracy whose first reach is timed; 0: 95% of the best final test accuracy.
    double target_accuracy = 0;
    std::string title;  // empty: "Run comparison: <names>"
    // EMA display smoothing of the training curves, alpha in [0, 1) as the workbench's smoothing
    // slider (0: not smoothed). The raw curve is drawn faded behind; the report states the value.
    double smoothing = 0;
};

// Writes the report; returns the files written (outputs and CSV). Throws ReportError with a
// message naming the problem: empty selection, unknown run id, unknown suffix, unwritable path,
// database that cannot be opened, smoothing outside [0, 1).
std::vector<std::string> write_report(const ReportRequest& request);

// `report --runs 3,4 --out report.html [--out report.pdf] [--db PATH] [--target-accuracy X]
//  [--title T] [--smoothing ALPHA]`. argv may start with the program name and "report" (as `mpwb report ...`
// passes them) or with the program name only. Prints the files written; errors go to stderr
// with exit status 1 (2 for a bad command line). Creates a QApplication (offscreen platform
// unless QT_QPA_PLATFORM is set) when none exists.
int run_report_command(int argc, char** argv);

}  // namespace mpwb
