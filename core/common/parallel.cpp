// A fixed pool of worker threads fed one job at a time. A job is cut into chunks that the
// caller and the workers claim one by one, so a thread the OS preempts (the GUI thread drawing,
// another process) delays only the chunk it holds: the others take the rest instead of waiting
// for its share at the end.
#include "core/common/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace mpwb {
namespace {

class ThreadPool {
public:
    ~ThreadPool() { resize(1); }

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    void resize(int threads) {
        threads = std::max(1, threads);
        // Never while another thread's parallel region runs (two trainers in one process).
        std::lock_guard call_lock(call_mutex_);
        if (threads == size()) return;
        {
            std::lock_guard lock(mutex_);
            quit_ = true;
            ++generation_;
        }
        wake_.notify_all();
        for (auto& t : workers_) t.join();
        workers_.clear();
        std::lock_guard lock(mutex_);
        quit_ = false;
        // The generation is read here, under the lock: a worker that read it itself could miss
        // a job posted before it first ran, and the caller would wait for it for ever.
        for (int i = 1; i < threads; ++i)
            workers_.emplace_back([this, start = generation_] { worker_loop(start); });
    }

    void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
        std::unique_lock call_lock(call_mutex_);  // one parallel region at a time
        // A few chunks per thread, so there is something left to take over from a slow one;
        // never smaller than the grain.
        const int64_t by_grain = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
        const int64_t chunks = std::min<int64_t>(by_grain, int64_t{4} * size());
        if (chunks == 1) {
            body(0, n);
            return;
        }
        uint64_t job;
        {
            std::lock_guard lock(mutex_);
            job = ++generation_;
            body_.store(&body, std::memory_order_relaxed);
            n_.store(n, std::memory_order_relaxed);
            chunks_.store(chunks, std::memory_order_relaxed);
            completed_.store(0, std::memory_order_relaxed);
            ticket_.store(job << 32, std::memory_order_release);
        }
        wake_.notify_all();
        work(job);
        // The workers still hold chunks: spin a little (they are short), then sleep.
        for (int spin = 0; spin < 500 && completed_.load(std::memory_order_acquire) < chunks; ++spin)
            std::this_thread::yield();
        if (completed_.load(std::memory_order_acquire) < chunks) {
            std::unique_lock lock(mutex_);
            done_.wait(lock, [&] { return completed_.load(std::memory_order_acquire) >= chunks; });
        }
    }

private:
    // Claims and runs chunks of `job` until none are left. The ticket holds the job (high 32
    // bits) and the next chunk (low 32): a worker that wakes after its job ended, or during the
    // next one, cannot claim a chunk of a job it did not read.
    void work(uint64_t job) {
        const uint64_t tag = job & 0xffffffffu;
        uint64_t t = ticket_.load(std::memory_order_acquire);
        for (;;) {
            if ((t >> 32) != tag) return;
            const int64_t index = static_cast<int64_t>(t & 0xffffffffu);
            const int64_t chunks = chunks_.load(std::memory_order_relaxed);
            if (index >= chunks) return;
            if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                               std::memory_order_acquire))
                continue;
            // The claim succeeded on this job's ticket, so the job is not complete and its body
            // and size are still the ones published with it.
            const int64_t n = n_.load(std::memory_order_relaxed);
            const int64_t begin = n * index / chunks, end = n * (index + 1) / chunks;
            if (begin < end) (*body_.load(std::memory_order_relaxed))(begin, end);
            if (completed_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
                std::lock_guard lock(mutex_);  // the caller checks under the lock before sleeping
                done_.notify_one();
            }
            t = ticket_.load(std::memory_order_acquire);
        }
    }

    void worker_loop(uint64_t seen) {
        for (;;) {
            uint64_t job;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return generation_ != seen; });
                seen = job = generation_;
                if (quit_) return;
            }
            work(job);
        }
    }

    std::vector<std::thread> workers_;
    std::mutex call_mutex_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    uint64_t generation_ = 0;  // guarded by mutex_
    bool quit_ = false;
    std::atomic<uint64_t> ticket_{0};
    std::atomic<const std::function<void(int64_t, int64_t)>*> body_{nullptr};
    std::atomic<int64_t> n_{0}, chunks_{1}, completed_{0};
};

ThreadPool& pool() {
    static ThreadPool instance;
    return instance;
}

std::atomic<int> g_threads{0};

}  // namespace

void set_thread_count(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    g_threads = threads;
    pool().resize(threads);
}

int thread_count() {
    if (g_threads == 0) set_thread_count(0);
    return g_threads;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
    if (n <= 0) return;
    if (n < grain || thread_count() == 1) {
        body(0, n);
        return;
    }
    pool().run(n, grain, body);
}

}  // namespace mpwb
