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

// Copies the runs (with metrics, summaries, histograms, events, tags, notes, the comparison
// groups they belong to, and their final weights, for export elsewhere) into a new bundle file.
// Checkpoints stay behind: they are resumable
// state (megabytes for a CNN) for the store the run trains in, not results; a finished run's
// final weights digest travels in its "summary" event (RunRecorder), which `runs show` reads
// when the run has no checkpoint, so `sweep collect` keeps it. Throws StoreError: NotFound for an unknown
// run, Invalid when the bundle exists and overwrite is off or no runs are given.
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
    std::vector<std::int64_t> sweeps;  // sweeps created in the store or given runs, merged by uuid
    // import_run_store only: uuids of the runs left out because they were RUNNING or INTERRUPTED
    std::vector<std::string> unfinished;
};

// Throws StoreError(NotABundle) "<path> is not an MP Workbench run bundle (...)" for anything
// that is not an exported bundle, NewerSchema for a bundle from a newer build, NotFound when the
// file does not exist. Imported runs that were RUNNING in the bundle become INTERRUPTED: no
// process on this machine owns them. All-or-nothing: one transaction.
ImportReport import_bundle(RunStore& store, const std::string& bundle_path);

// Imports a run store file that is not a bundle (a database `mpwb-cli train --db` or a Slurm
// task of a sweep wrote) like a bundle: the file is opened read-only and never changed; a
// snapshot of it (VACUUM INTO a temporary folder) gets the bundle marker and goes through
// import_bundle. Runs still RUNNING or INTERRUPTED are left out (listed in `unfinished`) unless
// include_unfinished, so a later import, once they end, brings them in FINISHED.
ImportReport import_run_store(RunStore& store, const std::string& path, bool include_unfinished = false);

// True when `path` is a readable run bundle (what import_bundle would accept).
bool is_run_bundle(const std::string& path);

}  // namespace mpwb
