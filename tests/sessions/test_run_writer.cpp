// Tests of RunWriter: batched commits give exactly the rows logged, latest_metrics holds the
// right last/min/max/count (NaN and inf included, steps out of order), histograms and events
// round-trip, commits happen on the timer and on the row threshold without flush(), and a
// database locked by another process makes the writer retry and report, never lose or
// duplicate rows, and a full disk stops it at once (full_disk_vfs.h), saying why.
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "core/common/rng.h"
#include "full_disk_vfs.h"
#include "test_support.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

using namespace mpwb;
using namespace std::chrono_literals;
using testsupport::Raw;
using Kind = StoreError::Kind;

class TestRunWriter : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    std::string fresh() { return dir_.filePath(QString("w_%1.sqlite").arg(++n_)).toStdString(); }

    static bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds limit) {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < end) {
            if (cond()) return true;
            std::this_thread::sleep_for(10ms);
        }
        return cond();
    }

private slots:
    void batchingCountsAndLatest() {
        const auto path = fresh();
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        struct Expect {
            std::int64_t count = 0, last_step = -1;
            double last = 0, mn = NAN, mx = NAN;
        };
        std::map<std::string, Expect> expect;
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        {
            RunWriter::Options o;
            o.max_pending_rows = 1000;
            RunWriter w(path, id, o);
            Rng rng(5);
            const char* keys[] = {"loss", "acc", "scale"};
            for (int i = 0; i < 30000; ++i) {
                const std::string key = keys[i % 3];
                // "scale" is logged with steps running backwards: latest = highest step, not last call.
                const std::int64_t step = key == "scale" ? 20000 - i / 3 : i / 3;
                double v = rng.uniform(-100.f, 100.f);
                if (key == "loss" && i % 997 == 0) v = nan;
                if (key == "acc" && i == 3001) v = inf;
                w.log_metric(key, step, 1e9 + i, v);
                auto& e = expect[key];
                ++e.count;
                if (step >= e.last_step) {
                    e.last_step = step;
                    e.last = v;
                }
                if (!std::isnan(v)) {
                    e.mn = std::isnan(e.mn) ? v : std::min(e.mn, v);
                    e.mx = std::isnan(e.mx) ? v : std::max(e.mx, v);
                }
            }
            QVERIFY(w.flush());
            QCOMPARE(w.committed_rows(), 30000ULL);
            QCOMPARE(w.pending_rows(), 0ULL);
            QVERIFY(!w.last_error());
        }
        Raw raw(path);
        QCOMPARE(raw.integer("SELECT count(*) FROM metrics"), 30000LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM metrics WHERE value IS NULL"),
                 raw.integer("SELECT count(*) FROM metrics WHERE key='loss' AND value IS NULL"));
        const Run r = store.get_run(id);
        QCOMPARE(r.latest.size(), std::size_t(3));
        for (const auto& [key, e] : expect) {
            const auto& lm = r.latest.at(key);
            QCOMPARE(lm.count, e.count);
            QCOMPARE(lm.step, e.last_step);
            QCOMPARE(lm.value, e.last);
            QCOMPARE(lm.min, e.mn);
            QCOMPARE(lm.max, e.mx);
            // The same figures straight from the series table.
            QCOMPARE(raw.integer("SELECT count(*) FROM metrics WHERE key='" + key + "'"), e.count);
        }
        QCOMPARE(r.latest.at("acc").max, inf);
        // A key whose first committed batch held only NaN: min/max start from the next value.
        {
            RunWriter w(path, id);
            w.log_metric("nanfirst", 0, 0, nan);
            QVERIFY(w.flush());
            QVERIFY(std::isnan(store.get_run(id).latest.at("nanfirst").min));
            w.log_metric("nanfirst", 1, 1, 3.0);
            w.log_metric("nanfirst", 2, 2, -1.0);
            QVERIFY(w.flush());
        }
        const auto nf = store.get_run(id).latest.at("nanfirst");
        QCOMPARE(nf.min, -1.0);
        QCOMPARE(nf.max, 3.0);
        QCOMPARE(nf.count, 3LL);
        QCOMPARE(nf.value, -1.0);
        QCOMPARE(r.latest.at("scale").step, 20000LL);
    }

    void histogramsAndEvents() {
        const auto path = fresh();
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        {
            RunWriter w(path, id);
            for (int step = 0; step < 50; step += 10) {
                for (const char* layer : {"fc1", "fc2"}) {
                    std::vector<std::uint8_t> blob;
                    for (int k = 0; k < step + 3; ++k)
                        blob.push_back(static_cast<std::uint8_t>(k * 7 + step));
                    w.log_histogram(step, layer, "weight_grad", blob);
                }
            }
            w.log_histogram(60, "fc1", "act_grad", {});
            w.log_event(12, 5.5, "scaler", R"({"scale":32768,"reason":"overflow"})");
            w.log_event(3, 4.0, "user", R"({"lr":0.01})");
            w.log_event(20, 6.0, "scaler", "");
            QVERIFY(w.finish(RunStatus::Finished));
        }
        const auto all = store.histograms(id);
        QCOMPARE(all.size(), std::size_t(11));
        const auto some = store.histograms(id, 10, 30, "fc2");
        QCOMPARE(some.size(), std::size_t(3));
        for (const auto& h : some) {
            QCOMPARE(h.layer, std::string("fc2"));
            QCOMPARE(h.blob.size(), std::size_t(h.step + 3));
            for (std::size_t k = 0; k < h.blob.size(); ++k)
                QCOMPARE(int(h.blob[k]), int(static_cast<std::uint8_t>(k * 7 + h.step)));
        }
        const auto empty = store.histograms(id, {}, {}, "", "act_grad");
        QCOMPARE(empty.size(), std::size_t(1));
        QVERIFY(empty[0].blob.empty());
        const auto ev = store.events(id);
        QCOMPARE(ev.size(), std::size_t(3));
        QCOMPARE(ev[0].kind, std::string("user"));  // ordered by step
        QCOMPARE(ev[1].json, std::string(R"({"scale":32768,"reason":"overflow"})"));
        QCOMPARE(ev[2].json, std::string("{}"));
        QCOMPARE(store.events(id, "scaler").size(), std::size_t(2));
        const Run r = store.get_run(id);
        QCOMPARE(r.status, RunStatus::Finished);
        QVERIFY(r.ended && r.started && *r.ended >= *r.started);
    }

    void commitsWithoutFlush() {
        const auto path = fresh();
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        RunWriter::Options timer;
        timer.commit_interval = 40ms;
        timer.max_pending_rows = 1000000;
        {
            RunWriter w(path, id, timer);
            for (int i = 0; i < 10; ++i) w.log_metric("loss", i, i, i);
            QVERIFY(
                wait_for([&] { return w.committed_rows() == 10; }, 120s));  // a state: returns once it holds
        }
        RunWriter::Options threshold;
        threshold.commit_interval = std::chrono::hours(1);
        threshold.max_pending_rows = 100;
        RunWriter w(path, id, threshold);
        for (int i = 0; i < 1000; ++i) w.log_metric("acc", i, i, i);
        QVERIFY(wait_for([&] { return w.committed_rows() >= 900; }, 120s));
        QVERIFY(w.flush());
        QCOMPARE(w.committed_rows(), 1000ULL);
    }

    void lockedDatabaseRetriesWithoutLoss() {
        const auto path = fresh();
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        RunWriter::Options o;
        o.busy_timeout_ms = 50;
        o.retry_delay = 20ms;
        o.commit_interval = 20ms;
        RunWriter w(path, id, o);
        for (int i = 0; i < 500; ++i) w.log_metric("loss", i, i, i);
        QVERIFY(w.flush());
        Raw other(path);
        QCOMPARE(other.exec("BEGIN EXCLUSIVE; UPDATE runs SET name='held' WHERE id=" + std::to_string(id)),
                 SQLITE_OK);
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 500; i < 5000; ++i) w.log_metric("loss", i, i, i);
        w.log_event(1, 1, "user", "{}");
        // Logging never waited on the lock: had each append waited out the 50 ms busy timeout,
        // 4500 would take 225 s; a tenth of that leaves room for any machine's speed.
        QVERIFY(std::chrono::steady_clock::now() - t0 <
                4500 * std::chrono::milliseconds(o.busy_timeout_ms) / 10);
        QVERIFY(!w.flush(400ms));
        QVERIFY(w.is_failing());
        QVERIFY(w.failed_commits() >= 1);
        QVERIFY(w.last_error().has_value());
        QVERIFY2(
            w.last_error()->find("database " + path + " is locked by another process") != std::string::npos,
            w.last_error()->c_str());
        QCOMPARE(w.pending_rows(), 4501ULL);
        QCOMPARE(other.exec("COMMIT"), SQLITE_OK);
        QVERIFY(w.flush(120s));
        QVERIFY(!w.is_failing());
        QCOMPARE(w.pending_rows(), 0ULL);
        Raw raw(path);
        QCOMPARE(raw.integer("SELECT count(*) FROM metrics"), 5000LL);
        QCOMPARE(raw.integer("SELECT count(DISTINCT step) FROM metrics"), 5000LL);
        QCOMPARE(raw.integer("SELECT count FROM latest_metrics WHERE key='loss'"), 5000LL);
        QCOMPARE(raw.integer("SELECT count(*) FROM events"), 1LL);
        QCOMPARE(store.get_run(id).name, std::string("held"));
    }

    // Issue 24: a full disk was retried every 250 ms until finish() gave up after 30 s. It fails
    // every retry the same way, so the writer stops at the first failed commit: flush and finish
    // return at once, later rows are dropped and counted, the committed rows stay.
    void fullDiskStopsTheWriterAtOnce() {
        testsupport::full_disk::Filler disk;
        const auto path = fresh();
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        RunWriter::Options o;
        o.commit_interval = 20ms;
        RunWriter w(path, id, o);
        for (int i = 0; i < 100; ++i) w.log_metric("loss", i, i, i);
        QVERIFY(w.flush());
        QCOMPARE(w.committed_step(), std::int64_t(99));
        disk.fill();
        for (int i = 100; i < 200; ++i) w.log_metric("loss", i, i, i);
        // Waits for the writer's state, not for time: without the stop this would wait out the hour.
        QVERIFY(!w.flush(std::chrono::hours(1)));
        QVERIFY(w.has_stopped());
        QVERIFY(w.last_error().has_value());
        QVERIFY2(w.last_error()->find("the disk holding " + path + " is full") != std::string::npos,
                 w.last_error()->c_str());
        QCOMPARE(w.lost_rows(), std::uint64_t(100));
        QCOMPARE(w.pending_rows(), std::uint64_t(0));
        w.log_metric("loss", 200, 200, 200);
        w.log_event(200, 200, "user", "{}");
        QCOMPARE(w.lost_rows(), std::uint64_t(102));
        QCOMPARE(w.pending_rows(), std::uint64_t(0));
        QVERIFY(!w.finish(RunStatus::Finished, std::chrono::hours(1)));
        QCOMPARE(w.committed_step(), std::int64_t(99));
        disk.free();
        QCOMPARE(store.series(id, "loss").size(), std::size_t(100));
        QCOMPARE(store.get_run(id).status, RunStatus::Running);  // the writer wrote no status
    }

    void destructorCommitsPending() {
        const auto path = fresh();
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        {
            RunWriter::Options o;
            o.commit_interval = std::chrono::hours(1);
            RunWriter w(path, id, o);
            for (int i = 0; i < 321; ++i) w.log_metric("loss", i, i, i);
        }
        QCOMPARE(store.series(id, "loss").size(), std::size_t(321));
        QCOMPARE(store.get_run(id).status, RunStatus::Running);
    }

    void badRun() {
        const auto path = fresh();
        { RunStore store(path); }
        EXPECT_STORE_ERROR(RunWriter w(path, 12345), Kind::NotFound, "run 12345 does not exist");
    }
};

QTEST_APPLESS_MAIN(TestRunWriter)
#include "test_run_writer.moc"
