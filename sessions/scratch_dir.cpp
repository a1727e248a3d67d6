// ScratchDir (scratch_dir.h). The signal handler may only call async-signal-safe functions:
// every path it removes is written out when the folder is made, into a fixed table of slots.
#include "sessions/scratch_dir.h"

#include "sessions/store_error.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace mpwb {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "mpwb-import-";
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr std::size_t kSignalCount = sizeof kSignals / sizeof kSignals[0];
constexpr const char* kCompanions[] = {"", "-journal", "-wal", "-shm"};
constexpr std::size_t kFiles = sizeof kCompanions / sizeof kCompanions[0];
constexpr std::size_t kPathBytes = 4096;

struct Slot {
    std::atomic<bool> ready{false};
    char files[kFiles][kPathBytes];
    char dir[kPathBytes];
};

std::array<Slot, 8> g_slots;
std::mutex g_mutex;  // registration only; the handler reads `ready`
int g_active = 0;
struct sigaction g_previous[kSignalCount];

void remove_registered_files() {
    for (auto& slot : g_slots) {
        if (!slot.ready.load()) continue;
        for (const auto& file : slot.files) ::unlink(file);
        ::rmdir(slot.dir);
    }
}

void on_signal(int sig, siginfo_t* info, void* context) {
    for (std::size_t i = 0; i < kSignalCount; ++i) {
        if (kSignals[i] != sig) continue;
        const struct sigaction& previous = g_previous[i];
        if (previous.sa_handler == SIG_DFL) {
            // The process dies of this signal: the copy goes first.
            const int saved = errno;
            remove_registered_files();
            ::sigaction(sig, &previous, nullptr);
            ::raise(sig);
            errno = saved;
        } else if (previous.sa_handler != SIG_IGN) {
            // The program handles the signal itself and goes on; the destructor cleans up.
            if (previous.sa_flags & SA_SIGINFO)
                previous.sa_sigaction(sig, info, context);
            else
                previous.sa_handler(sig);
        }
    }
}

bool copy_path(char* out, const std::string& path) {
    if (path.size() + 1 > kPathBytes) return false;
    std::memcpy(out, path.c_str(), path.size() + 1);
    return true;
}

// Takes a slot for `dir` with `file` in it; -1 when none is free or a path is too long (the
// folder then goes only on scope exit).
int register_dir(const fs::path& dir, const std::string& file) {
    const std::lock_guard lock(g_mutex);
    for (std::size_t i = 0; i < g_slots.size(); ++i) {
        Slot& slot = g_slots[i];
        if (slot.ready.load()) continue;
        bool fits = copy_path(slot.dir, dir.string());
        for (std::size_t f = 0; f < kFiles; ++f)
            fits = fits && copy_path(slot.files[f], (dir / file).string() + kCompanions[f]);
        if (!fits) return -1;
        if (g_active++ == 0) {
            for (std::size_t s = 0; s < kSignalCount; ++s) {
                ::sigaction(kSignals[s], nullptr, &g_previous[s]);
                struct sigaction action {};
                action.sa_sigaction = on_signal;
                // As the program's own handler asked: whether a slow call restarts.
                action.sa_flags = SA_SIGINFO | (g_previous[s].sa_flags & SA_RESTART);
                sigemptyset(&action.sa_mask);
                ::sigaction(kSignals[s], &action, nullptr);
            }
        }
        slot.ready.store(true);
        return static_cast<int>(i);
    }
    return -1;
}

void release_slot(int index) {
    if (index < 0) return;
    const std::lock_guard lock(g_mutex);
    g_slots[static_cast<std::size_t>(index)].ready.store(false);
    if (--g_active == 0)
        for (std::size_t s = 0; s < kSignalCount; ++s) ::sigaction(kSignals[s], &g_previous[s], nullptr);
}

// The pid in "mpwb-import-<pid>-XXXXXX", or 0.
pid_t owner_pid(const std::string& name) {
    if (name.rfind(kPrefix, 0) != 0) return 0;
    const std::string rest = name.substr(std::strlen(kPrefix));
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    return end != rest.c_str() && *end == '-' && pid > 0 ? static_cast<pid_t>(pid) : 0;
}

}  // namespace

int remove_orphaned_scratch_dirs(const fs::path& dir) {
    int removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const pid_t pid = owner_pid(it->path().filename().string());
        struct stat st {};
        if (pid == 0 || pid == ::getpid() || ::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != ::getuid())
            continue;
        if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
        std::error_code remove_ec;
        if (fs::remove_all(it->path(), remove_ec) > 0 && !remove_ec) ++removed;
    }
    return removed;
}

ScratchDir::ScratchDir(const std::string& file_name) : file_name_(file_name) {
    const fs::path tmp = fs::temp_directory_path();
    remove_orphaned_scratch_dirs(tmp);
    std::string pattern = (tmp / (kPrefix + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
        throw StoreError(StoreError::Kind::Other,
                         "cannot create a temporary folder in " + tmp.string() + ": " + std::strerror(errno));
    path_ = pattern;
    slot_ = register_dir(path_, file_name_);
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
    release_slot(slot_);
}

}  // namespace mpwb
