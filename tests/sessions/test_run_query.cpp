// Tests of the run queries: list filters against an independent bookkeeping of what each run
// has, configuration diff of flattened JSON paths, series ranges, and downsampling compared
// point by point with a naive computation over random data (gaps, NaN, out-of-order logging).
#include "sessions/run_query.h"
#include "sessions/run_store.h"
#include "sessions/run_writer.h"
#include "core/common/rng.h"
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

using namespace mpwb;
using Kind = StoreError::Kind;

namespace {
std::set<std::int64_t> ids_of(const std::vector<Run>& runs) {
    std::set<std::int64_t> s;
    for (const auto& r : runs) s.insert(r.id);
    return s;
}

struct Point {
    std::int64_t step;
    double value;
};

// Straightforward per-point bucketing, the definition downsample() must match.
std::vector<Bucket> naive(std::vector<Point> pts, std::int64_t lo, std::int64_t hi, int buckets) {
    std::sort(pts.begin(), pts.end(), [](auto& a, auto& b) { return a.step < b.step; });
    std::vector<Bucket> out;
    const long double n = static_cast<long double>(hi - lo + 1);
    for (const auto& p : pts) {
        if (p.step < lo || p.step > hi) continue;
        const auto i =
            static_cast<std::int64_t>(std::floor((p.step - lo) * static_cast<long double>(buckets) / n));
        if (out.empty() || out.back().index != i) {
            Bucket b;
            b.index = i;
            b.first_step = p.step;
            b.first = p.value;
            b.min = b.max = NAN;
            out.push_back(b);
        }
        auto& b = out.back();
        b.last_step = p.step;
        b.last = p.value;
        if (!std::isnan(p.value)) {
            b.min = std::isnan(b.min) ? p.value : std::min(b.min, p.value);
            b.max = std::isnan(b.max) ? p.value : std::max(b.max, p.value);
        }
        ++b.count;
    }
    return out;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }
}  // namespace

class TestRunQuery : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int n_ = 0;
    std::string fresh() { return dir_.filePath(QString("q_%1.sqlite").arg(++n_)).toStdString(); }

private slots:
    void filters() {
        RunStore store(fresh());
        auto make = [&](const char* name, const char* precision, const char* dataset, const char* config) {
            RunInfo i;
            i.name = name;
            i.precision = precision;
            i.dataset = dataset;
            i.config_json = config;
            return store.create_run(i);
        };
        const auto a = make("spiral fp32 baseline", "fp32", "spiral", R"({"optimizer":{"name":"sgd"}})");
        const auto b = make("spiral fp16", "fp16-mixed", "spiral", R"({"optimizer":{"name":"adamw"}})");
        const auto c =
            make("fashion bf16", "bf16-mixed", "fashion-mnist", R"({"optimizer":{"name":"adamw"}})");
        const auto d = make("fashion fp16 pure 100%", "fp16-pure", "fashion-mnist", "{}");
        const auto e = make("deleted one", "fp16-mixed", "spiral", "{}");
        store.set_status(a, RunStatus::Finished);
        store.set_status(b, RunStatus::Finished);
        store.set_status(c, RunStatus::Failed);
        store.set_tag(a, "paper", "fig1");
        store.set_tag(b, "paper", "fig2");
        store.set_tag(c, "paper", "fig2");
        store.set_tag(d, "baseline");
        store.set_note(d, "Loss went NaN at step 40");
        store.set_status(e, RunStatus::Stopped);  // a RUNNING run with a live writer cannot be deleted
        store.soft_delete(e);

        using S = std::set<std::int64_t>;
        QCOMPARE(ids_of(store.list_runs()), (S{a, b, c, d}));
        RunFilter f;
        f.include_deleted = true;
        QCOMPARE(ids_of(store.list_runs(f)), (S{a, b, c, d, e}));
        f = {};
        f.precision = "fp16-mixed";
        QCOMPARE(ids_of(store.list_runs(f)), (S{b}));
        f = {};
        f.dataset = "spiral";
        QCOMPARE(ids_of(store.list_runs(f)), (S{a, b}));
        f.status = RunStatus::Finished;
        QCOMPARE(ids_of(store.list_runs(f)), (S{a, b}));
        f = {};
        f.status = RunStatus::Running;
        QCOMPARE(ids_of(store.list_runs(f)), (S{d}));
        f = {};
        set_tag_filter(f, "paper=fig2");
        QCOMPARE(ids_of(store.list_runs(f)), (S{b, c}));
        set_tag_filter(f, "paper");
        QCOMPARE(ids_of(store.list_runs(f)), (S{a, b, c}));
        set_tag_filter(f, "baseline");
        QCOMPARE(ids_of(store.list_runs(f)), (S{d}));
        f = {};
        f.text = "FASHION";  // case-insensitive name match
        QCOMPARE(ids_of(store.list_runs(f)), (S{c, d}));
        f.text = "nan at step";  // note
        QCOMPARE(ids_of(store.list_runs(f)), (S{d}));
        f.text = "adamw";  // config
        QCOMPARE(ids_of(store.list_runs(f)), (S{b, c}));
        f.text = "100%";  // LIKE wildcards are literal
        QCOMPARE(ids_of(store.list_runs(f)), (S{d}));
        f.text = "0%";
        QCOMPARE(ids_of(store.list_runs(f)), (S{d}));
        f.text = "%";
        QCOMPARE(ids_of(store.list_runs(f)), (S{d}));
        f = {};
        f.limit = 2;
        const auto newest = store.list_runs(f);
        QCOMPARE(newest.size(), std::size_t(2));
        QCOMPARE(newest[0].id, d);  // newest first
        // Details come with the list.
        f = {};
        f.precision = "fp32";
        const auto r = store.list_runs(f).front();
        QCOMPARE(r.tags.at("paper"), std::string("fig1"));
        QCOMPARE(r.name, std::string("spiral fp32 baseline"));
    }

    void configDiff() {
        RunStore store(fresh());
        auto make = [&](const char* config) {
            RunInfo i;
            i.config_json = config;
            return store.create_run(i);
        };
        const auto a = make(
            R"({"optimizer":{"lr":0.1,"name":"sgd"},"layers":[{"units":8},{"units":4}],"seed":1,"scaler":{}})");
        const auto b = make(
            R"({"optimizer":{"lr":0.1,"name":"sgd"},"layers":[{"units":8},{"units":16}],"seed":1,"scaler":{}})");
        const auto c = make(
            R"({"optimizer":{"lr":0.01,"name":"sgd"},"layers":[{"units":8},{"units":4}],"seed":1,"scaler":{},"extra":true})");
        auto diff = store.config_diff({a, b, c});
        std::vector<std::string> paths;
        for (const auto& d : diff) paths.push_back(d.path);
        QCOMPARE(paths, (std::vector<std::string>{"extra", "layers[1].units", "optimizer.lr"}));
        QCOMPARE(diff[0].values[0].has_value(), false);
        QCOMPARE(*diff[0].values[2], std::string("true"));
        QCOMPARE(*diff[1].values[1], std::string("16"));
        QCOMPARE(*diff[2].values[2], std::string("0.01"));
        QVERIFY(store.config_diff({a, a}).empty());
        QCOMPARE(store.config_diff({a, b}).size(), std::size_t(1));
        const auto flat = flatten_config(R"({"a":{"b":[1,{"c":null}]},"e":[]})");
        QCOMPARE(flat.size(), std::size_t(3));
        QCOMPARE(flat.at("a.b[0]"), std::string("1"));
        QCOMPARE(flat.at("a.b[1].c"), std::string("null"));
        QCOMPARE(flat.at("e"), std::string("[]"));
        const auto bad = make("{not json");
        EXPECT_STORE_ERROR(store.config_diff({a, bad}), Kind::Invalid,
                           "configuration of run " + std::to_string(bad) + " is not valid JSON");
        EXPECT_STORE_ERROR(store.config_diff({a, 4242}), Kind::NotFound, "run 4242 does not exist");
    }

    void downsampleMatchesNaive() {
        const auto path = fresh();
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        Rng rng(2024);
        std::vector<Point> pts;
        std::int64_t step = 3;
        for (int i = 0; i < 20000; ++i) {
            // Dense stretches and gaps, so blocks are full, sparse and straddling.
            step += (rng.below(10) == 0) ? 1 + static_cast<std::int64_t>(rng.below(200)) : 1;
            double v = rng.normal();
            if (rng.below(500) == 0) v = std::numeric_limits<double>::quiet_NaN();
            pts.push_back({step, v});
        }
        // Logged in shuffled chunks across many batches: block summaries must merge correctly.
        std::vector<Point> order = pts;
        for (std::size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
        {
            RunWriter::Options o;
            o.max_pending_rows = 777;
            RunWriter w(path, id, o);
            for (const auto& p : order) w.log_metric("loss", p.step, 0, p.value);
            QVERIFY(w.flush());
        }
        const std::int64_t lo = pts.front().step, hi = pts.back().step;
        struct Case {
            int buckets;
            std::int64_t lo, hi;
            bool explicit_range;
        };
        const std::vector<Case> cases = {{1, lo, hi, false},         {7, lo, hi, false},
                                         {100, lo, hi, false},       {2000, lo, hi, false},
                                         {50000, lo, hi, false},     {333, lo + 1000, hi - 5000, true},
                                         {64, 0, hi + 100000, true}, {10, hi + 1, hi + 50, true}};
        for (const auto& c : cases) {
            const auto got = c.explicit_range ? store.downsample(id, "loss", c.buckets, c.lo, c.hi)
                                              : store.downsample(id, "loss", c.buckets);
            const auto want = naive(pts, c.lo, c.hi, c.buckets);
            QCOMPARE(got.size(), want.size());
            std::int64_t total = 0;
            for (std::size_t i = 0; i < got.size(); ++i) {
                const auto& g = got[i];
                const auto& w = want[i];
                QCOMPARE(g.index, w.index);
                QCOMPARE(g.count, w.count);
                QCOMPARE(g.first_step, w.first_step);
                QCOMPARE(g.last_step, w.last_step);
                QVERIFY(same(g.first, w.first));
                QVERIFY(same(g.last, w.last));
                QVERIFY(same(g.min, w.min));
                QVERIFY(same(g.max, w.max));
                QVERIFY(g.step_lo <= g.first_step && g.last_step <= g.step_hi);
                total += g.count;
            }
            if (!c.explicit_range) QCOMPARE(total, std::int64_t(pts.size()));
        }
        QVERIFY(store.downsample(id, "missing", 10).empty());
        EXPECT_STORE_ERROR(store.downsample(id, "loss", 0), Kind::Invalid, "at least 1 bucket");
    }

    void seriesRanges() {
        const auto path = fresh();
        RunStore store(path);
        const auto id = store.create_run(RunInfo{});
        {
            RunWriter w(path, id);
            for (int i = 0; i < 100; ++i) w.log_metric("acc", i * 2, 100.0 + i, i * 0.01);
            w.log_metric("loss", 1, 1, 1);
            QVERIFY(w.flush());
        }
        const auto s = store.series(id, "acc", 10, 20);
        QCOMPARE(s.size(), std::size_t(6));
        QCOMPARE(s.front().step, 10LL);
        QCOMPARE(s.front().wall_time, 105.0);
        QCOMPARE(s.back().value, 10 * 0.01);
        QCOMPARE(store.series(id, "acc").size(), std::size_t(100));
        QCOMPARE(store.metric_keys(id), (std::vector<std::string>{"acc", "loss"}));
        QCOMPARE(store.find_run_by_uuid(store.get_run(id).uuid).value_or(-1), id);
        QVERIFY(!store.find_run_by_uuid("nope"));
    }
};

QTEST_APPLESS_MAIN(TestRunQuery)
#include "test_run_query.moc"
