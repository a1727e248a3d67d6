// ScratchDir (sessions/scratch_dir.h), where `sweep collect` copies each task database: the copy
// is gone however the process ends. A SIGTERM or SIGINT with the default action removes it before
// the process dies of the signal; a program's own handler still runs (and the folder goes on
// scope exit); a folder left by a process killed outright is removed by the next ScratchDir.
// Signals are raised by the child itself: nothing waits on time.
#include "sessions/scratch_dir.h"

#include "test_support.h"

#include <signal.h>

#include <csignal>
#include <filesystem>
#include <fstream>

using namespace mpwb;
namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t g_handled = 0;
void own_handler(int) { g_handled = 1; }

// Runs `body` in a child with a pipe to say the scratch folder's path; returns the path and the
// child's wait status.
template <class Body>
std::pair<std::string, int> in_child(Body&& body) {
    int fds[2];
    if (pipe(fds) != 0) qFatal("pipe");
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        body(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    std::string path;
    char c = 0;
    while (read(fds[0], &c, 1) == 1) path += c;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return {path, status};
}

void say(int fd, const ScratchDir& dir) {
    const std::string path = dir.path().string();
    if (write(fd, path.data(), path.size()) != static_cast<ssize_t>(path.size())) _exit(3);
    close(fd);
}

void fill(const ScratchDir& dir) {
    for (const char* suffix : {"", "-journal"}) std::ofstream(dir.file() + suffix) << "copy";
}

}  // namespace

class TestScratchDir : public QObject {
    Q_OBJECT

    QTemporaryDir tmp_;

private slots:
    void initTestCase() { qputenv("TMPDIR", tmp_.path().toUtf8()); }

    void goneOnScopeExit() {
        std::string path;
        {
            const ScratchDir dir("task_0.sqlite");
            path = dir.path().string();
            fill(dir);
            QVERIFY(fs::exists(dir.file()));
            QCOMPARE(dir.path().parent_path().string(), tmp_.path().toStdString());
        }
        QVERIFY(!fs::exists(path));
    }

    void fatalSignalRemovesTheCopyFirst() {
        for (const int sig : {SIGTERM, SIGINT}) {
            const auto [path, status] = in_child([sig](int fd) {
                std::signal(sig, SIG_DFL);  // a test started in the background inherits SIGINT ignored
                const ScratchDir dir("task_0.sqlite");
                fill(dir);
                say(fd, dir);
                raise(sig);
                _exit(4);  // not reached: the signal's default action ends the process
            });
            QVERIFY(!path.empty());
            QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == sig, qPrintable(QString::number(status)));
            QVERIFY2(!fs::exists(path), path.c_str());
        }
    }

    // A program that handles SIGTERM itself (a sweep run checkpoints its children) gets the
    // signal and goes on; the folder then goes on scope exit.
    void programsOwnHandlerStillRuns() {
        const auto [path, status] = in_child([](int fd) {
            std::signal(SIGTERM, own_handler);
            std::string kept;
            {
                const ScratchDir dir("task_0.sqlite");
                fill(dir);
                raise(SIGTERM);
                if (!g_handled || !fs::exists(dir.file())) _exit(5);
                kept = dir.path().string();
            }
            if (write(fd, kept.data(), kept.size()) != static_cast<ssize_t>(kept.size())) _exit(3);
            _exit(fs::exists(kept) ? 6 : 0);
        });
        QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, qPrintable(QString::number(status)));
        QVERIFY(!fs::exists(path));
    }

    // SIGKILL cannot be caught: the next ScratchDir removes what a dead process left, and nothing
    // of a live process, of another name, or of another user.
    void orphansOfDeadProcessesAreRemoved() {
        const fs::path tmp = tmp_.path().toStdString();
        const fs::path orphan = tmp / ("mpwb-import-" + std::to_string(testsupport::dead_pid()) + "-Ab12Cd");
        const fs::path alive = tmp / ("mpwb-import-" + std::to_string(getppid()) + "-Ef34Gh");
        const fs::path other = tmp / "mpwb-import-notapid";
        for (const auto& d : {orphan, alive, other}) {
            fs::create_directory(d);
            std::ofstream(d / "task_3.sqlite") << "copy";
        }
        { const ScratchDir dir("task_0.sqlite"); }
        QVERIFY(!fs::exists(orphan));
        QVERIFY(fs::exists(alive / "task_3.sqlite"));
        QVERIFY(fs::exists(other / "task_3.sqlite"));
        QCOMPARE(remove_orphaned_scratch_dirs(tmp), 0);
    }
};

QTEST_APPLESS_MAIN(TestScratchDir)
#include "test_scratch_dir.moc"
