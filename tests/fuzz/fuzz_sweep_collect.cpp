// libFuzzer harness: `mpwb-cli sweep collect` over one task database from elsewhere (app/cli/
// sweep_collect.cpp): the input is the database file. It is read as collect reads it: its sweeps
// through a foreign read-only open (the schema checked before any table is read), then
// import_run_store into the one store, first without and then with its unfinished runs (a
// collect, then a collect --include-unfinished), each import read back as `runs show` reads it
// (fuzz_store.h); then every run of every sweep it carried, by index, as collect reports them.
#include <filesystem>
#include <set>
#include <string>

#include "sessions/run_store.h"
#include "tests/fuzz/fuzz_store.h"

namespace {

// The file's sweeps by uuid, read as `sweep collect` reads them.
std::set<std::string> sweep_uuids_in(const std::string& path) {
    mpwb::RunStore::Options ro;
    ro.read_only = true;
    ro.foreign = true;
    mpwb::RunStore task(path, ro);
    std::set<std::string> uuids;
    for (const auto& sweep : task.list_sweeps()) uuids.insert(sweep.uuid);
    return uuids;
}

void read_sweeps(mpwb::RunStore& store, const std::set<std::string>& uuids) {
    for (const auto& uuid : uuids) {
        const auto id = store.find_sweep_by_uuid(uuid);
        if (!id) continue;
        for (const auto& member : store.get_sweep(*id).runs) (void)store.get_run(member.run_id);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // SQLite's companions of the previous input must not join this one.
    for (const char* companion : {"task_0.sqlite-wal", "task_0.sqlite-shm", "task_0.sqlite-journal"}) {
        std::error_code ignored;
        std::filesystem::remove(mpwb::fuzz::scratch_dir() / companion, ignored);
    }
    const std::string task = mpwb::fuzz::write_input("task_0.sqlite", data, size);
    auto& store = mpwb::fuzz::store();
    mpwb::ImportReport imported;  // both imports, for emptying the store
    mpwb::fuzz::expect_app_errors([&] {
        const std::set<std::string> uuids = sweep_uuids_in(task);
        for (const bool include_unfinished : {false, true}) {
            const mpwb::ImportReport report = mpwb::import_run_store(store, task, include_unfinished);
            imported.imported.insert(imported.imported.end(), report.imported.begin(), report.imported.end());
            imported.groups.insert(imported.groups.end(), report.groups.begin(), report.groups.end());
            mpwb::fuzz::read_back(store, report);
        }
        read_sweeps(store, uuids);
    });
    mpwb::fuzz::expect_app_errors([&] { mpwb::fuzz::empty_store(store, imported); });
    return 0;
}
