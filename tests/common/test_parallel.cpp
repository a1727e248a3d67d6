// Tests of parallel_for: coverage of the range, chunk sizes, a preempted thread's chunks taken
// over by the others, and many back-to-back jobs.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/common/parallel.h"

using namespace mpwb;

class TestParallel : public QObject {
    Q_OBJECT
private slots:
    void cleanup() { set_thread_count(2); }

    void coversEveryIndexOnce_data() {
        QTest::addColumn<int>("threads");
        QTest::addColumn<qint64>("n");
        QTest::addColumn<qint64>("grain");
        for (int t : {1, 2, 3, 8})
            for (qint64 n : {1, 7, 100, 1000, 100003})
                for (qint64 g : {1, 16, 4096})
                    QTest::addRow("t%d n%lld g%lld", t, static_cast<long long>(n), static_cast<long long>(g))
                        << t << n << g;
    }
    void coversEveryIndexOnce() {
        QFETCH(int, threads);
        QFETCH(qint64, n);
        QFETCH(qint64, grain);
        set_thread_count(threads);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        parallel_for(n, grain, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
            std::lock_guard lock(mu);
            ranges.emplace_back(b, e);
        });
        for (qint64 i = 0; i < n; ++i) QCOMPARE(hits[static_cast<size_t>(i)].load(), 1);
        // No chunk below the grain, unless the whole range is one chunk.
        if (ranges.size() > 1)
            for (const auto& [b, e] : ranges)
                QVERIFY2(
                    e - b >= grain,
                    qPrintable(QStringLiteral("chunk [%1, %2) under grain %3").arg(b).arg(e).arg(grain)));
        if (threads == 1 || n < grain) QCOMPARE(static_cast<int>(ranges.size()), 1);
    }

    // A thread held up in its chunk (preempted by the GUI, say) leaves the rest to the others:
    // the caller must not wait for the slow thread's share of the range. The worker's first
    // chunk is held until every other chunk is done, so the test sees the same at any machine
    // speed; were the rest waiting for the worker, the hold would end only at its limit, and
    // the worker would then run more than that one chunk.
    void slowThreadDoesNotHoldTheRest() {
        set_thread_count(2);
        const auto caller = std::this_thread::get_id();
        std::mutex mu;
        std::condition_variable others_done;
        std::map<std::thread::id, int> chunks_by_thread;
        std::atomic<bool> slowed{false};
        int done = 0;
        bool hold_timed_out = false;
        const int64_t n = 8;  // 8 chunks of one index with 2 threads
        parallel_for(n, 1, [&](int64_t b, int64_t e) {
            const auto me = std::this_thread::get_id();
            std::unique_lock lock(mu);
            if (me != caller && !slowed.exchange(true))
                hold_timed_out =
                    !others_done.wait_for(lock, std::chrono::seconds(60), [&] { return done == n - 1; });
            chunks_by_thread[me] += static_cast<int>(e - b);
            if (++done == n - 1) others_done.notify_all();
        });
        int total = 0;
        for (const auto& [id, count] : chunks_by_thread) total += count;
        QCOMPARE(total, 8);
        QVERIFY2(!hold_timed_out, "the other chunks waited for the held worker");
        // The worker was held in its first chunk; the caller did everything else.
        for (const auto& [id, count] : chunks_by_thread)
            if (id != caller)
                QVERIFY2(count <= 1,
                         qPrintable(QStringLiteral("the slowed worker ran %1 chunks").arg(count)));
    }

    void manyJobsBackToBack() {
        set_thread_count(3);
        std::atomic<int64_t> sum{0};
        for (int job = 0; job < 20000; ++job)
            parallel_for(64, 1, [&](int64_t b, int64_t e) {
                int64_t s = 0;
                for (int64_t i = b; i < e; ++i) s += i;
                sum.fetch_add(s);
            });
        QCOMPARE(sum.load(), int64_t{20000} * (63 * 64 / 2));
    }

    void resizeBetweenJobs() {
        for (int round = 0; round < 50; ++round) {
            set_thread_count(1 + round % 4);
            std::atomic<int64_t> count{0};
            parallel_for(1000, 10, [&](int64_t b, int64_t e) { count.fetch_add(e - b); });
            QCOMPARE(count.load(), int64_t{1000});
        }
    }
};

QTEST_GUILESS_MAIN(TestParallel)
#include "test_parallel.moc"
