// StoreError: the one exception type of the run store. sessions has no dependency on core, so it
// carries its own error type; the kind lets the GUI react (offer a read-only open when the file
// is locked, say "upgrade" for a newer schema) while the message names the file and the problem.
#pragma once
#include <stdexcept>
#include <string>

namespace mpwb {

class StoreError : public std::runtime_error {
public:
    enum class Kind {
        Locked,       // another process holds the write lock beyond the busy timeout
        ReadOnly,     // the file (or the open mode) does not allow writing
        Corrupt,      // not a database, or a malformed one; never overwritten or deleted
        NewerSchema,  // written by a newer MP Workbench; the file is left untouched
        NotABundle,   // an import of something that is not an exported run bundle
        NotFound,     // a run, group or file that does not exist
        DiskFull,     // the disk or quota is full
        Invalid,      // a bad argument (empty name, zero buckets, ...)
        InUse,        // a RUNNING run whose writer is (or may be) alive: not deleted or purged
        Other         // any other SQLite or I/O failure
    };

    StoreError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

    Kind kind() const noexcept { return kind_; }

private:
    Kind kind_;
};

}  // namespace mpwb
