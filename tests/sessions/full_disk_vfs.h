// A full disk on demand, for tests: a SQLite VFS that hands every call to the default one, except
// that while the disk is "full" every write returns SQLITE_FULL, as the unix VFS does on ENOSPC.
// install() makes it the default, so every connection opened afterwards uses it (the RunWriter's
// own included) without any hook in the code under test. Filling a real disk needs root (a small
// tmpfs) and takes the machine's other writers down with it.
#pragma once
#include <sqlite3.h>

#include <atomic>

namespace testsupport::full_disk {

inline std::atomic<bool> g_full{false};
inline sqlite3_vfs* g_real = nullptr;

struct File {
    sqlite3_file base;
    sqlite3_file* real;  // the default VFS's file, right after this struct
};

inline sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }
inline const sqlite3_io_methods& io(sqlite3_file* f) { return *real(f)->pMethods; }

inline int x_close(sqlite3_file* f) { return io(f).xClose(real(f)); }
inline int x_read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
    return io(f).xRead(real(f), buf, n, off);
}
inline int x_write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
    return g_full ? SQLITE_FULL : io(f).xWrite(real(f), buf, n, off);
}
inline int x_truncate(sqlite3_file* f, sqlite3_int64 size) { return io(f).xTruncate(real(f), size); }
inline int x_sync(sqlite3_file* f, int flags) { return io(f).xSync(real(f), flags); }
inline int x_file_size(sqlite3_file* f, sqlite3_int64* size) { return io(f).xFileSize(real(f), size); }
inline int x_lock(sqlite3_file* f, int level) { return io(f).xLock(real(f), level); }
inline int x_unlock(sqlite3_file* f, int level) { return io(f).xUnlock(real(f), level); }
inline int x_check_reserved_lock(sqlite3_file* f, int* out) { return io(f).xCheckReservedLock(real(f), out); }
inline int x_file_control(sqlite3_file* f, int op, void* arg) { return io(f).xFileControl(real(f), op, arg); }
inline int x_sector_size(sqlite3_file* f) { return io(f).xSectorSize(real(f)); }
inline int x_device_characteristics(sqlite3_file* f) { return io(f).xDeviceCharacteristics(real(f)); }
inline int x_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
    return io(f).xShmMap(real(f), region, size, extend, out);
}
inline int x_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
    return io(f).xShmLock(real(f), offset, n, flags);
}
inline void x_shm_barrier(sqlite3_file* f) { io(f).xShmBarrier(real(f)); }
inline int x_shm_unmap(sqlite3_file* f, int remove) { return io(f).xShmUnmap(real(f), remove); }
inline int x_fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
    return io(f).xFetch(real(f), off, n, out);
}
inline int x_unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) { return io(f).xUnfetch(real(f), off, p); }

inline const sqlite3_io_methods g_methods = {3,
                                             x_close,
                                             x_read,
                                             x_write,
                                             x_truncate,
                                             x_sync,
                                             x_file_size,
                                             x_lock,
                                             x_unlock,
                                             x_check_reserved_lock,
                                             x_file_control,
                                             x_sector_size,
                                             x_device_characteristics,
                                             x_shm_map,
                                             x_shm_lock,
                                             x_shm_barrier,
                                             x_shm_unmap,
                                             x_fetch,
                                             x_unfetch};

inline int x_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
    File* wrapper = reinterpret_cast<File*>(file);
    wrapper->real = reinterpret_cast<sqlite3_file*>(wrapper + 1);
    const int rc = g_real->xOpen(g_real, name, wrapper->real, flags, out_flags);
    // SQLite calls xClose exactly when pMethods is set, even after a failed open.
    wrapper->base.pMethods = wrapper->real->pMethods ? &g_methods : nullptr;
    return rc;
}

// Makes the full-disk VFS the default (once per process; the unix VFS has io methods version 3,
// which g_methods forwards in full).
inline void install() {
    static sqlite3_vfs vfs;
    if (g_real) return;
    g_real = sqlite3_vfs_find(nullptr);
    vfs = *g_real;
    vfs.zName = "mpwb-test-full-disk";
    vfs.szOsFile = static_cast<int>(sizeof(File)) + g_real->szOsFile;
    vfs.xOpen = x_open;
    vfs.pNext = nullptr;
    sqlite3_vfs_register(&vfs, 1);
}

// The disk is full while one of these lives (and its fill() was called).
class Filler {
public:
    Filler() { install(); }
    ~Filler() { g_full = false; }
    Filler(const Filler&) = delete;
    Filler& operator=(const Filler&) = delete;
    void fill() { g_full = true; }
    void free() { g_full = false; }
};

}  // namespace testsupport::full_disk
