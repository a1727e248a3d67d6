// Run bundles: moving runs between stores (another machine, a colleague, a report archive).
// A bundle is a self-contained SQLite file with the store's own schema plus a bundle_info
// marker table, optionally accompanied by CSV files of the metric series for other tools.
// Import merges a bundle into a store with fresh ids, keeping uuids so a run is never
// imported twice.
#pragma once
#include "sessions/run_store.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mpwb {

struct BundleExportOptions {
    std::string csv_dir;     // when set: runs.csv plus run_<id>.csv (key,step,wall_time,value)
    bool overwrite = false;  // replace an existing bundle file instead of refusing
};

struct BundleExportResult {
    std::size_t runs = 0;
    std::vector<std::string> csv_files;
};

// Copies the runs (with metrics, summaries, histograms, events, tags, notes, and the comparison
// groups they belong to) into a new bundle file. Throws StoreError: NotFound for an unknown run,
// Invalid when the bundle exists and overwrite is off or no runs are given.
BundleExportResult export_bundle(RunStore& store, const std::vector<std::int64_t>& run_ids,
                                 const std::string& bundle_path, const BundleExportOptions& options = {});

struct ImportedRun {
    std::int64_t bundle_id = 0;  // id inside the bundle
    std::int64_t store_id = 0;   // new id in the store
    std::string uuid;
};

struct SkippedRun {
    std::string uuid;
    std::int64_t existing_id = 0;  // the run in the store that already has this uuid
};

struct ImportReport {
    std::vector<ImportedRun> imported;
    std::vector<SkippedRun> skipped;
    std::vector<std::int64_t> groups;  // comparison groups created in the store
};

// Throws StoreError(NotABundle) "<path> is not an MP Workbench run bundle (...)" for anything
// that is not an exported bundle, NewerSchema for a bundle from a newer build, NotFound when the
// file does not exist. Imported runs that were RUNNING in the bundle become INTERRUPTED: no
// process on this machine owns them. All-or-nothing: one transaction.
ImportReport import_bundle(RunStore& store, const std::string& bundle_path);

// True when `path` is a readable run bundle (what import_bundle would accept).
bool is_run_bundle(const std::string& path);

}  // namespace mpwb
