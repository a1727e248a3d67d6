// A temporary folder for a copy of a file from elsewhere (the snapshot `sweep collect` takes of
// each task database, which may be as large as the database): the copy must not outlive the
// command, however the command ends. The folder goes with everything in it on scope exit and on
// an exception; on SIGINT, SIGTERM or SIGHUP whose action is the default (the process is about to
// die) it is removed first and the signal then takes its course; and a folder left by a process
// that was killed outright (SIGKILL, a power cut) is removed by the next ScratchDir this user
// makes, once its owner is gone.
#pragma once
#include <filesystem>
#include <string>

namespace mpwb {

class ScratchDir {
public:
    // Creates $TMPDIR/mpwb-import-<pid>-XXXXXX for one file named `file_name` (and SQLite's
    // -journal, -wal and -shm beside it, the only other files a signal handler removes).
    // Throws StoreError(Other) when it cannot be created.
    explicit ScratchDir(const std::string& file_name);
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    // path() / file_name
    std::string file() const { return (path_ / file_name_).string(); }

private:
    std::filesystem::path path_;
    std::string file_name_;
    int slot_ = -1;  // in the table the signal handler reads; -1: none was free
};

// Removes the mpwb-import-<pid>-* folders in `dir` that belong to this user and whose process no
// longer exists; returns how many. ScratchDir calls it on the temporary directory.
int remove_orphaned_scratch_dirs(const std::filesystem::path& dir);

}  // namespace mpwb
