// RAII wrappers over the SQLite C API and the mapping from result codes to StoreError messages.
#include "sessions/sqlite_db.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <utility>

namespace mpwb::sqlite {

StoreError make_error(int rc, const std::string& path, std::string_view sqlite_message, std::string_view what,
                      int system_errno) {
    const std::string msg(sqlite_message);
    const bool no_space = system_errno == ENOSPC || system_errno == EDQUOT;
    if ((rc & 0xff) == SQLITE_FULL || ((rc & 0xff) == SQLITE_IOERR && no_space)) {
        return StoreError(StoreError::Kind::DiskFull, "the disk holding " + path + " is full");
    }
    switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return StoreError(StoreError::Kind::Locked, "database " + path + " is locked by another process");
        case SQLITE_READONLY:
            return StoreError(StoreError::Kind::ReadOnly, "database " + path + " is read-only");
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
            return StoreError(StoreError::Kind::Corrupt, "database " + path + " is corrupt: " + msg);
        case SQLITE_CANTOPEN:
            return StoreError(StoreError::Kind::NotFound, "cannot open database " + path + ": " + msg);
        case SQLITE_PERM:
        case SQLITE_AUTH:
            return StoreError(StoreError::Kind::ReadOnly,
                              "database " + path + ": permission denied (" + msg + ")");
        default:
            break;
    }
    std::string text = "database " + path + ": ";
    if (!what.empty()) {
        text += std::string(what) + ": ";
    }
    return StoreError(StoreError::Kind::Other, text + msg);
}

Db::Db(const std::string& path, int flags) : path_(path) { open(path, flags); }

Db::Db(const std::string& uri, int flags, const std::string& path) : path_(path) {
    open(uri, flags | SQLITE_OPEN_URI);
}

void Db::open(const std::string& name, int flags) {
    const int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        const int sys = db_ ? sqlite3_system_errno(db_) : 0;
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw make_error(rc, path_, msg, "open", sys);
    }
    sqlite3_extended_result_codes(db_, 1);
}

std::string integrity_findings(Db& db) {
    Stmt s(db, "PRAGMA quick_check");
    std::string findings;
    while (s.step("integrity check")) {
        const auto line = s.col_text(0);
        if (line != "ok") {
            findings += (findings.empty() ? "" : "; ") + line;
        }
    }
    return findings;
}

std::string immutable_uri(const std::string& path) {
    std::string absolute = path;
    if (!path.empty() && path.front() != '/') {
        std::error_code ec;
        absolute = std::filesystem::absolute(path, ec).string();
    }
    std::string uri = "file:";
    for (unsigned char c : absolute) {
        if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            uri += buf;
        } else {
            uri += static_cast<char>(c);
        }
    }
    return uri + "?immutable=1";
}

Db::~Db() { close(); }

void Db::close() noexcept {
    if (db_) {
        sqlite3_close_v2(db_);
        db_ = nullptr;
    }
}

Db::Db(Db&& other) noexcept : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Db& Db::operator=(Db&& other) noexcept {
    if (this != &other) {
        close();
        db_ = std::exchange(other.db_, nullptr);
        path_ = std::move(other.path_);
    }
    return *this;
}

void Db::fail(int rc, std::string_view what) const {
    throw make_error(rc, path_, db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc), what,
                     db_ ? sqlite3_system_errno(db_) : 0);
}

void Db::exec(const std::string& sql, std::string_view what) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        const std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw make_error(rc, path_, msg, what.empty() ? std::string_view(sql) : what,
                         sqlite3_system_errno(db_));
    }
}

std::int64_t Db::query_int(const std::string& sql, std::int64_t fallback) {
    Stmt s(*this, sql);
    return s.step(sql) ? s.col_int(0) : fallback;
}

std::string Db::query_text(const std::string& sql) {
    Stmt s(*this, sql);
    return s.step(sql) ? s.col_text(0) : std::string();
}

Stmt::Stmt(Db& db, std::string_view sql) : db_(&db) {
    const int rc = sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) {
        db.fail(rc, "prepare: " + std::string(sql.substr(0, 80)));
    }
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt::Stmt(Stmt&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)), db_(other.db_) {}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
    if (this != &other) {
        sqlite3_finalize(stmt_);
        stmt_ = std::exchange(other.stmt_, nullptr);
        db_ = other.db_;
    }
    return *this;
}

Stmt& Stmt::bind(int index, std::int64_t v) {
    sqlite3_bind_int64(stmt_, index, v);
    return *this;
}

Stmt& Stmt::bind(int index, double v) {
    sqlite3_bind_double(stmt_, index, v);
    return *this;
}

Stmt& Stmt::bind(int index, std::string_view v) {
    sqlite3_bind_text64(stmt_, index, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    return *this;
}

Stmt& Stmt::bind_blob(int index, const void* data, std::size_t size) {
    // A zero-length blob must still be a blob, not NULL.
    static const char empty = 0;
    sqlite3_bind_blob64(stmt_, index, size ? data : &empty, size, SQLITE_TRANSIENT);
    return *this;
}

Stmt& Stmt::bind_null(int index) {
    sqlite3_bind_null(stmt_, index);
    return *this;
}

Stmt& Stmt::bind(int index, const std::optional<std::int64_t>& v) {
    return v ? bind(index, *v) : bind_null(index);
}

bool Stmt::step(std::string_view what) {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) {
        return true;
    }
    if (rc == SQLITE_DONE) {
        return false;
    }
    // Reset first so the statement releases its locks before the exception unwinds.
    sqlite3_reset(stmt_);
    db_->fail(rc, what);
}

void Stmt::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

double Stmt::col_double(int i) const {
    if (col_null(i)) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    return sqlite3_column_double(stmt_, i);
}

std::string Stmt::col_text(int i) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i))) : std::string();
}

std::vector<std::uint8_t> Stmt::col_blob(int i) const {
    const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt_, i));
    const int n = sqlite3_column_bytes(stmt_, i);
    return p ? std::vector<std::uint8_t>(p, p + n) : std::vector<std::uint8_t>();
}

std::optional<double> Stmt::col_opt_double(int i) const {
    if (col_null(i)) {
        return std::nullopt;
    }
    return sqlite3_column_double(stmt_, i);
}

std::optional<std::int64_t> Stmt::col_opt_int(int i) const {
    if (col_null(i)) {
        return std::nullopt;
    }
    return sqlite3_column_int64(stmt_, i);
}

Transaction::Transaction(Db& db, std::string_view what) : db_(db) { db_.exec("BEGIN IMMEDIATE", what); }

Transaction::~Transaction() {
    if (!done_) {
        sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
}

void Transaction::commit() {
    db_.exec("COMMIT", "commit");
    done_ = true;
}

}  // namespace mpwb::sqlite
