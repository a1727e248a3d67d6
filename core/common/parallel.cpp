// A fixed pool of worker threads fed one job at a time; the caller works on chunk 0 itself.
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
            workers_.emplace_back([this, i, start = generation_] { worker_loop(i, start); });
    }

    void run(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
        const int chunks = size();
        std::unique_lock call_lock(call_mutex_);  // one parallel region at a time
        {
            std::lock_guard lock(mutex_);
            body_ = &body;
            n_ = n;
            chunks_ = chunks;
            pending_ = chunks - 1;
            ++generation_;
        }
        wake_.notify_all();
        run_chunk(0);
        std::unique_lock lock(mutex_);
        done_.wait(lock, [this] { return pending_ == 0; });
        body_ = nullptr;
    }

private:
    void run_chunk(int index) {
        const int64_t begin = n_ * index / chunks_;
        const int64_t end = n_ * (index + 1) / chunks_;
        if (begin < end) (*body_)(begin, end);
    }

    void worker_loop(int index, uint64_t seen) {
        for (;;) {
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return generation_ != seen; });
                seen = generation_;
                if (quit_) return;
            }
            run_chunk(index);
            {
                std::lock_guard lock(mutex_);
                if (--pending_ == 0) done_.notify_one();
            }
        }
    }

    std::vector<std::thread> workers_;
    std::mutex call_mutex_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    uint64_t generation_ = 0;
    bool quit_ = false;
    const std::function<void(int64_t, int64_t)>* body_ = nullptr;
    int64_t n_ = 0;
    int chunks_ = 1;
    int pending_ = 0;
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
    pool().run(n, body);
}

}  // namespace mpwb
