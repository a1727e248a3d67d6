// Tests of BatchIterator and gather_rows: each sample once per epoch, order reproducible from
// (seed, epoch) alone, different across epochs and seeds, drop_last, no reallocation of the
// caller's tensors, and an unbiased shuffle.
#include <QtTest>

#include <algorithm>
#include <numeric>

#include "core/common/error.h"
#include "core/data/batcher.h"

using namespace mpwb;

namespace {

// x[i][j] = 10 i + j, y[i] = i: every gathered row can be checked against its label.
void make_data(int64_t n, Tensor& x, Tensor& y) {
    x.resize({n, 3});
    y.resize({n});
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < 3; ++j) x[i * 3 + j] = static_cast<float>(10 * i + j);
        y[i] = static_cast<float>(i);
    }
}

// Labels of one epoch in the order the batches gave them; checks rows match labels.
std::vector<int64_t> run_epoch(BatchIterator& it, int64_t epoch, std::vector<int64_t>* sizes = nullptr) {
    it.start_epoch(epoch);
    Tensor bx, by;
    std::vector<int64_t> seen;
    while (it.next(bx, by)) {
        if (sizes) sizes->push_back(by.dim(0));
        if (bx.dim(0) != by.dim(0) || bx.dim(1) != 3) return {};
        for (int64_t r = 0; r < by.dim(0); ++r) {
            const auto label = static_cast<int64_t>(by[r]);
            for (int64_t j = 0; j < 3; ++j)
                if (bx[r * 3 + j] != static_cast<float>(10 * label + j)) return {};
            if (it.last_indices()[static_cast<size_t>(r)] != label) return {};
            seen.push_back(label);
        }
    }
    return seen;
}

}  // namespace

class TestBatcher : public QObject {
    Q_OBJECT
private slots:
    void every_sample_once() {
        Tensor x, y;
        make_data(103, x, y);
        BatchIterator it(x, y, 10, 7);
        QCOMPARE(it.batches_per_epoch(), int64_t{11});
        for (int64_t e = 0; e < 3; ++e) {
            std::vector<int64_t> sizes;
            auto seen = run_epoch(it, e, &sizes);
            QCOMPARE(seen.size(), size_t{103});
            QCOMPARE(sizes.size(), size_t{11});
            QCOMPARE(sizes.back(), int64_t{3});
            std::sort(seen.begin(), seen.end());
            for (int64_t i = 0; i < 103; ++i) QCOMPARE(seen[static_cast<size_t>(i)], i);
        }
    }

    void drop_last() {
        Tensor x, y;
        make_data(103, x, y);
        BatchIterator it(x, y, 10, 7, true, true);
        QCOMPARE(it.batches_per_epoch(), int64_t{10});
        std::vector<int64_t> sizes;
        auto seen = run_epoch(it, 0, &sizes);
        QCOMPARE(seen.size(), size_t{100});
        for (int64_t s : sizes) QCOMPARE(s, int64_t{10});
        std::sort(seen.begin(), seen.end());
        QVERIFY(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
        // The dropped samples change with the epoch, so none is left out forever.
        std::vector<bool> ever(103, false);
        for (int64_t e = 0; e < 20; ++e)
            for (int64_t v : run_epoch(it, e)) ever[static_cast<size_t>(v)] = true;
        QVERIFY(std::all_of(ever.begin(), ever.end(), [](bool b) { return b; }));
        // Exact multiple: drop_last changes nothing.
        Tensor x2, y2;
        make_data(40, x2, y2);
        QCOMPARE(BatchIterator(x2, y2, 10, 1, true, true).batches_per_epoch(), int64_t{4});
        QCOMPARE(BatchIterator(x2, y2, 10, 1, true, false).batches_per_epoch(), int64_t{4});
        // Batch larger than the set: one short batch, or none with drop_last.
        QCOMPARE(BatchIterator(x2, y2, 64, 1, true, false).batches_per_epoch(), int64_t{1});
        QCOMPARE(BatchIterator(x2, y2, 64, 1, true, true).batches_per_epoch(), int64_t{0});
    }

    void reproducible_by_seed_and_epoch() {
        Tensor x, y;
        make_data(200, x, y);
        BatchIterator a(x, y, 16, 123);
        std::vector<std::vector<int64_t>> orders;
        for (int64_t e = 0; e < 4; ++e) orders.push_back(run_epoch(a, e));
        // A fresh iterator jumping straight to epoch 3 (as a resumed run does) sees the same order.
        BatchIterator b(x, y, 16, 123);
        QCOMPARE(run_epoch(b, 3), orders[3]);
        QCOMPARE(run_epoch(b, 1), orders[1]);
        // Re-running an epoch gives the same order.
        QCOMPARE(run_epoch(a, 0), orders[0]);
        // Epochs differ from each other and from the identity.
        std::vector<int64_t> identity(200);
        std::iota(identity.begin(), identity.end(), 0);
        for (size_t i = 0; i < orders.size(); ++i) {
            QVERIFY(orders[i] != identity);
            for (size_t j = i + 1; j < orders.size(); ++j) QVERIFY(orders[i] != orders[j]);
        }
        // Another seed, another order; the batch size does not change the order.
        BatchIterator c(x, y, 16, 124);
        QVERIFY(run_epoch(c, 0) != orders[0]);
        BatchIterator d(x, y, 7, 123);
        QCOMPARE(run_epoch(d, 2), orders[2]);
        QVERIFY(epoch_seed(1, 0) != epoch_seed(0, 1));
    }

    void no_shuffle_keeps_order() {
        Tensor x, y;
        make_data(25, x, y);
        BatchIterator it(x, y, 8, 5, false);
        std::vector<int64_t> identity(25);
        std::iota(identity.begin(), identity.end(), 0);
        QCOMPARE(run_epoch(it, 0), identity);
        QCOMPARE(run_epoch(it, 4), identity);
    }

    void shuffle_is_uniform() {
        // Where sample 0 lands over many epochs: each of 10 positions ~ 300 times.
        Tensor x, y;
        make_data(10, x, y);
        BatchIterator it(x, y, 10, 99);
        int hist[10] = {};
        for (int64_t e = 0; e < 3000; ++e) {
            it.start_epoch(e);
            const auto& o = it.order();
            hist[std::find(o.begin(), o.end(), 0) - o.begin()]++;
        }
        for (int h : hist) QVERIFY2(h > 230 && h < 370, qPrintable(QString::number(h)));
    }

    void reuses_caller_tensors() {
        Tensor x, y;
        make_data(64, x, y);
        BatchIterator it(x, y, 16, 3);
        Tensor bx, by;
        QVERIFY(it.next(bx, by));
        const float* px = bx.data();
        const float* py = by.data();
        for (int64_t e = 0; e < 3; ++e) {
            it.start_epoch(e);
            while (it.next(bx, by)) {
                QCOMPARE(bx.data(), px);
                QCOMPARE(by.data(), py);
                QCOMPARE(bx.shape(), (Shape{16, 3}));
                QCOMPARE(by.shape(), (Shape{16}));
            }
        }
    }

    void regression_targets_and_images() {
        // y [N, 2] and x [N, 1, 2, 2] gather whole samples.
        Tensor x({5, 1, 2, 2}), y({5, 2});
        for (int64_t i = 0; i < 20; ++i) x[i] = static_cast<float>(i);
        for (int64_t i = 0; i < 10; ++i) y[i] = static_cast<float>(-i);
        BatchIterator it(x, y, 2, 11);
        Tensor bx, by;
        while (it.next(bx, by)) {
            QCOMPARE(bx.rank(), size_t{4});
            QCOMPARE(by.dim(1), int64_t{2});
            for (int64_t r = 0; r < bx.dim(0); ++r) {
                const int64_t s = it.last_indices()[static_cast<size_t>(r)];
                for (int64_t j = 0; j < 4; ++j) QCOMPARE(bx[r * 4 + j], static_cast<float>(s * 4 + j));
                for (int64_t j = 0; j < 2; ++j) QCOMPARE(by[r * 2 + j], static_cast<float>(-(s * 2 + j)));
            }
        }
    }

    void errors() {
        Tensor x, y;
        make_data(10, x, y);
        QVERIFY_THROWS_EXCEPTION(ConfigError, BatchIterator(x, y, 0, 1));
        Tensor y2({9});
        try {
            BatchIterator bad(x, y2, 4, 1);
            QFAIL("expected DataError");
        } catch (const DataError& e) {
            QVERIFY(QString(e.what()).contains("10") && QString(e.what()).contains("9"));
        }
        Tensor dst;
        const int64_t idx[] = {0, 10};
        QVERIFY_THROWS_EXCEPTION(DataError, gather_rows(x, idx, dst));
    }
};

QTEST_APPLESS_MAIN(TestBatcher)
#include "test_batcher.moc"
