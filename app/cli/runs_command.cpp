// mpwb-cli runs: the run store from a terminal. list, show, tag, note, rename, delete, restore,
// purge, export (bundles, or one run's weights for PyTorch), import and compare work on the same database the
// GUI and `mpwb-cli train` use
// (--db, default $XDG_DATA_HOME/mpwb/runs.sqlite). Opening the database for writing is also
// what marks runs of crashed processes INTERRUPTED; read commands fall back to a read-only open
// when the file cannot be written.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/option_checks.h"
#include "app/cli/store_options.h"
#include "core/common/error.h"
#include "core/common/json_input.h"
#include "core/common/utf8.h"
#include "core/train/checkpoint.h"
#include "sessions/final_weights_rows.h"
#include "sessions/metric_keys.h"
#include "sessions/run_bundle.h"
#include "sessions/run_export.h"
#include "sessions/run_figures.h"
#include "sessions/run_query.h"
#include "sessions/run_store.h"
#include "sessions/recipe_advisor.h"
#include "sessions/scaling_summary.h"
#include "sessions/stability_series.h"

namespace mpwb::cli {
namespace {

struct RunsArgs {
    std::string db;
    // list
    std::optional<std::string> precision, dataset, status, tag;
    std::string text;
    bool deleted = false, all = false, json = false;
    int limit = 0;
    // per-run commands
    std::string ids;
    std::string tag_expr, note, name, out, csv_dir, file;
    std::string safetensors, pytorch;  // export of a run's final weights
    bool remove_tag = false, force = false;
    std::optional<double> target;
};

std::vector<std::int64_t> parse_ids(const std::string& text, std::size_t min_count = 1) {
    std::vector<std::int64_t> ids;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, ',')) {
        if (part.empty()) continue;
        std::size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(part, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != part.size() || v <= 0)
            throw ConfigError("'" + part +
                              "' is not a run id (expected a positive number, e.g. 12 or 12,13)");
        ids.push_back(v);
    }
    if (ids.size() < min_count)
        throw ConfigError("expected at least " + std::to_string(min_count) + " run id" +
                          (min_count > 1 ? "s separated by commas" : "") + ", got '" + text + "'");
    return ids;
}

std::string format_time(std::optional<double> t) {
    if (!t) return "-";
    const std::time_t secs = static_cast<std::time_t>(*t);
    std::tm tm{};
    localtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
    return buf;
}

std::string format_duration(double seconds) {
    if (!(seconds >= 0)) return "-";
    char buf[32];
    const long long s = static_cast<long long>(std::llround(seconds));
    if (seconds < 60)
        std::snprintf(buf, sizeof buf, "%.1fs", seconds);
    else if (s < 3600)
        std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
    return buf;
}

std::optional<double> latest_value(const Run& r, const std::string& key) {
    const auto it = r.latest.find(key);
    if (it == r.latest.end()) return std::nullopt;
    return it->second.value;
}

std::string format_number(std::optional<double> v, int digits = 4) {
    if (!v) return "-";
    if (std::isnan(*v)) return "nan";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, *v);
    return buf;
}

std::string format_percent(std::optional<double> v) { return v && !std::isnan(*v) ? percent_text(*v) : "-"; }

// Characters on screen of UTF-8 text ("×" and "…" are one each): UTF-8 continuation bytes
// are not counted.
std::size_t display_width(const std::string& s) {
    return static_cast<std::size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// A plain text table: columns as wide as their widest cell; numbers right-aligned.
void print_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                 const std::set<std::size_t>& right_aligned = {}) {
    std::vector<std::size_t> width(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) width[c] = display_width(header[c]);
    for (const auto& row : rows)
        for (std::size_t c = 0; c < row.size() && c < width.size(); ++c)
            width[c] = std::max(width[c], display_width(row[c]));
    auto line = [&](const std::vector<std::string>& cells) {
        std::string out;
        for (std::size_t c = 0; c < header.size(); ++c) {
            const std::string cell = c < cells.size() ? cells[c] : "";
            const std::string pad(width[c] - std::min(width[c], display_width(cell)), ' ');
            out += right_aligned.count(c) ? pad + cell : cell + (c + 1 < header.size() ? pad : "");
            if (c + 1 < header.size()) out += "  ";
        }
        std::printf("%s\n", out.c_str());
    };
    line(header);
    std::vector<std::string> rule;
    for (auto w : width) rule.emplace_back(w, '-');
    line(rule);
    for (const auto& row : rows) line(row);
}

std::string truncate(const std::string& s, std::size_t n) {
    return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

// The "summary" event the recorder writes at the end of a run; null when the run has none.
nlohmann::json run_summary(RunStore& store, std::int64_t id) {
    const auto ev = store.events(id, metric_key::summary_event);
    if (ev.empty()) return nullptr;
    try {
        return parse_json_text(ev.back().json, "summary of run " + std::to_string(id));
    } catch (const JsonInputError&) {
        return nullptr;
    }
}

// Stored JSON as JSON, or as its text when it is not (over-deep JSON stays text: printing it
// as JSON would recurse once per level).
nlohmann::json parse_or_text(const std::string& text) {
    try {
        return parse_json_text(text, "stored value");
    } catch (const JsonInputError&) {
        return text;
    }
}

// A double for JSON: NaN (no value) as null.
nlohmann::json number_or_null(double v) {
    return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

// The scaling summary, one object per layer and operand.
nlohmann::json scaling_to_json(const std::vector<ScalingSummaryRow>& rows) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& row : rows)
        out.push_back({{"layer", row.layer},
                       {"layer_label", row.layer_label},
                       {"operand", row.operand},
                       {"recipe", row.recipe},
                       {"what_if", row.what_if},
                       {"element", format_name(row.element)},
                       {"records", row.records},
                       {"last_step", row.last_step},
                       {"amax", number_or_null(row.last.amax)},
                       {"scale", number_or_null(row.last.scale)},
                       {"underflow_fraction", number_or_null(row.last.underflow_fraction)},
                       {"saturate_fraction", number_or_null(row.last.saturate_fraction)},
                       {"sqnr_db",
                        {{"first", number_or_null(row.first_sqnr_db)},
                         {"last", number_or_null(row.last.sqnr_db)},
                         {"min", number_or_null(row.min_sqnr_db)}}},
                       {"blocks", row.blocks},
                       {"clipped_blocks", row.clipped_blocks}});
    return out;
}

// The scaling section of `runs show`: per layer and operand, the last statistics step's amax,
// scale and SQNR (block recipes other than nvfp4 have no per-tensor scale: "-"), the run's own
// rows first, then the what-if recipes' rows.
void print_scaling_summary(const std::vector<ScalingSummaryRow>& summary) {
    for (const bool what_if : {false, true}) {
        std::vector<std::vector<std::string>> rows;
        for (const auto& row : summary) {
            if (row.what_if != what_if) continue;
            const auto& st = row.last;
            rows.push_back({row.layer_label, row.operand, row.recipe.empty() ? "-" : row.recipe,
                            format_name(row.element), std::to_string(row.last_step), format_number(st.amax),
                            st.scale > 0 ? format_number(st.scale) : "-",
                            format_percent(st.underflow_fraction), format_percent(st.saturate_fraction),
                            format_number(st.sqnr_db, 3), format_number(row.min_sqnr_db, 3),
                            row.blocks > 0
                                ? std::to_string(row.clipped_blocks) + "/" + std::to_string(row.blocks)
                                : "-"});
        }
        if (rows.empty()) continue;
        std::printf(what_if ? "\nwhat-if scaling (recipes the GEMMs did not use; last statistics step)\n"
                            : "\nscaling (last statistics step per layer and operand)\n");
        print_table({"layer", "operand", "recipe", "format", "step", "amax", "scale", "underflow",
                     "saturated", "SQNR dB", "min SQNR", "clipped blocks (all steps)"},
                    rows, {4, 5, 6, 7, 8, 9, 10, 11});
    }
}

nlohmann::json advisor_to_json(const AdvisorTable& table) {
    nlohmann::json rows = nlohmann::json::array();
    for (const AdvisorRow& row : table.rows) {
        nlohmann::json cells = nlohmann::json::array();
        for (const AdvisorCell& c : row.cells)
            cells.push_back(c.present ? nlohmann::json{{"recipe", c.recipe},
                                                       {"step", c.step},
                                                       {"min_sqnr_db", number_or_null(c.min_sqnr_db)},
                                                       {"max_underflow", number_or_null(c.max_underflow)},
                                                       {"max_saturate", number_or_null(c.max_saturate)},
                                                       {"worst_operand", c.worst_operand}}
                                      : nlohmann::json(nullptr));
        rows.push_back({{"gemm", row.gemm_label}, {"rule", row.rule_label}, {"cells", cells}});
    }
    return {{"columns", table.columns}, {"rows", rows}};
}

// The advisor: GEMMs × recipes, the worst operand's SQNR and underflow at the last statistics step.
void print_recipe_advisor(const AdvisorTable& table) {
    if (table.columns.size() < 2) return;  // without what-if recipes the scaling table says it all
    std::printf("\nrecipe advisor (worst operand per GEMM: SQNR dB / underflow; rule name in brackets)\n");
    std::vector<std::vector<std::string>> rows;
    for (const AdvisorRow& row : table.rows) {
        std::vector<std::string> line{row.gemm_label + " [" + row.rule_label + "]"};
        for (const AdvisorCell& c : row.cells)
            line.push_back(c.present
                               ? (table.column_recipes[line.size() - 1].empty() ? c.recipe + " " : "") +
                                     format_number(c.min_sqnr_db, 3) + " / " + format_percent(c.max_underflow)
                               : "-");
        rows.push_back(std::move(line));
    }
    std::vector<std::string> header{"GEMM"};
    header.insert(header.end(), table.columns.begin(), table.columns.end());
    print_table(header, rows, {});
}

// The precision of every GEMM and pass, as the run resolved its rules ("gemm_precisions" event).
nlohmann::json gemm_precisions_of(RunStore& store, std::int64_t run_id) {
    const auto events = store.events(run_id, "gemm_precisions");
    if (events.empty()) return nlohmann::json::array();
    const nlohmann::json stored = parse_or_text(events.front().json);
    return stored.is_object() && stored.contains("detail") ? stored["detail"] : nlohmann::json::array();
}

void print_gemm_precisions(const nlohmann::json& plan) {
    if (!plan.is_array() || plan.empty()) return;
    std::printf("\nprecision per GEMM (fprop / dgrad / wgrad)\n");
    std::vector<std::vector<std::string>> rows;
    for (const auto& g : plan)
        if (g.is_object())
            rows.push_back(
                {g.value("gemm", "?"), g.value("fprop", "?"), g.value("dgrad", "?"), g.value("wgrad", "?")});
    print_table({"GEMM", "fprop", "dgrad", "wgrad"}, rows, {});
}

// The newest checkpoint's step and run time ("checkpoint_step", "checkpoint_wall_seconds"; null
// without one), and for a FINISHED or STOPPED run "final_weights_digest": weights_digest of its
// final checkpoint, or, for a run imported from a bundle (which carries no checkpoints) or one
// whose checkpoint is damaged, the digest its summary kept. A damaged checkpoint (its row or its
// state) is said in "checkpoint_damaged", naming the database, the run and the step; the rest of
// the run is shown as it is.
void add_checkpoint_fields(RunStore& store, const Run& r, nlohmann::json& j) {
    j["checkpoint_step"] = nullptr;
    j["checkpoint_wall_seconds"] = nullptr;
    j["checkpoint_damaged"] = nullptr;
    j["final_weights_digest"] = nullptr;
    std::optional<TrainingCheckpoint> checkpoint;
    std::optional<std::string> digest;
    try {
        checkpoint = store.latest_checkpoint(r.id);
        if (checkpoint) {
            j["checkpoint_step"] = checkpoint->step;
            j["checkpoint_wall_seconds"] = checkpoint->wall_seconds;
            digest = weights_digest(*checkpoint);  // decodes the state: checks it whole
        }
    } catch (const std::exception& e) {  // StoreError for its row, DataError for its state
        const std::string at = checkpoint ? ", checkpoint at step " + std::to_string(checkpoint->step) : "";
        j["checkpoint_damaged"] =
            "database " + store.path() + ": run " + std::to_string(r.id) + at + ": " + e.what();
    }
    if (r.status != RunStatus::Finished && r.status != RunStatus::Stopped) return;
    const nlohmann::json& summary = j["summary"];
    const bool final_checkpoint = digest && (!summary.is_object() || !summary.contains("steps") ||
                                             summary["steps"] == checkpoint->step);
    if (final_checkpoint) {
        j["final_weights_digest"] = *digest;
    } else if (summary.is_object() && summary.contains("final_weights_digest") &&
               summary["final_weights_digest"].is_string()) {
        j["final_weights_digest"] = summary["final_weights_digest"];
    }
}

// The run table's figures; a damaged summary row leaves those it holds out rather than the run
// (runs show names the damage).
RunFigures figures_or_fewer(RunStore& store, const Run& r) {
    try {
        return list_figures(store, r);
    } catch (const StoreError&) {
        RunFigures f;
        f.text = text_run_figures(r, std::nullopt);
        return f;
    }
}

// A text run's figures per token (sessions/run_figures.h): "text": {"unit", "context",
// "test_loss_nats", "test_bits_per_token", "next_token_accuracy", "tokens_per_second"}.
void add_text_run_fields(RunStore& store, const Run& r, nlohmann::json& j) {
    if (!text_run_figures(r, std::nullopt)) return;  // reads no event for the other runs
    const RunFigures f = figures_or_fewer(store, r);
    if (!f.text) return;
    auto value = [](const std::optional<double>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    j["text"] = {{"unit", f.text->unit},
                 {"context", f.text->context},
                 {"test_loss_nats", value(f.final_test_loss)},
                 {"test_bits_per_token", value(f.text->final_test_bits_per_token)},
                 {"next_token_accuracy", value(f.final_test_accuracy)},
                 {"tokens_per_second", value(f.text->tokens_per_second)}};
}

nlohmann::json run_to_json(RunStore& store, const Run& r, bool full) {
    nlohmann::json j{{"id", r.id},
                     {"uuid", r.uuid},
                     {"name", r.name},
                     {"status", to_string(r.status)},
                     {"dataset", r.dataset},
                     {"precision", r.precision},
                     {"backend", r.backend},
                     {"device", r.device},
                     {"machine", r.machine},
                     {"created", r.created},
                     {"started", r.started ? nlohmann::json(*r.started) : nlohmann::json(nullptr)},
                     {"ended", r.ended ? nlohmann::json(*r.ended) : nlohmann::json(nullptr)},
                     {"duration_seconds", run_duration(r).value_or(-1)},
                     {"deleted", r.deleted},
                     {"tags", r.tags},
                     {"note", r.note}};
    j["seed"] = r.seed ? nlohmann::json(*r.seed) : nlohmann::json(nullptr);
    const auto acc = latest_value(r, metric_key::test_accuracy);
    j["test_accuracy"] = acc ? nlohmann::json(*acc) : nlohmann::json(nullptr);
    add_text_run_fields(store, r, j);
    if (!full) return j;
    j["config"] = parse_or_text(r.config_json);
    j["network"] = parse_or_text(r.network_json);
    j["versions"] = parse_or_text(r.versions_json);
    j["summary"] = run_summary(store, r.id);
    add_checkpoint_fields(store, r, j);
    nlohmann::json latest = nlohmann::json::object();
    for (const auto& [k, m] : r.latest)
        latest[k] = {
            {"step", m.step}, {"value", m.value}, {"min", m.min}, {"max", m.max}, {"count", m.count}};
    j["latest_metrics"] = latest;
    std::map<std::string, int> counts;
    const auto events = store.events(r.id);
    for (const auto& e : events) ++counts[e.kind];
    j["events"] = {{"count", events.size()}, {"by_kind", counts}};
    j["histograms"] = store.histograms(r.id).size();
    j["scaling_damaged"] = nullptr;
    j["gemm_precisions"] = gemm_precisions_of(store, r.id);
    try {
        const auto records = store.scaling_stats(r.id);
        j["scaling"] = scaling_to_json(summarize_scaling(records));
        j["advisor"] = advisor_to_json(recipe_advisor(records));
    } catch (const StoreError& e) {  // a damaged row names itself; the rest of the run is shown
        j["scaling"] = nlohmann::json::array();
        j["scaling_damaged"] = e.what();
    }
    return j;
}

// --- list ------------------------------------------------------------------------------------

void cmd_list(const RunsArgs& a) {
    const std::string path = resolve_database_path(a.db);
    if (!std::filesystem::exists(path)) {
        if (a.json)
            std::printf("[]\n");
        else
            std::printf("no runs: %s does not exist yet\n", path.c_str());
        return;
    }
    auto store = open_store_for_command(a.db, false);
    RunFilter f;
    f.precision = a.precision;
    f.dataset = a.dataset;
    if (a.status) f.status = parse_run_status(*a.status);
    if (a.tag) set_tag_filter(f, *a.tag);
    f.text = a.text;
    f.deleted_only = a.deleted;
    f.include_deleted = a.all;
    f.limit = a.limit;
    const auto runs = store->list_runs(f);
    if (a.json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& r : runs) out.push_back(run_to_json(*store, r, false));
        std::printf("%s\n", json_text(out, 2).c_str());
        return;
    }
    if (!store->interrupted_on_open().empty())
        std::fprintf(stderr, "marked %zu run(s) of stopped processes INTERRUPTED\n",
                     store->interrupted_on_open().size());
    if (runs.empty()) {
        std::printf("no runs match in %s\n", path.c_str());
        return;
    }
    std::vector<std::vector<std::string>> rows;
    bool any_text = false;
    for (const auto& r : runs) {
        std::string status = to_string(r.status);
        if (r.deleted) status += " (deleted)";
        // The run table's figures (sessions/run_figures.h): a text run's accuracy is per next
        // token, its loss in nats and bits per character or byte, its throughput in tokens/s.
        const RunFigures f = figures_or_fewer(*store, r);
        any_text = any_text || f.text.has_value();
        rows.push_back({std::to_string(r.id), truncate(r.name, 32), status, r.precision, r.dataset,
                        format_percent(f.final_test_accuracy), test_loss_text(f), throughput_text(f),
                        format_time(r.started), format_duration(run_duration(r).value_or(-1))});
    }
    print_table({"id", "name", "status", "precision", "dataset", "test acc", "test loss", "throughput",
                 "started", "duration"},
                rows, {0, 5, 7, 9});
    if (any_text)
        std::printf(
            "text runs: test acc is the next-token accuracy, test loss nats per token (bits per "
            "character or byte)\n");
    std::printf("%zu run%s in %s\n", runs.size(), runs.size() == 1 ? "" : "s", path.c_str());
}

// --- show ------------------------------------------------------------------------------------

// The run's identity, events, checkpoint and weights: the top of `runs show`.
void print_run_overview(RunStore& store, const Run& r, const nlohmann::json& j) {
    std::printf("run %lld  %s\n", static_cast<long long>(r.id), r.name.c_str());
    std::printf("  status     %s%s\n", to_string(r.status), r.deleted ? " (deleted)" : "");
    std::printf("  uuid       %s\n", r.uuid.c_str());
    std::printf("  precision  %s   dataset %s   seed %s\n", r.precision.c_str(), r.dataset.c_str(),
                r.seed ? std::to_string(*r.seed).c_str() : "-");
    std::printf("  backend    %s (%s)\n", r.backend.c_str(), r.device.c_str());
    std::printf("  machine    %s\n", r.machine.c_str());
    std::printf("  started    %s   duration %s\n", format_time(r.started).c_str(),
                format_duration(run_duration(r).value_or(-1)).c_str());
    if (!r.tags.empty()) {
        std::string t;
        for (const auto& [k, v] : r.tags) t += (t.empty() ? "" : ", ") + k + (v.empty() ? "" : "=" + v);
        std::printf("  tags       %s\n", t.c_str());
    }
    if (!r.note.empty()) std::printf("  note       %s\n", r.note.c_str());
    std::printf("  events     %s\n", j["events"]["count"].dump().c_str());
    for (const auto& [kind, n] : j["events"]["by_kind"].items())
        std::printf("               %-22s %s\n", kind.c_str(), n.dump().c_str());
    std::printf("  histograms %s\n", j["histograms"].dump().c_str());
    const bool resumable = j["checkpoint_damaged"].is_null() &&
                           (r.status == RunStatus::Interrupted || r.status == RunStatus::Stopped);
    if (!j["checkpoint_step"].is_null())
        std::printf(
            "  checkpoint step %s, %s into the run%s\n", j["checkpoint_step"].dump().c_str(),
            format_duration(j["checkpoint_wall_seconds"].get<double>()).c_str(),
            resumable ? ("; mpwb-cli train --resume " + std::to_string(r.id) + " continues it").c_str() : "");
    if (!j["checkpoint_damaged"].is_null())
        std::printf("  checkpoint DAMAGED: %s\n", j["checkpoint_damaged"].get<std::string>().c_str());
    // Checked without loading the values: a CNN's weights are megabytes.
    try {
        if (const auto w = read_final_weights(store.db(), "main", r.id, "database " + store.path(), false))
            std::printf(
                "  weights    the final FP32 weights of step %lld; runs export %lld --safetensors FILE "
                "[--pytorch FILE] takes them to PyTorch\n",
                static_cast<long long>(w->step), static_cast<long long>(r.id));
    } catch (const StoreError& e) {
        std::printf("  weights    DAMAGED: %s\n", e.what());
    }
}

void print_last_metrics(const Run& r) {
    std::printf("\nlast metrics\n");
    std::vector<std::vector<std::string>> rows;
    // Per-layer gradient statistics ("underflow/3 Linear/activation_grad", ...) would bury the
    // training metrics; they are counted here and listed in full by --json.
    std::map<std::string, int> per_layer;
    for (const auto& [k, m] : r.latest) {
        const auto slash = k.find('/');
        if (k.rfind(metric_key::stability_prefix, 0) == 0) continue;  // print_stability lists them
        if (slash != std::string::npos) {
            ++per_layer[k.substr(0, slash)];
            continue;
        }
        rows.push_back({k, std::to_string(m.step), format_number(m.value, 6), format_number(m.min, 6),
                        format_number(m.max, 6), std::to_string(m.count)});
    }
    if (rows.empty())
        std::printf("  (none)\n");
    else
        print_table({"metric", "step", "value", "min", "max", "count"}, rows, {1, 2, 3, 4, 5});
    if (!per_layer.empty()) {
        std::string text;
        for (const auto& [stat, n] : per_layer)
            text += (text.empty() ? "" : ", ") + stat + " (" + std::to_string(n) + ")";
        std::printf("gradient statistics per layer and kind: %s; --json lists them\n", text.c_str());
    }
}

// The last instability indicators of a transformer run: a row per block and one for the output.
void print_stability(const Run& r) {
    const std::vector<StabilityLatest> latest = latest_stability(r);
    if (latest.empty()) return;
    namespace key = metric_key;
    const char* const columns[] = {key::attn_logit_max, key::attn_entropy_mean, key::attn_entropy_min,
                                   key::residual_rms,   key::outlier_ratio,     key::logit_max,
                                   key::log_z_mean};
    std::vector<std::vector<std::string>> rows;
    for (const StabilityLatest& l : latest) {
        if (rows.empty() || rows.back()[0] != l.source) {
            rows.push_back({l.source, std::to_string(l.step)});
            rows.back().resize(2 + std::size(columns), "-");
        }
        for (size_t c = 0; c < std::size(columns); ++c)
            if (l.indicator == columns[c]) rows.back()[2 + c] = format_number(l.value, 4);
    }
    std::printf(
        "\nstability (last statistics step; entropy in nats, outlier = largest / median channel RMS)\n");
    print_table({"source", "step", "attn logit max", "entropy mean", "entropy min", "residual rms", "outlier",
                 "logit max", "log Z mean"},
                rows, {1, 2, 3, 4, 5, 6, 7, 8});
}

// A text run's figures per token, named with their units (a summary's test_accuracy and
// samples_per_second read as an image classifier's otherwise).
void print_text_run_figures(const RunFigures& f) {
    if (!f.text) return;
    std::printf("\nper token (%s-level text, windows of %lld)\n",
                f.text->unit == "byte" ? "byte" : "character", static_cast<long long>(f.text->context));
    std::printf("  %-28s %s\n", "test loss", test_loss_text(f).c_str());
    std::printf("  %-28s %s\n", "next-token accuracy", format_percent(f.final_test_accuracy).c_str());
    std::printf("  %-28s %s\n", "training throughput", throughput_text(f).c_str());
}

void cmd_show(const RunsArgs& a) {
    auto store = open_store_for_command(a.db, false);
    const auto id = parse_ids(a.ids).front();
    const Run r = store->get_run(id);
    const nlohmann::json j = run_to_json(*store, r, true);
    if (a.json) {
        std::printf("%s\n", json_text(j, 2).c_str());
        return;
    }
    print_run_overview(*store, r, j);
    std::printf("\nconfiguration\n");
    for (const auto& [p, v] : flatten_config(r.config_json, "configuration of run " + std::to_string(r.id)))
        std::printf("  %-36s %s\n", p.c_str(), v.c_str());
    if (!j["summary"].is_null()) {
        std::printf("\nsummary\n");
        for (const auto& [k, v] : j["summary"].items())
            std::printf("  %-28s %s\n", k.c_str(), json_text(v).c_str());
    }
    print_text_run_figures(figures_or_fewer(*store, r));
    print_last_metrics(r);
    print_stability(r);
    print_gemm_precisions(j["gemm_precisions"]);
    if (!j["scaling_damaged"].is_null()) {
        std::printf("\nscaling DAMAGED: %s\n", j["scaling_damaged"].get<std::string>().c_str());
        return;
    }
    const auto records = store->scaling_stats(id);  // read once for both tables
    print_scaling_summary(summarize_scaling(records));
    print_recipe_advisor(recipe_advisor(records));
}

// --- mutations ---------------------------------------------------------------------------------

void cmd_tag(const RunsArgs& a) {
    auto store = open_store_for_command(a.db, true);
    for (auto id : parse_ids(a.ids)) {
        const auto eq = a.tag_expr.find('=');
        const std::string key = a.tag_expr.substr(0, eq);
        if (key.empty())
            throw ConfigError("tag '" + a.tag_expr + "' has an empty key (expected key or key=value)");
        if (a.remove_tag) {
            store->get_run(id);  // NotFound for an unknown id
            store->remove_tag(id, key);
            std::printf("run %lld: removed tag %s\n", static_cast<long long>(id), key.c_str());
        } else {
            const std::string value = eq == std::string::npos ? std::string() : a.tag_expr.substr(eq + 1);
            store->set_tag(id, key, value);
            std::printf("run %lld: tag %s%s\n", static_cast<long long>(id), key.c_str(),
                        value.empty() ? "" : ("=" + value).c_str());
        }
    }
}

void cmd_note(const RunsArgs& a) {
    auto store = open_store_for_command(a.db, true);
    const auto id = parse_ids(a.ids).front();
    store->set_note(id, a.note);
    std::printf("run %lld: %s\n", static_cast<long long>(id), a.note.empty() ? "note cleared" : "note set");
}

void cmd_rename(const RunsArgs& a) {
    if (a.name.empty()) throw ConfigError("the new name is empty");
    auto store = open_store_for_command(a.db, true);
    const auto id = parse_ids(a.ids).front();
    store->rename(id, a.name);
    std::printf("run %lld renamed to '%s'\n", static_cast<long long>(id), a.name.c_str());
}

void cmd_delete(const RunsArgs& a, bool restore) {
    auto store = open_store_for_command(a.db, true);
    for (auto id : parse_ids(a.ids)) {
        if (restore)
            store->restore(id);
        else
            store->soft_delete(id);
        std::printf("run %lld %s\n", static_cast<long long>(id),
                    restore ? "restored" : "deleted (recoverable with `runs restore` until `runs purge`)");
    }
}

void cmd_purge(const RunsArgs& a) {
    auto store = open_store_for_command(a.db, true);
    const auto report = store->purge();
    const int n = report.purged;
    std::printf("purged %d deleted run%s\n", n, n == 1 ? "" : "s");
    for (auto id : report.still_running)
        std::printf("  kept run %lld: it is still running (stop it, then purge again)\n",
                    static_cast<long long>(id));
}

// --- export / import ----------------------------------------------------------------------------

// `runs export ID --safetensors FILE [--pytorch FILE]`: one run's final weights for PyTorch.
void cmd_export_model(const RunsArgs& a) {
    if (!a.out.empty() || !a.csv_dir.empty() || a.force)
        throw ConfigError(
            "runs export: --safetensors writes one run's weights; --out, --csv-dir and --force "
            "belong to a bundle export, give them in a separate call");
    const auto ids = parse_ids(a.ids);
    if (ids.size() != 1)
        throw ConfigError("runs export --safetensors takes one run id, gets " + std::to_string(ids.size()));
    auto store = open_store_for_command(a.db, false);
    const ExportedModel m =
        export_run_for_pytorch(*store, ids.front(), a.safetensors, a.pytorch, "mpwb-cli " MPWB_VERSION);
    std::printf("exported run %lld (step %lld): %zu tensors, %lld values to %s\n",
                static_cast<long long>(m.run_id), static_cast<long long>(m.step), m.tensors,
                static_cast<long long>(m.values), m.safetensors_path.c_str());
    if (!m.script_path.empty())
        std::printf("PyTorch script %s (python3 %s prints the model)\n", m.script_path.c_str(),
                    m.script_path.c_str());
}

void cmd_export(const RunsArgs& a) {
    if (!a.safetensors.empty()) return cmd_export_model(a);
    if (!a.pytorch.empty())
        throw ConfigError("runs export: --pytorch needs --safetensors FILE, the weights the script loads");
    if (a.out.empty())
        throw ConfigError(
            "runs export needs --out BUNDLE (runs to a bundle) or --safetensors FILE (one run's "
            "weights for PyTorch)");
    auto store = open_store_for_command(a.db, false);
    const auto ids = parse_ids(a.ids);
    BundleExportOptions o;
    o.csv_dir = a.csv_dir;
    o.overwrite = a.force;
    const auto result = export_bundle(*store, ids, a.out, o);
    std::printf("exported %zu run%s to %s\n", result.runs, result.runs == 1 ? "" : "s", a.out.c_str());
    for (const auto& f : result.csv_files) std::printf("  %s\n", f.c_str());
}

void cmd_import(const RunsArgs& a) {
    auto store = open_store_for_command(a.db, true, true);
    const auto report = import_bundle(*store, a.file);
    std::printf("imported %zu run%s, skipped %zu already present\n", report.imported.size(),
                report.imported.size() == 1 ? "" : "s", report.skipped.size());
    for (const auto& r : report.imported)
        std::printf("  run %lld (was %lld in the bundle)  %s\n", static_cast<long long>(r.store_id),
                    static_cast<long long>(r.bundle_id), r.uuid.c_str());
    for (const auto& s : report.skipped)
        std::printf("  skipped %s: already run %lld\n", s.uuid.c_str(),
                    static_cast<long long>(s.existing_id));
}

// --- compare -----------------------------------------------------------------------------------

using TableRows = std::vector<std::vector<std::string>>;

// Configuration and network settings that differ between the runs; everything equal is left out.
TableRows config_difference_rows(RunStore& store, const std::vector<Run>& runs,
                                 const std::vector<std::int64_t>& ids) {
    TableRows diff_rows;
    for (const auto& e : store.config_diff(ids)) {
        std::vector<std::string> row{e.path};
        for (const auto& v : e.values) row.push_back(v ? truncate(*v, 40) : "(none)");
        diff_rows.push_back(row);
    }
    std::vector<std::map<std::string, std::string>> flat;
    std::set<std::string> paths;
    for (const auto& r : runs) {
        flat.push_back(flatten_config(r.network_json, "network of run " + std::to_string(r.id)));
        for (const auto& [p, v] : flat.back()) paths.insert(p);
    }
    for (const auto& p : paths) {
        std::vector<std::string> row{"network." + p};
        bool differs = false;
        for (const auto& f : flat) {
            const auto it = f.find(p);
            row.push_back(it == f.end() ? "(none)" : truncate(it->second, 40));
            differs = differs || row.back() != row[1];
        }
        if (differs) diff_rows.push_back(row);
    }
    return diff_rows;
}

// Summary side by side: the figures of sessions/run_figures.h, as the run table and the report
// show them; the first FP32 run is the reference for the speed-up.
TableRows summary_rows(RunStore& store, const std::vector<Run>& runs, const std::optional<double>& target) {
    std::vector<RunFigures> figures;
    std::vector<nlohmann::json> summaries;  // for the last epoch's train loss, which only it holds
    for (const auto& r : runs) {
        figures.push_back(run_figures(store, r));
        summaries.push_back(run_summary(store, r.id));
    }
    const auto speedups = speedups_over_fp32(runs, figures);
    TableRows rows;
    auto add = [&](const std::string& label, auto&& cell) {
        std::vector<std::string> row{label};
        for (std::size_t i = 0; i < runs.size(); ++i) row.push_back(cell(i));
        rows.push_back(row);
    };
    auto or_dash = [](const auto& v, auto&& text) -> std::string { return v ? text(*v) : "-"; };
    auto percent = [](double v) { return percent_text(v); };
    add("name", [&](std::size_t i) { return truncate(runs[i].name, 28); });
    add("status", [&](std::size_t i) { return std::string(to_string(runs[i].status)); });
    add("precision", [&](std::size_t i) { return runs[i].precision; });
    add("dataset", [&](std::size_t i) { return runs[i].dataset; });
    add("steps", [&](std::size_t i) { return std::to_string(figures[i].steps); });
    // Text runs are measured per token (run_figures.h): the accuracy is the next-token accuracy,
    // the loss in nats with bits per character or byte beside it, the throughput also in tokens/s.
    const auto is_text = [&](std::size_t i) { return figures[i].text.has_value(); };
    std::size_t text_runs = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) text_runs += is_text(i) ? 1 : 0;
    const std::string accuracy = text_runs == 0             ? "test accuracy"
                                 : text_runs == runs.size() ? "next-token accuracy"
                                                            : "test accuracy (text: next-token)";
    add("final " + accuracy, [&](std::size_t i) { return or_dash(figures[i].final_test_accuracy, percent); });
    add("best " + accuracy, [&](std::size_t i) { return or_dash(figures[i].best_test_accuracy, percent); });
    add(text_runs ? "final test loss (nats/token)" : "final test loss",
        [&](std::size_t i) { return format_number(figures[i].final_test_loss); });
    if (text_runs)
        add("final test bits per token", [&](std::size_t i) -> std::string {
            if (!is_text(i) || !figures[i].text->final_test_bits_per_token) return "-";
            return format_number(figures[i].text->final_test_bits_per_token) + " " +
                   bits_unit_text(*figures[i].text);
        });
    add("final train loss", [&](std::size_t i) {
        const auto& s = summaries[i];
        const bool has = s.is_object() && s.contains("train_loss") && s["train_loss"].is_number();
        return format_number(has ? std::optional<double>(s["train_loss"].get<double>()) : std::nullopt);
    });
    if (target) {
        add("time to " + percent_text(*target), [&](std::size_t i) -> std::string {
            const auto reach = time_to_accuracy(store, runs[i], *target);
            if (!reach) return "not reached";
            return format_duration(reach->seconds) + " (step " + std::to_string(reach->step) + ")";
        });
    }
    add("samples/s",
        [&](std::size_t i) { return or_dash(figures[i].samples_per_second, samples_per_second_text); });
    if (text_runs)
        add("tokens/s", [&](std::size_t i) -> std::string {
            return is_text(i) ? or_dash(figures[i].text->tokens_per_second, samples_per_second_text) : "-";
        });
    if (std::any_of(speedups.begin(), speedups.end(), [](const auto& v) { return v.has_value(); }))
        add("speed-up over fp32", [&](std::size_t i) { return or_dash(speedups[i], speedup_text); });
    add("skipped steps", [&](std::size_t i) { return std::to_string(figures[i].skipped_steps); });
    add("overflows", [&](std::size_t i) { return std::to_string(figures[i].overflow_count); });
    add("loss scale range", [&](std::size_t i) {
        return or_dash(figures[i].loss_scale, [](const ScaleRange& r) { return scale_range_text(r); });
    });
    add("mean act. underflow", [&](std::size_t i) {
        return or_dash(figures[i].mean_activation_underflow, [](double v) { return percent_text(v, 3); });
    });
    add("duration", [&](std::size_t i) { return format_duration(run_duration(runs[i]).value_or(-1)); });
    return rows;
}

void cmd_compare(const RunsArgs& a) {
    auto store = open_store_for_command(a.db, false);
    const auto ids = parse_ids(a.ids, 2);
    std::vector<Run> runs;
    for (auto id : ids) runs.push_back(store->get_run(id));
    std::vector<std::string> header{"setting"};
    for (const auto& r : runs) header.push_back("run " + std::to_string(r.id));
    const TableRows diff_rows = config_difference_rows(*store, runs, ids);
    std::printf("configuration differences\n");
    if (diff_rows.empty())
        std::printf("  (none: same configuration and network)\n");
    else
        print_table(header, diff_rows);
    const TableRows rows = summary_rows(*store, runs, a.target);
    std::printf("\nsummary\n");
    header[0] = "";
    print_table(header, rows);
}

}  // namespace

void add_runs_command(CLI::App& app) {
    auto a = std::make_shared<RunsArgs>();
    auto* runs = app.add_subcommand("runs", "List, inspect, tag, export, import and compare recorded runs");
    runs->require_subcommand(1);
    auto with_db = [&](CLI::App* c) {
        c->add_option("--db", a->db, "Run database (default: $XDG_DATA_HOME/mpwb/runs.sqlite)");
        return c;
    };

    auto* list = with_db(runs->add_subcommand("list", "Recorded runs, newest first"));
    list->add_option("--precision", a->precision, "Only runs of this precision policy");
    list->add_option("--dataset", a->dataset, "Only runs on this dataset");
    list->add_option("--status", a->status, "RUNNING, FINISHED, FAILED, STOPPED or INTERRUPTED");
    list->add_option("--tag", a->tag, "Only runs with this tag (key or key=value)");
    list->add_option("--text", a->text, "Substring of the name, note or configuration");
    auto* del = list->add_flag("--deleted", a->deleted, "Only soft-deleted runs (the trash)");
    list->add_flag("--all", a->all, "Include soft-deleted runs")->excludes(del);
    list->add_option("--limit", a->limit, "At most this many runs (0 = all)")
        ->check(whole_number(0, std::numeric_limits<int>::max()));
    list->add_flag("--json", a->json, "JSON instead of a table");
    list->callback([a] { cmd_list(*a); });

    auto* show =
        with_db(runs->add_subcommand("show", "One run: configuration, summary, last metrics, events, tags"));
    show->add_option("id", a->ids, "Run id")->required();
    show->add_flag("--json", a->json, "JSON instead of text");
    show->callback([a] { cmd_show(*a); });

    auto* tag = with_db(runs->add_subcommand("tag", "Set (or --remove) a tag on runs"));
    tag->add_option("ids", a->ids, "Run id(s), comma-separated")->required();
    tag->add_option("tag", a->tag_expr, "key or key=value")->required();
    tag->add_flag("--remove", a->remove_tag, "Remove the tag instead");
    tag->callback([a] { cmd_tag(*a); });

    auto* note = with_db(runs->add_subcommand("note", "Set the note of a run (an empty text clears it)"));
    note->add_option("id", a->ids, "Run id")->required();
    note->add_option("text", a->note, "The note")->required();
    note->callback([a] { cmd_note(*a); });

    auto* rename = with_db(runs->add_subcommand("rename", "Rename a run"));
    rename->add_option("id", a->ids, "Run id")->required();
    rename->add_option("name", a->name, "New name")->required();
    rename->callback([a] { cmd_rename(*a); });

    auto* remove = with_db(runs->add_subcommand("delete", "Soft-delete runs (restore or purge later)"));
    remove->add_option("ids", a->ids, "Run id(s), comma-separated")->required();
    remove->callback([a] { cmd_delete(*a, false); });

    auto* restore = with_db(runs->add_subcommand("restore", "Undo a soft delete"));
    restore->add_option("ids", a->ids, "Run id(s), comma-separated")->required();
    restore->callback([a] { cmd_delete(*a, true); });

    auto* purge = with_db(runs->add_subcommand("purge", "Remove soft-deleted runs for good"));
    purge->callback([a] { cmd_purge(*a); });

    auto* exp = with_db(runs->add_subcommand(
        "export", "Write runs to a bundle file (and CSV files), or one run's final weights for PyTorch"));
    exp->add_option("ids", a->ids, "Run id(s), comma-separated")->required();
    exp->add_option("--out,-o", a->out, "Bundle file to write (.mpwb)");
    exp->add_option("--safetensors", a->safetensors,
                    "Write the run's final FP32 weights to this new safetensors file (names of a PyTorch "
                    "nn.Sequential state_dict)");
    exp->add_option(
        "--pytorch", a->pytorch,
        "With --safetensors: also write a Python script that builds the nn.Sequential and loads them");
    exp->add_option("--csv-dir", a->csv_dir, "Also write runs.csv and one CSV of metrics per run here");
    exp->add_flag("--force", a->force, "Overwrite an existing bundle file");
    exp->callback([a] { cmd_export(*a); });

    auto* imp = with_db(
        runs->add_subcommand("import", "Merge a bundle into the database (runs present are skipped)"));
    imp->add_option("file", a->file, "Bundle file")->required();
    imp->callback([a] { cmd_import(*a); });

    auto* cmp =
        with_db(runs->add_subcommand("compare", "Configuration differences and summaries side by side"));
    cmp->add_option("ids", a->ids, "Two or more run ids, comma-separated")->required();
    cmp->add_option("--target", a->target, "Also show the time to this test accuracy (0..1)");
    cmp->callback([a] { cmd_compare(*a); });
}

}  // namespace mpwb::cli
