// Shared helpers of the sessions tests: scratch folders, raw SQLite access that does not go
// through the code under test (so checks are independent of it), file bytes, and a pid that is
// certainly dead.
#pragma once
#include "sessions/store_error.h"

#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace testsupport {

inline std::vector<char> file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A plain sqlite3 connection for setting up and checking files behind the store's back.
class Raw {
public:
    explicit Raw(const std::string& path) {
        if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
            qFatal("cannot open %s", path.c_str());
        }
    }
    ~Raw() { sqlite3_close(db_); }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;

    // Returns the SQLite result code; fails the test via the caller's QCOMPARE.
    int exec(const std::string& sql) {
        char* err = nullptr;
        const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
        if (rc != SQLITE_OK) {
            qWarning("raw sqlite: %s: %s", sql.substr(0, 60).c_str(), err ? err : "");
        }
        sqlite3_free(err);
        return rc;
    }
    long long integer(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        long long v = -1;
        if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW) {
            v = sqlite3_column_int64(s, 0);
        }
        sqlite3_finalize(s);
        return v;
    }
    std::string text(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        std::string v;
        if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
            v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        }
        sqlite3_finalize(s);
        return v;
    }

private:
    sqlite3* db_ = nullptr;
};

// Overwrites the first page of table or index `object` with zeros behind SQLite's back, after
// moving everything out of the WAL into the main file: a file that still opens but whose
// PRAGMA quick_check fails. Returns the damaged page number (0 when the object was not found).
inline long long damage_page_of(const std::string& path, const std::string& object) {
    long long page = 0, page_size = 0;
    {
        Raw raw(path);
        raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        raw.exec("PRAGMA journal_mode=DELETE");
        page = raw.integer("SELECT rootpage FROM sqlite_master WHERE name='" + object + "'");
        page_size = raw.integer("PRAGMA page_size");
    }
    if (page <= 0 || page_size <= 0) return 0;
    auto bytes = file_bytes(path);
    const auto offset = static_cast<std::size_t>((page - 1) * page_size);
    if (offset + static_cast<std::size_t>(page_size) > bytes.size()) return 0;
    std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(offset),
              bytes.begin() + static_cast<std::ptrdiff_t>(offset + static_cast<std::size_t>(page_size)), 0);
    write_bytes(path, bytes);
    return page;
}

// A pid that belonged to a process which has exited and been reaped.
inline long long dead_pid() {
    const pid_t pid = fork();
    if (pid == 0) {
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return pid;
}

inline std::string host() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

}  // namespace testsupport

// Runs `expr`, requires a StoreError of `kind` whose message contains `needle`.
#define EXPECT_STORE_ERROR(expr, kind_, needle_)                                            \
    do {                                                                                    \
        bool thrown_ = false;                                                               \
        try {                                                                               \
            expr;                                                                           \
        } catch (const mpwb::StoreError& e_) {                                              \
            thrown_ = true;                                                                 \
            QVERIFY2(e_.kind() == (kind_), e_.what());                                      \
            QVERIFY2(std::string(e_.what()).find(needle_) != std::string::npos, e_.what()); \
        }                                                                                   \
        QVERIFY2(thrown_, "expected a StoreError from " #expr);                             \
    } while (0)
