// Tests of normalisation (statistics from the train split only, applied to both) and of the
// finiteness checks.
#include <QtTest>

#include <cmath>

#include "core/common/error.h"
#include "core/data/normalize.h"

using namespace mpwb;

namespace {

template <class E>
QString message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return QString::fromStdString(e.what());
    }
    return "<no exception>";
}

Dataset make_two_feature_set() {
    // Feature 0: train 1,2,3,4 (mean 2.5, std sqrt(1.25)); feature 1: train 10,10,30,30
    // (mean 20, std 10). Test values far away, so test-derived stats would differ.
    Dataset ds;
    ds.name = "toy";
    ds.sample_shape = {2};
    ds.num_classes = 2;
    ds.train_x.resize({4, 2});
    const float tr[] = {1, 10, 2, 10, 3, 30, 4, 30};
    for (int i = 0; i < 8; ++i) ds.train_x[i] = tr[i];
    ds.test_x.resize({2, 2});
    const float te[] = {100, -50, 200, 50};
    for (int i = 0; i < 4; ++i) ds.test_x[i] = te[i];
    ds.train_y = Tensor({4}, 0.0f);
    ds.test_y = Tensor({2}, 1.0f);
    return ds;
}

}  // namespace

class TestNormalize : public QObject {
    Q_OBJECT
private slots:
    void per_feature_uses_train_stats() {
        Dataset ds = make_two_feature_set();
        const NormStats st = normalize_dataset(ds, NormalizeMode::PerFeature);
        QCOMPARE(st.mean.size(), size_t{2});
        QVERIFY(std::fabs(st.mean[0] - 2.5f) < 1e-6f);
        QVERIFY(std::fabs(st.mean[1] - 20.0f) < 1e-5f);
        QVERIFY(std::fabs(st.stddev[0] - std::sqrt(1.25f)) < 1e-6f);
        QVERIFY(std::fabs(st.stddev[1] - 10.0f) < 1e-5f);
        // Train columns: mean 0, std 1.
        for (int f = 0; f < 2; ++f) {
            double s = 0, sq = 0;
            for (int i = 0; i < 4; ++i) {
                s += ds.train_x[i * 2 + f];
                sq += ds.train_x[i * 2 + f] * ds.train_x[i * 2 + f];
            }
            QVERIFY(std::fabs(s / 4) < 1e-6);
            QVERIFY(std::fabs(sq / 4 - 1.0) < 1e-5);
        }
        // Test transformed with the train statistics.
        QVERIFY(std::fabs(ds.test_x[0] - (100.0f - 2.5f) / std::sqrt(1.25f)) < 1e-3f);
        QVERIFY(std::fabs(ds.test_x[1] - (-50.0f - 20.0f) / 10.0f) < 1e-5f);
        QVERIFY(std::fabs(ds.test_x[3] - (50.0f - 20.0f) / 10.0f) < 1e-5f);
    }

    void global_and_per_channel() {
        Dataset ds = make_two_feature_set();
        const NormStats st = normalize_dataset(ds, NormalizeMode::Global);
        QCOMPARE(st.mean.size(), size_t{1});
        // All 8 train values: mean 11.25.
        double mean = (1 + 10 + 2 + 10 + 3 + 30 + 4 + 30) / 8.0, var = 0;
        for (float v : {1, 10, 2, 10, 3, 30, 4, 30}) var += (v - mean) * (v - mean);
        const double sd = std::sqrt(var / 8);
        QVERIFY(std::fabs(st.mean[0] - mean) < 1e-5);
        QVERIFY(std::fabs(st.stddev[0] - sd) < 1e-4);
        QVERIFY(std::fabs(ds.test_x[2] - (200 - mean) / sd) < 1e-3);

        // [N, C=2, 2, 2]: channel 0 holds 0..3 + 8n, channel 1 all 5.
        Tensor x({3, 2, 2, 2});
        double csum = 0, csq = 0;
        for (int n = 0; n < 3; ++n)
            for (int i = 0; i < 4; ++i) {
                x[n * 8 + i] = static_cast<float>(i + 8 * n);
                x[n * 8 + 4 + i] = 5.0f;
                csum += i + 8 * n;
                csq += double(i + 8 * n) * (i + 8 * n);
            }
        const NormStats ch = compute_norm_stats(x, NormalizeMode::PerChannel);
        QCOMPARE(ch.mean.size(), size_t{2});
        const double cm = csum / 12, csd = std::sqrt(csq / 12 - cm * cm);
        QVERIFY(std::fabs(ch.mean[0] - cm) < 1e-5);
        QVERIFY(std::fabs(ch.stddev[0] - csd) < 1e-4);
        QCOMPARE(ch.mean[1], 5.0f);
        QCOMPARE(ch.stddev[1], 1.0f);  // constant channel: std 1, maps to 0
        apply_norm_stats(x, ch);
        QCOMPARE(x[4], 0.0f);
        QVERIFY(std::fabs(x[8 + 1] - (9 - cm) / csd) < 1e-5);

        const NormStats pf = compute_norm_stats(x, NormalizeMode::PerFeature);
        QCOMPARE(pf.mean.size(), size_t{8});
    }

    void shape_mismatch() {
        Dataset ds = make_two_feature_set();
        const NormStats st = compute_norm_stats(ds.train_x, NormalizeMode::PerFeature);
        Tensor other({3, 3});
        const QString msg = message_of<DataError>([&] { apply_norm_stats(other, st); });
        QVERIFY2(msg.contains("[2]") && msg.contains("[3]"), qPrintable(msg));
        QVERIFY_THROWS_EXCEPTION(DataError, compute_norm_stats(Tensor(), NormalizeMode::Global));
    }

    void check_finite_names_part_and_index() {
        Tensor t({4, 3}, 1.0f);
        check_finite(t, "clean");
        t[7] = NAN;
        QString msg = message_of<DataError>([&] { check_finite(t, "fashion train x"); });
        QVERIFY2(msg.contains("fashion train x") && msg.contains("NaN") && msg.contains("index 7") &&
                     msg.contains("sample 2"),
                 qPrintable(msg));
        t[7] = 1.0f;
        t[10] = -INFINITY;
        t[11] = NAN;
        msg = message_of<DataError>([&] { check_finite(t, "y"); });
        QVERIFY2(msg.contains("-inf") && msg.contains("index 10"), qPrintable(msg));

        Dataset ds = make_two_feature_set();
        check_dataset_finite(ds);
        ds.test_x[3] = INFINITY;
        msg = message_of<DataError>([&] { check_dataset_finite(ds); });
        QVERIFY2(msg.contains("'toy' test x") && msg.contains("index 3"), qPrintable(msg));
    }
};

QTEST_APPLESS_MAIN(TestNormalize)
#include "test_normalize.moc"
