// Output-versus-database identity checks (see file_identity.h).
#include "sessions/file_identity.h"

#include "sessions/store_error.h"

#include <filesystem>
#include <sys/stat.h>

namespace mpwb {

namespace fs = std::filesystem;

namespace {

// SQLite's files beside a database: the WAL, its index, and the rollback journal.
constexpr const char* kCompanionSuffixes[] = {"", "-wal", "-shm", "-journal"};

// The absolute path with every existing symlink and "." / ".." resolved; empty on failure.
fs::path resolved(const std::string& path) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
    return ec ? fs::path() : p;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
    struct stat sa {
    }, sb{};
    if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool writes_into_database(const std::string& output, const std::string& db_path) {
    if (output.empty() || db_path.empty()) return false;
    const fs::path out = resolved(output);
    const fs::path db = resolved(db_path);
    for (const char* suffix : kCompanionSuffixes) {
        if (same_file(output, db_path + suffix)) return true;
        // A companion that does not exist now may exist by the time the output is written.
        if (!out.empty() && !db.empty() && out == fs::path(db.string() + suffix)) return true;
    }
    return false;
}

std::string sqlite_companion_problem(const std::string& output) {
    const std::string name = fs::path(output).filename().string();
    for (const char* suffix : kCompanionSuffixes) {
        const std::string_view s(suffix);
        if (s.empty() || name.size() <= s.size() || name.compare(name.size() - s.size(), s.size(), s) != 0)
            continue;
        const std::string database = output.substr(0, output.size() - s.size());
        return "a name ending in " + std::string(s) +
               " is what SQLite gives a companion file of the database " + database +
               ", and SQLite removes (or replays into that database) such a file when it opens " + database +
               "; choose another name";
    }
    return {};
}

void refuse_output_onto_database(const std::string& output, const std::string& db_path,
                                 std::string_view what) {
    if (!writes_into_database(output, db_path)) return;
    throw StoreError(StoreError::Kind::Invalid,
                     "cannot write " + std::string(what) + " to " + output + ": it is the run database " +
                         db_path + " (or one of its files), which this command reads; choose another file");
}

}  // namespace mpwb
