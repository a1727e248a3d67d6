// Thin RAII layer over the SQLite C API used by every part of the run store: a connection that
// knows its file path, prepared statements with typed bind/column helpers, and the single place
// that turns SQLite result codes into StoreError messages ("database X is locked by another
// process", "... is read-only", "... is corrupt: ..."), so every caller reports them the same way.
#pragma once
#include "sessions/store_error.h"

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpwb::sqlite {

// Builds the StoreError for a failed SQLite call on the database at `path`. `what` names the
// operation ("commit", "reading run 3") for the generic case. `system_errno` (from
// sqlite3_system_errno) tells an I/O error that is really a full disk (ENOSPC, EDQUOT).
StoreError make_error(int rc, const std::string& path, std::string_view sqlite_message, std::string_view what,
                      int system_errno = 0);

// Every connection runs with SQLITE_DBCONFIG_DEFENSIVE on and SQLITE_DBCONFIG_TRUSTED_SCHEMA off:
// no SQL in a file's schema may call a function with side effects, and no statement may write
// the schema behind SQLite's back, whoever wrote the file.
class Db {
public:
    Db();
    // Opens `path` with sqlite3_open_v2 flags; throws StoreError when the file cannot be opened.
    Db(const std::string& path, int flags);
    // Opens a "file:" URI (SQLITE_OPEN_URI is added) while messages name `path`, the file.
    Db(const std::string& uri, int flags, const std::string& path);
    ~Db();
    Db(Db&& other) noexcept;
    Db& operator=(Db&& other) noexcept;
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    sqlite3* handle() const { return db_; }
    const std::string& path() const { return path_; }

    // Runs one or more statements without results; throws StoreError on failure.
    void exec(const std::string& sql, std::string_view what = {});
    // Returns the first column of the first row as an integer (or `fallback` for no row).
    std::int64_t query_int(const std::string& sql, std::int64_t fallback = 0);
    std::string query_text(const std::string& sql);

    [[noreturn]] void fail(int rc, std::string_view what) const;
    std::int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
    int changes() const { return sqlite3_changes(db_); }
    void close() noexcept;

    // Bounds the work of the statements on this connection, for one that reads a file from
    // elsewhere: once they have run about `steps` steps of SQLite's virtual machine in all, the
    // running statement stops and fails with StoreError(Invalid) "<what>: ...". A crafted file
    // that passes every check must still not keep a command busy forever. Until
    // clear_work_limit() or the connection closes.
    void limit_work(std::uint64_t steps, const std::string& what);
    void clear_work_limit() noexcept;

    // Waits up to `ms` for a lock another connection holds, trying again every millisecond (SQLite's
    // own busy timeout sleeps up to 100 ms between tries, and under a writer that commits back to
    // back it missed every short gap between commits). When the wait runs out, the error says
    // which process holds the lock, as far as /proc/locks tells.
    void set_busy_timeout(int ms);

private:
    struct WorkLimit;
    struct BusyWait;
    void open(const std::string& name, int flags);
    StoreError error(int rc, std::string_view sqlite_message, std::string_view what) const;
    static int on_progress(void* limit);
    static int on_busy(void* wait, int tries);

    sqlite3* db_ = nullptr;
    std::string path_;
    // On the heap: SQLite's progress callback keeps its address while the Db moves.
    std::unique_ptr<WorkLimit> work_limit_;
    std::unique_ptr<BusyWait> busy_wait_;
};

// Who holds the write lock of the database at `path` (its WAL write lock in the -shm file, or a
// rollback journal's reserved or pending lock on the file), from /proc/locks: "process 1234
// (mpwb-cli train --preset spiral-mlp ...)", several joined by ", "; empty where it cannot be told.
std::string lock_holders(const std::string& path);

// The work limit for statements over the file at `path`: a fixed allowance plus a number of steps
// per byte of the file (and its -wal) far above what any query of this program needs to read a
// byte, so that only work out of proportion to the file (a crafted recursive view or trigger
// that got past the schema check) reaches it.
std::uint64_t work_steps_for_file(const std::string& path);

// PRAGMA quick_check's findings joined with "; ", empty when the file is sound.
std::string integrity_findings(Db& db);

// "file:/abs/path?immutable=1": SQLite reads the file as it is, without the -wal and -shm files
// (for reading a database where those cannot be created). Reserved URI characters are escaped.
std::string immutable_uri(const std::string& path);

class Stmt {
public:
    Stmt() = default;
    Stmt(Db& db, std::string_view sql);
    ~Stmt();
    Stmt(Stmt&& other) noexcept;
    Stmt& operator=(Stmt&& other) noexcept;
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    Stmt& bind(int index, std::int64_t v);
    Stmt& bind(int index, int v) { return bind(index, static_cast<std::int64_t>(v)); }
    Stmt& bind(int index, double v);  // NaN is stored as NULL by SQLite; read back as NaN
    Stmt& bind(int index, std::string_view v);
    Stmt& bind(int index, const char* v) { return bind(index, std::string_view(v)); }
    Stmt& bind(int index, const std::string& v) { return bind(index, std::string_view(v)); }
    Stmt& bind_blob(int index, const void* data, std::size_t size);
    Stmt& bind_null(int index);
    Stmt& bind(int index, const std::optional<std::int64_t>& v);

    // Advances: true for a row, false when done; throws StoreError on failure.
    bool step(std::string_view what = {});
    // Runs to completion (for statements without rows).
    void run(std::string_view what = {}) {
        while (step(what)) {}
    }
    // Resets for re-execution and clears bindings, so no read transaction stays open.
    void reset();

    std::int64_t col_int(int i) const { return sqlite3_column_int64(stmt_, i); }
    double col_double(int i) const;  // NULL -> NaN
    std::string col_text(int i) const;
    std::vector<std::uint8_t> col_blob(int i) const;
    bool col_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
    std::optional<double> col_opt_double(int i) const;
    std::optional<std::int64_t> col_opt_int(int i) const;

    sqlite3_stmt* handle() const { return stmt_; }

private:
    sqlite3_stmt* stmt_ = nullptr;
    Db* db_ = nullptr;
};

// RAII transaction: BEGIN IMMEDIATE on construction (so a lock conflict shows up at once,
// not half-way through), ROLLBACK unless commit() was called.
class Transaction {
public:
    explicit Transaction(Db& db, std::string_view what = "begin transaction");
    ~Transaction();
    void commit();

private:
    Db& db_;
    bool done_ = false;
};

}  // namespace mpwb::sqlite
