// File identity for the "never overwrite what you read" rule: whether an output path names the
// run database (or one of SQLite's companion files beside it), however it is spelled — a
// relative path, a symlink or a hard link all resolve to the same device and inode. Every
// command that writes a file while it reads a database (bundle export and its CSV files, report
// files, a saved network) asks here first.
#pragma once
#include <string>
#include <string_view>

namespace mpwb {

// True when both paths name the same existing file (device and inode).
bool same_file(const std::string& a, const std::string& b);

// True when writing `output` would write the database at `db_path` or its -wal, -shm or
// -journal file: the same file by device and inode, or (for files that do not exist yet) the
// same resolved path.
bool writes_into_database(const std::string& output, const std::string& db_path);

// "" when `output` may be written, else why not: its name ends in -journal, -wal or -shm, the
// names of SQLite's companion files, which SQLite removes, or replays into their database, the
// next time that database (the name without the ending) is opened. Every export asks here.
std::string sqlite_companion_problem(const std::string& output);

// Throws StoreError(Invalid) "cannot write <what> to OUT: it is the run database DB, which this
// command reads; choose another file" when writes_into_database(output, db_path).
void refuse_output_onto_database(const std::string& output, const std::string& db_path,
                                 std::string_view what);

}  // namespace mpwb
