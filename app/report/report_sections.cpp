// The report's per-run sections (report_sections.h): architecture, configuration, events, the
// small multiples of the gradient histograms and the decision boundary.
#include "app/report/report_sections.h"

#include "app/report/report_scaling.h"
#include "core/common/json_input.h"
#include "core/common/printable.h"
#include "core/common/text_format.h"
#include "core/numeric/exponent_histogram.h"
#include "core/nn/network.h"
#include "core/train/dataset_source.h"
#include "core/train/decision_boundary.h"
#include "core/train/event_text.h"
#include "core/train/next_token_predictions.h"
#include "core/train/train_config.h"
#include "sessions/metric_keys.h"
#include "sessions/run_figures.h"
#include "sessions/run_language_model.h"
#include "sessions/run_query.h"
#include "widgets/plots/decision_boundary_plot.h"
#include "widgets/plots/histogram_plot.h"

#include <algorithm>
#include <set>

namespace mpwb::report_detail {
namespace {

constexpr double kCellPixelRatio = 1.25;  // about 200 dpi where a PDF page holds three across

QString shape_text(const Shape& shape) { return QString::fromStdString(shape_to_string(shape)); }

// Only the dataset part is read: a setting elsewhere that this version no longer knows must
// not hide the run's shapes and boundary.
DatasetSpec dataset_of(const Run& run) {
    const nlohmann::json config =
        parse_json_text(run.config_json, "configuration of run " + std::to_string(run.id));
    nlohmann::json only_data = nlohmann::json::object();
    if (config.is_object() && config.contains("dataset")) only_data["dataset"] = config["dataset"];
    return train_config_from_json(only_data).dataset;
}

// "0 Linear" -> 0, so layers sort by index and not as text ("10 ReLU" after "9 Linear").
long layer_index(const std::string& label) {
    try {
        return std::stol(label);
    } catch (const std::exception&) {
        return -1;
    }
}

// The activation gradient first, then the parameters' gradients in the order the store has them.
int kind_rank(const std::string& kind) { return kind == metric_key::activation_grad ? 0 : 1; }

QString kind_text(const std::string& kind) {
    if (kind == metric_key::activation_grad) return QStringLiteral("activation grad");
    const std::string prefix = "weight_grad:";
    if (kind.rfind(prefix, 0) == 0) return QString::fromStdString(kind.substr(prefix.size())) + " grad";
    return QString::fromStdString(kind);
}

// A small multiple keeps bars, zones, strips and axes: the legend and the statistics box would
// cover the bars at this size, and the section's note says what the colours are.
void hide_small_print(HistogramPlot& plot) {
    plot.legend->setVisible(false);
    for (int i = 0; i < plot.itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot.item(i)); text && text->text().contains('\n'))
            text->setVisible(false);
}

// Text a run stored as printable (printable_lines) stays as it is; anything else (a bundle from
// elsewhere may hold control characters or bytes that are not UTF-8) is made printable here. A
// second printable_lines would double every backslash the first one wrote.
std::string safe_lines(const std::string& stored) {
    const std::string printable = printable_lines(stored);
    std::string backslashes_doubled;
    for (const char c : stored) backslashes_doubled += c == '\\' ? std::string("\\\\") : std::string(1, c);
    return printable == backslashes_doubled ? stored : printable;
}

}  // namespace

const Dataset* DatasetCache::get(const Run& run, QString* error) {
    std::string key;
    DatasetSpec spec;
    try {
        spec = dataset_of(run);
        key = nlohmann::json::parse(run.config_json).value("dataset", nlohmann::json{}).dump();
    } catch (const std::exception& e) {
        *error = QString::fromUtf8(e.what());
        return nullptr;
    }
    if (!loaded_.count(key)) {
        try {
            loaded_[key] = load_dataset(spec);
        } catch (const std::exception& e) {
            loaded_[key] = std::nullopt;
            errors_[key] = QStringLiteral("dataset %1 cannot be read: %2")
                               .arg(QString::fromStdString(spec.kind), QString::fromUtf8(e.what()));
        }
    }
    if (!loaded_[key]) {
        *error = errors_[key];
        return nullptr;
    }
    return &*loaded_[key];
}

QString setting_text(const std::string& json_value) {
    nlohmann::json v;
    try {
        v = nlohmann::json::parse(json_value);
    } catch (const std::exception&) {
        return QString::fromStdString(json_value);
    }
    if (v.is_string()) return QString::fromStdString(v.get<std::string>());
    if (v.is_number_float()) {
        // Settings held as float are stored widened to double: show the float's shortest form.
        const double d = v.get<double>();
        const float f = static_cast<float>(d);
        return QString::fromStdString(static_cast<double>(f) == d ? shortest_text(f) : shortest_text(d));
    }
    return QString::fromStdString(v.dump());
}

std::vector<Architecture> architectures(const std::vector<RunRow>& rows, DatasetCache& data) {
    std::vector<Architecture> out;
    std::map<std::pair<std::string, std::string>, std::size_t> index;  // (network, input) -> out
    for (const RunRow& row : rows) {
        QString data_error;
        const Dataset* dataset = data.get(row.run, &data_error);
        const Shape input = dataset ? dataset->sample_shape : Shape{};
        const auto key = std::make_pair(row.run.network_json, shape_to_string(input));
        if (auto it = index.find(key); it != index.end()) {
            out[it->second].runs << row.label;
            continue;
        }
        Architecture a;
        a.runs << row.label;
        a.input = dataset ? shape_text(input) : QString();
        try {
            const nlohmann::json description =
                parse_json_text(row.run.network_json, "network of run " + std::to_string(row.run.id));
            a.name = QString::fromStdString(description.value("name", std::string()));
            if (!dataset) {
                a.error = QStringLiteral("No shapes: ") + data_error;
            } else {
                for (const LayerReport& l : Network::inspect(description, input)) {
                    a.layers.push_back({static_cast<int>(l.index), QString::fromStdString(l.kind),
                                        l.error.empty() ? shape_text(l.output) : QString(), l.parameters,
                                        QString::fromStdString(l.error)});
                    a.total_parameters += l.parameters;
                }
            }
        } catch (const std::exception& e) {
            a.error = QString::fromUtf8(e.what());
        }
        index[key] = out.size();
        out.push_back(std::move(a));
    }
    return out;
}

std::vector<ConfigDiffEntry> full_config(const std::vector<RunRow>& rows) {
    std::vector<std::map<std::string, std::string>> flat;
    std::set<std::string> paths;
    for (const RunRow& row : rows) {
        try {
            flat.push_back(
                flatten_config(row.run.config_json, "configuration of run " + std::to_string(row.run.id)));
        } catch (const std::exception&) {
            flat.push_back({{"(unreadable)", "\"" + row.run.config_json.substr(0, 60) + "\""}});
        }
        for (const auto& [path, value] : flat.back()) paths.insert(path);
    }
    std::vector<ConfigDiffEntry> out;
    for (const std::string& path : paths) {
        ConfigDiffEntry e;
        e.path = path;
        for (const auto& f : flat) {
            const auto it = f.find(path);
            e.values.push_back(it == f.end() ? std::nullopt : std::optional<std::string>(it->second));
        }
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<RunEvents> run_events(RunStore& store, const std::vector<RunRow>& rows) {
    std::vector<RunEvents> out;
    for (const RunRow& row : rows) {
        RunEvents r;
        r.run_label = row.label;
        const std::vector<Event> events = store.events(row.run.id);
        for (const Event& e : events) {
            if (r.shown.size() == kMaxEventsPerRun) break;
            QString text;
            try {
                // The stored row is the event's detail with its source added (RunRecorder).
                nlohmann::json detail = parse_json_text(e.json, "event " + std::to_string(e.id));
                if (detail.is_object()) detail.erase("source");
                text = QString::fromStdString(safe_lines(event_text(e.kind, detail)));
            } catch (const std::exception&) {
                text = QString::fromStdString(printable_text(e.json));  // shown as stored, made safe
            }
            r.shown.push_back({e.step, QString::fromStdString(e.kind), text});
        }
        r.more = events.size() - r.shown.size();
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<HistogramGrid> gradient_grids(RunStore& store, const std::vector<RunRow>& rows, int cell_width,
                                          int cell_height) {
    std::vector<HistogramGrid> out;
    for (const RunRow& row : rows) {
        std::vector<Histogram> all = store.histograms(row.run.id);
        if (all.empty()) continue;
        std::int64_t last_step = 0;
        for (const Histogram& h : all) last_step = std::max(last_step, h.step);
        std::erase_if(all, [&](const Histogram& h) { return h.step != last_step; });
        std::stable_sort(all.begin(), all.end(), [](const Histogram& a, const Histogram& b) {
            return std::make_pair(layer_index(a.layer), kind_rank(a.kind)) <
                   std::make_pair(layer_index(b.layer), kind_rank(b.kind));
        });
        double scale = 1;
        for (const MetricPoint& p :
             store.series(row.run.id, metric_key::loss_scale, std::int64_t{0}, last_step))
            scale = p.value;
        HistogramGrid grid;
        grid.run_label = row.label;
        grid.step = last_step;
        const Format ref = row.figures.underflow_format;
        grid.reference = QString::fromStdString(format_name(ref)).toUpper();
        for (const Histogram& h : all) {
            ExponentHistogram eh;
            try {
                eh = ExponentHistogram::from_blob(h.blob);
            } catch (const std::exception&) {
                continue;  // a damaged row: the others are still shown
            }
            const QString title = QString::fromStdString(h.layer) + QStringLiteral(" · ") + kind_text(h.kind);
            HistogramPlot plot;
            plot.setHistogram(eh, title, ref, static_cast<float>(scale));
            hide_small_print(plot);
            grid.cells.push_back(render_plot(&plot, title, {}, cell_width, cell_height, kCellPixelRatio));
        }
        if (!grid.cells.empty()) out.push_back(std::move(grid));
    }
    return out;
}

std::vector<Figure> boundary_figures(RunStore& store, const std::vector<RunRow>& rows, DatasetCache& data,
                                     int size) {
    std::vector<Figure> out;
    for (const RunRow& row : rows) {
        const auto stored = store.boundary(row.run.id);
        if (!stored) continue;
        QString error;
        const Dataset* dataset = data.get(row.run, &error);
        if (!dataset || !(dataset->is_classification() && dataset->sample_shape == Shape{2})) continue;
        BoundaryGrid g;
        try {
            g = boundary_from_blob(stored->second);
        } catch (const std::exception&) {
            continue;
        }
        if (g.nx < 2 || g.ny < 2) continue;
        DecisionBoundaryPlot plot;
        auto points = [&](const Tensor& x, const Tensor& y, bool test) {
            QVector<double> px, py;
            QVector<int> label;
            for (int64_t i = 0; i < (x.rank() ? x.dim(0) : 0); ++i) {
                px << x[2 * i];
                py << x[2 * i + 1];
                label << static_cast<int>(y[i]);
            }
            plot.setPoints(px, py, label, test);
        };
        points(dataset->train_x, dataset->train_y, false);
        points(dataset->test_x, dataset->test_y, true);
        const QVector<int> predicted(g.predicted.begin(), g.predicted.end());
        const QVector<double> confidence(g.confidence.begin(), g.confidence.end());
        plot.setClassGrid(g.nx, g.ny, g.x_min, g.x_max, g.y_min, g.y_max, predicted, confidence, g.classes);
        const QString title = QStringLiteral("%1 · decision boundary at step %2").arg(row.label).arg(g.step);
        out.push_back(render_plot(&plot, title,
                                  QStringLiteral("Colour: predicted class, paler where the network is less "
                                                 "sure; filled points: training set, hollow: test set."),
                                  size, size));
    }
    return out;
}

namespace {

// A stored sample as the report prints it (core/common/printable, through safe_lines).
TextSample text_sample_of(const Event& e, const Run& run) {
    TextSample sample;
    sample.step = e.step;
    nlohmann::json d;
    try {
        d = parse_json_text(e.json, "sample event of run " + std::to_string(run.id));
    } catch (const JsonInputError& error) {
        sample.text = QString::fromStdString(printable_text(error.what()));
        return sample;
    }
    auto text = [&](const char* key) {
        const auto it = d.find(key);
        return it != d.end() && it->is_string() ? QString::fromStdString(safe_lines(it->get<std::string>()))
                                                : QString();
    };
    auto number = [&](const char* key) {
        const auto it = d.find(key);
        return it != d.end() && it->is_number() ? setting_text(it->dump()) : QStringLiteral("?");
    };
    sample.prompt = text("prompt");
    sample.text = d.contains("error") ? text("error") : text("text");
    sample.settings = QStringLiteral("temperature %1, top-k %2, %3 tokens")
                          .arg(number("temperature"), number("top_k"), number("tokens"));
    return sample;
}

}  // namespace

namespace {

// One token in one monospace cell, so that the input, predicted and true lines of a window line
// up: a printable character as it is, a newline ⏎, a tab ⇥, anything else (a control character,
// a byte that is not a character alone) a middle dot.
QString display_token(const std::string& token) {
    if (token == "\n") return QStringLiteral("⏎");
    if (token == "\t") return QStringLiteral("⇥");
    if (printable_text(token) != token) return QStringLiteral("·");
    return QString::fromStdString(token).toHtmlEscaped();
}

QString window_text(const Vocabulary& vocabulary, const std::vector<int32_t>& ids,
                    const std::vector<int32_t>* truth = nullptr) {
    QString html;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        const QString cell = display_token(vocabulary.token(ids[t]));
        const bool wrong = truth && (*truth)[t] != ids[t];
        html += wrong ? QStringLiteral("<span style=\"color:#b00000\">") + cell + QStringLiteral("</span>")
                      : cell;
    }
    return html;
}

std::vector<int32_t> window_ids(const Tensor& rows, int64_t index) {
    const int64_t width = rows.dim(1);
    const float* row = rows.data() + index * width;
    return std::vector<int32_t>(row, row + width);
}

// The first, middle and last test windows with the final weights' predictions; the reason
// instead when there are none.
void add_test_windows(TextSamples& s, RunStore& store, const RunRow& row, DatasetCache& data) {
    QString error;
    const Dataset* dataset = data.get(row.run, &error);
    if (!dataset || dataset->test_size() == 0 || dataset->test_x.rank() != 2) {
        s.windows_error = error.isEmpty() ? QStringLiteral("The run's dataset has no test windows.") : error;
        return;
    }
    s.test_windows = dataset->test_size();
    try {
        RunLanguageModel model = load_run_language_model(store, row.run.id);
        const std::set<int64_t> picked{0, s.test_windows / 2, s.test_windows - 1};
        for (const int64_t index : picked) {
            const std::vector<int32_t> input = window_ids(dataset->test_x, index);
            const std::vector<int32_t> target = window_ids(dataset->test_y, index);
            const std::vector<int32_t> predicted = predict_next_tokens(model.network, input);
            TestWindow w{index, window_text(model.vocabulary, input),
                         window_text(model.vocabulary, predicted, &target),
                         window_text(model.vocabulary, target)};
            w.positions = static_cast<int>(target.size());
            for (std::size_t t = 0; t < target.size(); ++t) w.correct += predicted[t] == target[t] ? 1 : 0;
            s.windows.push_back(std::move(w));
        }
    } catch (const std::exception& e) {
        s.windows.clear();
        s.windows_error = QString::fromStdString(printable_text(e.what()));
    }
}

}  // namespace

std::vector<TextSamples> text_samples(RunStore& store, const std::vector<RunRow>& rows, DatasetCache& data) {
    std::vector<TextSamples> out;
    for (const RunRow& row : rows) {
        if (!row.figures.text) continue;
        TextSamples s;
        s.run_label = row.label;
        s.unit = QString::fromStdString(row.figures.text->unit);
        const std::vector<Event> events = store.events(row.run.id, "sample");
        const std::size_t n = events.size();
        for (std::size_t i = 0; i < n; ++i) {
            if (i == 0 || i + kMaxTextSamplesPerRun > n)
                s.shown.push_back(text_sample_of(events[i], row.run));
        }
        s.more = n - s.shown.size();
        if (n == 0) {
            const auto failed = store.events(row.run.id, "sample_failed");
            s.error = failed.empty()
                          ? QStringLiteral("No samples stored (sampling after each evaluation was off).")
                          : QStringLiteral("Sampling failed: ") + text_sample_of(failed.back(), row.run).text;
        }
        add_test_windows(s, store, row, data);
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace mpwb::report_detail
