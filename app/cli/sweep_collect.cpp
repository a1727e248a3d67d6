// mpwb-cli sweep collect (sweep_collect.h).
#include "app/cli/sweep_collect.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "app/cli/store_options.h"
#include "app/cli/sweep_common.h"
#include "core/common/error.h"
#include "sessions/file_identity.h"
#include "sessions/run_bundle.h"
#include "sessions/run_store.h"

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

// "3, 5-7": indices as ranges.
std::string index_ranges(const std::vector<std::int64_t>& indices) {
    std::string out;
    for (std::size_t i = 0; i < indices.size();) {
        std::size_t j = i;
        while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
        out += (out.empty() ? "" : ", ") + std::to_string(indices[i]) +
               (j > i ? "-" + std::to_string(indices[j]) : std::string());
        i = j + 1;
    }
    return out;
}

// The sweeps a task database holds, by uuid.
std::set<std::string> sweep_uuids_in(const std::string& path) {
    RunStore::Options ro;
    ro.read_only = true;
    RunStore task(path, ro);
    std::set<std::string> uuids;
    for (const auto& s : task.list_sweeps()) uuids.insert(s.uuid);
    return uuids;
}

void report_sweep(RunStore& store, const std::string& uuid) {
    const auto id = store.find_sweep_by_uuid(uuid);
    if (!id) return;
    const SweepRecord sweep = store.get_sweep(*id);
    std::map<std::int64_t, std::int64_t> by_index;
    for (const auto& m : sweep.runs) by_index[m.index] = m.run_id;
    std::vector<std::int64_t> missing;
    std::vector<std::string> unfinished;
    std::int64_t finished = 0;
    for (std::int64_t i = 0; i < sweep.run_count; ++i) {
        const auto it = by_index.find(i);
        if (it == by_index.end()) {
            missing.push_back(i);
            continue;
        }
        const RunStatus status = store.get_run(it->second).status;
        if (status == RunStatus::Finished)
            ++finished;
        else
            unfinished.push_back(std::to_string(i) + " " + to_string(status));
    }
    std::printf("sweep %s (id %lld, uuid %s): %lld of %lld runs FINISHED\n", sweep.name.c_str(),
                static_cast<long long>(sweep.id), sweep.uuid.c_str(), static_cast<long long>(finished),
                static_cast<long long>(sweep.run_count));
    if (!missing.empty()) std::printf("  missing indices: %s\n", index_ranges(missing).c_str());
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
