// mpwb-cli sweep collect (sweep_collect.h).
#include "app/cli/sweep_collect.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "app/cli/store_options.h"
#include "app/cli/sweep_common.h"
#include "core/common/error.h"
#include "sessions/file_identity.h"
#include "sessions/run_bundle.h"
#include "sessions/run_store.h"
#include "sessions/sweep_spec.h"

namespace mpwb::cli {
namespace {

namespace fs = std::filesystem;

struct CollectArgs {
    std::string dir;
    std::string db;
    bool include_unfinished = false;
};

// task_*.sqlite in index order (task_2 before task_10); without any, every *.sqlite, of which
// those that are no run store are passed over.
struct TaskDatabases {
    std::vector<std::string> files;
    bool task_named = true;
};

TaskDatabases task_databases(const std::string& dir) {
    if (!fs::is_directory(dir)) throw ConfigError("sweep collect: " + dir + " is not a folder");
    std::vector<std::string> tasks, others;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (!entry.is_regular_file() || entry.path().extension() != ".sqlite") continue;
        (entry.path().filename().string().rfind("task_", 0) == 0 ? tasks : others)
            .push_back(entry.path().string());
    }
    auto natural = [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;
    };
    TaskDatabases found{tasks.empty() ? others : tasks, !tasks.empty()};
    std::sort(found.files.begin(), found.files.end(), natural);
    return found;
}

// The indices of 0 .. run_count - 1 that no run holds, as ranges ("3, 5-7"), from the gaps
// between the ones that do: nothing is made per missing index, whatever the count says. At
// most kShownRanges ranges are listed.
std::string missing_ranges(const std::set<std::int64_t>& held, std::int64_t run_count) {
    constexpr int kShownRanges = 50;
    std::string out;
    int ranges = 0;
    auto add = [&](std::int64_t first, std::int64_t last) {
        if (first > last) return;
        if (++ranges > kShownRanges) return;
        out += (out.empty() ? "" : ", ") + std::to_string(first) +
               (last > first ? "-" + std::to_string(last) : std::string());
    };
    std::int64_t next = 0;  // the first index not yet accounted for
    for (const std::int64_t index : held) {
        if (index < next || index >= run_count) continue;
        add(next, index - 1);
        next = index + 1;
    }
    add(next, run_count - 1);
    if (ranges > kShownRanges) out += " and " + std::to_string(ranges - kShownRanges) + " more ranges";
    return out;
}

// The sweeps a task database holds, by uuid. The file is read as a foreign one: its schema is
// checked before its sweeps table is read.
std::set<std::string> sweep_uuids_in(const std::string& path) {
    RunStore::Options ro;
    ro.read_only = true;
    ro.foreign = true;
    RunStore task(path, ro);
    std::set<std::string> uuids;
    for (const auto& s : task.list_sweeps()) uuids.insert(s.uuid);
    return uuids;
}

// The sweep's runs: how many FINISHED, which indices have none, which are not FINISHED. Walks the
// runs the sweep holds, never its planned count, which a store written before the count was
// checked on import may hold as anything.
void report_sweep(RunStore& store, const std::string& uuid) {
    const auto id = store.find_sweep_by_uuid(uuid);
    if (!id) return;
    const SweepRecord sweep = store.get_sweep(*id);
    std::printf("sweep %s (id %lld, uuid %s): ", sweep.name.c_str(), static_cast<long long>(sweep.id),
                sweep.uuid.c_str());
    if (sweep.run_count < 0 || sweep.run_count > kSweepHardMaxRuns) {
        std::printf(
            "its planned run count %lld is impossible (0 to %lld); the store's sweeps table is damaged\n",
            static_cast<long long>(sweep.run_count), static_cast<long long>(kSweepHardMaxRuns));
        return;
    }
    std::set<std::int64_t> held;
    std::vector<std::string> unfinished;
    std::int64_t finished = 0;
    for (const auto& member : sweep.runs) {
        if (member.index < 0 || member.index >= sweep.run_count || !held.insert(member.index).second)
            continue;
        const RunStatus status = store.get_run(member.run_id).status;
        if (status == RunStatus::Finished)
            ++finished;
        else
            unfinished.push_back(std::to_string(member.index) + " " + to_string(status));
    }
    std::printf("%lld of %lld runs FINISHED\n", static_cast<long long>(finished),
                static_cast<long long>(sweep.run_count));
    if (const std::string missing = missing_ranges(held, sweep.run_count); !missing.empty())
        std::printf("  missing indices: %s\n", missing.c_str());
    for (const auto& u : unfinished) std::printf("  not FINISHED: index %s\n", u.c_str());
}

int run_collect(const CollectArgs& args) {
    const TaskDatabases found = task_databases(args.dir);
    const std::string db = database_or_default(args.db);
    RunStore store(db);
    std::set<std::string> uuids;
    std::size_t collected = 0, imported = 0, skipped = 0, unfinished = 0;
    int errors = 0;
    for (const auto& file : found.files) {
        if (same_file(file, db)) continue;  // the store itself lies in the folder
        std::set<std::string> in_file;
        try {
            in_file = sweep_uuids_in(file);  // also: is it a run store at all?
        } catch (const StoreError& e) {
            if (found.task_named) {
                ++errors;
                std::fprintf(stderr, "mpwb-cli: error: %s: %s\n", file.c_str(), e.what());
            } else {
                std::printf("%s: passed over, not a run store (%s)\n", file.c_str(), e.what());
            }
            continue;
        }
        try {
            const ImportReport report = import_run_store(store, file, args.include_unfinished);
            uuids.insert(in_file.begin(), in_file.end());
            std::printf("%s: %zu imported, %zu already in the store, %zu unfinished left out\n", file.c_str(),
                        report.imported.size(), report.skipped.size(), report.unfinished.size());
            ++collected;
            imported += report.imported.size();
            skipped += report.skipped.size();
            unfinished += report.unfinished.size();
        } catch (const StoreError& e) {
            ++errors;
            std::fprintf(stderr, "mpwb-cli: error: %s\n", e.what());
        }
    }
    std::printf(
        "collected %zu task databases from %s into %s: %zu runs imported, %zu already there, %zu "
        "unfinished (collect again once they end)\n",
        collected, args.dir.c_str(), display_path(db).c_str(), imported, skipped, unfinished);
    for (const auto& uuid : uuids) report_sweep(store, uuid);
    return errors ? 1 : 0;
}

}  // namespace

void add_sweep_collect_command(CLI::App& sweep) {
    auto collect = std::make_shared<CollectArgs>();
    auto* collect_cmd = sweep.add_subcommand(
        "collect", "Import every task database of a folder (task_*.sqlite) into the store as one sweep");
    collect_cmd->add_option("dir", collect->dir, "Folder of task databases")->required();
    collect_cmd->add_option("--db", collect->db, "Run database to import into (default: the user's)");
    collect_cmd->add_flag(
        "--include-unfinished", collect->include_unfinished,
        "Import RUNNING and INTERRUPTED runs too (they cannot be collected again once they end)");
    on_run(collect_cmd, collect, run_collect);
}

}  // namespace mpwb::cli
