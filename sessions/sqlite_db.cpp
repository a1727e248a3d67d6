// RAII wrappers over the SQLite C API and the mapping from result codes to StoreError messages.
#include "sessions/sqlite_db.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace mpwb::sqlite {

namespace {
// The progress callback runs every this many virtual-machine steps.
constexpr int kStepsPerCallback = 1000;
// Work steps allowed for any foreign file, and per byte of it. An import reads and writes each
// row a few times at a few dozen steps a row (a 5 MB bundle of 44,000 metric points: quick_check
// 0.15 steps a byte, scanning the metrics 4 steps a row), so 100 a byte is ample by far more than
// an order of magnitude, and a 30 KB file still stops within a second.
constexpr std::uint64_t kBaseWorkSteps = 20'000'000;
constexpr std::uint64_t kWorkStepsPerByte = 100;
}  // namespace

struct Db::BusyWait {
    int timeout_ms = 0;
    std::chrono::steady_clock::time_point since;
};

struct Db::WorkLimit {
    std::uint64_t callbacks_left = 0;
    std::uint64_t steps = 0;
    std::string what;
    bool reached = false;
};

StoreError make_error(int rc, const std::string& path, std::string_view sqlite_message, std::string_view what,
                      int system_errno) {
    const std::string msg(sqlite_message);
    const bool no_space = system_errno == ENOSPC || system_errno == EDQUOT;
    if ((rc & 0xff) == SQLITE_FULL || ((rc & 0xff) == SQLITE_IOERR && no_space)) {
        return StoreError(StoreError::Kind::DiskFull, "the disk holding " + path + " is full");
    }
    switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED: {
            const std::string holders = lock_holders(path);
            return StoreError(
                StoreError::Kind::Locked,
                "database " + path + " is locked by another process" +
                    (holders.empty() ? std::string() : "; its write lock is held by " + holders));
        }
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

Db::Db() = default;

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
    sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
}

std::uint64_t work_steps_for_file(const std::string& path) {
    std::uint64_t bytes = 0;
    for (const char* suffix : {"", "-wal"}) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path + suffix, ec);
        if (!ec) bytes += size;
    }
    const std::uint64_t cap = std::numeric_limits<std::uint64_t>::max() / 2;
    return bytes > (cap - kBaseWorkSteps) / kWorkStepsPerByte ? cap
                                                              : kBaseWorkSteps + bytes * kWorkStepsPerByte;
}

void Db::limit_work(std::uint64_t steps, const std::string& what) {
    work_limit_ = std::make_unique<WorkLimit>();
    work_limit_->callbacks_left = steps / kStepsPerCallback + 1;
    work_limit_->steps = steps;
    work_limit_->what = what;
    sqlite3_progress_handler(db_, kStepsPerCallback, &Db::on_progress, work_limit_.get());
}

void Db::clear_work_limit() noexcept {
    if (db_) sqlite3_progress_handler(db_, 0, nullptr, nullptr);
    work_limit_.reset();
}

int Db::on_progress(void* limit) {
    auto* l = static_cast<WorkLimit*>(limit);
    if (l->callbacks_left > 0) --l->callbacks_left;
    l->reached = l->reached || l->callbacks_left == 0;
    return l->reached ? 1 : 0;
}

void Db::set_busy_timeout(int ms) {
    busy_wait_ = std::make_unique<BusyWait>();
    busy_wait_->timeout_ms = ms;
    sqlite3_busy_handler(db_, &Db::on_busy, busy_wait_.get());
}

int Db::on_busy(void* wait, int tries) {
    auto* w = static_cast<BusyWait*>(wait);
    const auto now = std::chrono::steady_clock::now();
    if (tries == 0) w->since = now;
    if (now - w->since >= std::chrono::milliseconds(w->timeout_ms)) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return 1;
}

StoreError Db::error(int rc, std::string_view sqlite_message, std::string_view what) const {
    if ((rc & 0xff) == SQLITE_INTERRUPT && work_limit_ && work_limit_->reached) {
        return StoreError(StoreError::Kind::Invalid,
                          work_limit_->what + ": stopped after " + std::to_string(work_limit_->steps) +
                              " steps of SQLite's work, more than a file of this size can need; it "
                              "is not a file MP Workbench wrote");
    }
    StoreError e = make_error(rc, path_, sqlite_message, what, db_ ? sqlite3_system_errno(db_) : 0);
    if ((rc & 0xff) == SQLITE_BUSY && busy_wait_)
        return StoreError(e.kind(), std::string(e.what()) + " (this command waited up to " +
                                        std::to_string(busy_wait_->timeout_ms) + " ms for it)");
    return e;
}

namespace {

// The command line of process `pid`, its arguments joined by spaces and cut at 80 characters.
std::string command_line(long pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    while (!text.empty() && text.back() == '\0') text.pop_back();
    for (char& c : text)
        if (c == '\0') c = ' ';
    constexpr std::size_t kShown = 80;
    return text.size() > kShown ? text.substr(0, kShown) + "..." : text;
}

// The pids of /proc/locks that hold a write lock on the file `path` over any byte of [lo, hi].
void write_lockers(const std::string& path, unsigned long long lo, unsigned long long hi,
                   std::set<long>& pids) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;
    std::ifstream locks("/proc/locks");
    for (std::string line; std::getline(locks, line);) {
        std::istringstream in(line);
        std::string id, kind, mode, access, start, end;
        long pid = 0;
        unsigned int major = 0, minor = 0;
        unsigned long long inode = 0;
        char colon1 = 0, colon2 = 0;
        in >> id >> kind >> mode >> access >> pid >> std::hex >> major >> colon1 >> minor >> colon2 >>
            std::dec >> inode >> start >> end;
        if (!in || access != "WRITE" || pid <= 0 || pid == ::getpid() || inode != st.st_ino ||
            major != ::major(st.st_dev) || minor != ::minor(st.st_dev))
            continue;
        const unsigned long long first = std::stoull(start);
        const unsigned long long last = end == "EOF" ? ~0ull : std::stoull(end);
        if (first <= hi && last >= lo) pids.insert(pid);
    }
}

}  // namespace

std::string lock_holders(const std::string& path) {
    std::set<long> pids;
    try {
        // SQLite's WAL write lock is byte 120 of the -shm; a rollback journal's reserved and
        // pending locks are the two bytes at 1 GiB of the database file.
        write_lockers(path + "-shm", 120, 120, pids);
        write_lockers(path, 0x40000000ull, 0x40000001ull, pids);
    } catch (const std::exception&) {
        return {};  // an unexpected /proc/locks line: nothing can be told
    }
    std::string text;
    for (const long pid : pids) {
        const std::string command = command_line(pid);
        text += (text.empty() ? "" : ", ") + std::string("process ") + std::to_string(pid) +
                (command.empty() ? std::string() : " (" + command + ")");
    }
    return text;
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
    work_limit_.reset();
    busy_wait_.reset();
}

Db::Db(Db&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      work_limit_(std::move(other.work_limit_)),
      busy_wait_(std::move(other.busy_wait_)) {}

Db& Db::operator=(Db&& other) noexcept {
    if (this != &other) {
        close();
        db_ = std::exchange(other.db_, nullptr);
        path_ = std::move(other.path_);
        work_limit_ = std::move(other.work_limit_);
        busy_wait_ = std::move(other.busy_wait_);
    }
    return *this;
}

void Db::fail(int rc, std::string_view what) const {
    throw error(rc, db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc), what);
}

void Db::exec(const std::string& sql, std::string_view what) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        const std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw error(rc, msg, what.empty() ? std::string_view(sql) : what);
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
