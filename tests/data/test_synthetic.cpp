// Tests of the synthetic 2-D sets: names, validation, sizes and split, determinism per seed,
// class balance, and that noise-free points lie exactly on each set's defining curve.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <numbers>

#include "core/common/error.h"
#include "core/data/synthetic.h"

using namespace mpwb;

namespace {

bool same(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

// Visits every point of both splits: f(x, y, label), coordinates in Playground units.
template <class F>
void for_each_point(const Dataset& ds, F f) {
    for (const auto* split : {&ds.train_x, &ds.test_x}) {
        const Tensor& y = split == &ds.train_x ? ds.train_y : ds.test_y;
        for (int64_t i = 0; i < split->dim(0); ++i)
            f((*split)[2 * i] * 6.0, (*split)[2 * i + 1] * 6.0, static_cast<int>(y[i]));
    }
}

std::vector<int64_t> class_counts(const Dataset& ds) {
    std::vector<int64_t> counts(static_cast<size_t>(ds.num_classes), 0);
    for_each_point(ds, [&](double, double, int label) { counts.at(static_cast<size_t>(label))++; });
    return counts;
}

template <class E>
QString message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return QString::fromStdString(e.what());
    }
    return "<no exception>";
}

const SyntheticKind kAll[] = {SyntheticKind::Spiral, SyntheticKind::Circles, SyntheticKind::Xor,
                              SyntheticKind::Gauss, SyntheticKind::Moons};

}  // namespace

class TestSynthetic : public QObject {
    Q_OBJECT
private slots:
    void parses_names() {
        QCOMPARE(parse_synthetic_kind("spiral"), SyntheticKind::Spiral);
        QCOMPARE(parse_synthetic_kind("Circles"), SyntheticKind::Circles);
        QCOMPARE(parse_synthetic_kind("circle"), SyntheticKind::Circles);
        QCOMPARE(parse_synthetic_kind("XOR"), SyntheticKind::Xor);
        QCOMPARE(parse_synthetic_kind("gaussian"), SyntheticKind::Gauss);
        QCOMPARE(parse_synthetic_kind("moons"), SyntheticKind::Moons);
        for (SyntheticKind k : kAll) QCOMPARE(parse_synthetic_kind(synthetic_kind_name(k)), k);
        QVERIFY_THROWS_EXCEPTION(ConfigError, parse_synthetic_kind("spirals2"));
        const QString msg = message_of<ConfigError>([] { parse_synthetic_kind("helix"); });
        QVERIFY2(msg.contains("'helix'"), qPrintable(msg));
        QVERIFY2(msg.contains("spiral, circles, xor, gauss, moons"), qPrintable(msg));
    }

    void validates_config() {
        auto bad = [](auto mutate, const char* needle) {
            SyntheticConfig c;
            mutate(c);
            const QString msg = message_of<ConfigError>([&] { make_synthetic(c); });
            QVERIFY2(msg.contains(needle), qPrintable(msg));
        };
        bad([](SyntheticConfig& c) { c.noise = -0.1f; }, "noise");
        bad([](SyntheticConfig& c) { c.noise = 1.5f; }, "noise");
        bad([](SyntheticConfig& c) { c.noise = NAN; }, "noise");
        bad([](SyntheticConfig& c) { c.test_ratio = 0.0; }, "test_ratio");
        bad([](SyntheticConfig& c) { c.test_ratio = 1.0; }, "test_ratio");
        bad([](SyntheticConfig& c) { c.samples = 3; }, "samples");
        bad([](SyntheticConfig& c) { c.classes = 1; }, "classes");
        bad(
            [](SyntheticConfig& c) {
                c.kind = SyntheticKind::Xor;
                c.classes = 3;
            },
            "xor");
        SyntheticConfig ok;
        ok.noise = 1.0f;
        make_synthetic(ok);  // the range ends are valid
    }

    void sizes_and_split() {
        for (SyntheticKind k : kAll) {
            SyntheticConfig c;
            c.kind = k;
            c.samples = 1000;
            c.test_ratio = 0.2;
            c.noise = 0.2f;
            const Dataset ds = make_synthetic(c);
            QCOMPARE(ds.train_x.shape(), (Shape{800, 2}));
            QCOMPARE(ds.train_y.shape(), (Shape{800}));
            QCOMPARE(ds.test_x.shape(), (Shape{200, 2}));
            QCOMPARE(ds.test_y.shape(), (Shape{200}));
            QCOMPARE(ds.sample_shape, (Shape{2}));
            QCOMPARE(ds.num_classes, 2);
            QCOMPARE(ds.class_names.size(), size_t{2});
            QCOMPARE(ds.name, synthetic_kind_name(k));
            for_each_point(ds, [&](double x, double y, int label) {
                QVERIFY(std::isfinite(x) && std::isfinite(y));
                QVERIFY(label == 0 || label == 1);
            });
        }
        SyntheticConfig odd;
        odd.samples = 7;
        odd.test_ratio = 0.5;
        const Dataset ds = make_synthetic(odd);
        QCOMPARE(ds.train_size() + ds.test_size(), int64_t{7});
        QVERIFY(ds.train_size() >= 1 && ds.test_size() >= 1);
    }

    void deterministic_per_seed() {
        for (SyntheticKind k : kAll) {
            SyntheticConfig c;
            c.kind = k;
            c.noise = 0.3f;
            c.seed = 42;
            const Dataset a = make_synthetic(c), b = make_synthetic(c);
            QVERIFY(same(a.train_x, b.train_x) && same(a.train_y, b.train_y));
            QVERIFY(same(a.test_x, b.test_x) && same(a.test_y, b.test_y));
            c.seed = 43;
            const Dataset d = make_synthetic(c);
            QVERIFY2(!same(a.train_x, d.train_x), qPrintable(QString::fromStdString(a.name)));
            QVERIFY(!same(a.test_x, d.test_x));
        }
    }

    void classes_balanced() {
        for (SyntheticKind k : kAll) {
            SyntheticConfig c;
            c.kind = k;
            c.samples = 2000;
            c.noise = 0.1f;
            const auto counts = class_counts(make_synthetic(c));
            for (int64_t n : counts)
                QVERIFY2(
                    n > 850 && n < 1150,
                    qPrintable(QString("%1: %2").arg(QString::fromStdString(synthetic_kind_name(k))).arg(n)));
        }
        // Without noise the classes are exact halves (circles' labels depend on noise).
        SyntheticConfig c;
        c.kind = SyntheticKind::Circles;
        c.samples = 1001;
        const auto counts = class_counts(make_synthetic(c));
        QCOMPARE(counts[0] + counts[1], int64_t{1001});
        QVERIFY(std::abs(counts[0] - counts[1]) <= 1);
        // Both splits hold both classes.
        const Dataset ds = make_synthetic(SyntheticConfig{});
        bool seen[2][2] = {};
        for (int64_t i = 0; i < ds.train_size(); ++i) seen[0][static_cast<int>(ds.train_y[i])] = true;
        for (int64_t i = 0; i < ds.test_size(); ++i) seen[1][static_cast<int>(ds.test_y[i])] = true;
        QVERIFY(seen[0][0] && seen[0][1] && seen[1][0] && seen[1][1]);
    }

    void spiral_on_formula() {
        for (int classes : {2, 3, 5}) {
            SyntheticConfig c;
            c.kind = SyntheticKind::Spiral;
            c.classes = classes;
            c.samples = 300 * classes;
            c.noise = 0.0f;
            const Dataset ds = make_synthetic(c);
            QCOMPARE(ds.num_classes, classes);
            const auto counts = class_counts(ds);
            for (int64_t n : counts) QCOMPARE(n, int64_t{300});
            int64_t points = 0;
            for_each_point(ds, [&](double x, double y, int label) {
                // r = 5 f, angle = 1.75 * 2pi * f + 2pi k/K, x = r sin, y = r cos.
                const double r = std::hypot(x, y);
                QVERIFY(r <= 5.0 + 1e-5);
                const double f = r / 5.0;
                // f = i / 300 for an integer i.
                QVERIFY(std::fabs(f * 300.0 - std::round(f * 300.0)) < 1e-3);
                const double t = 1.75 * 2 * std::numbers::pi * f + 2 * std::numbers::pi * label / classes;
                QVERIFY2(std::fabs(x - r * std::sin(t)) < 1e-3 && std::fabs(y - r * std::cos(t)) < 1e-3,
                         qPrintable(QString("(%1,%2) arm %3").arg(x).arg(y).arg(label)));
                ++points;
            });
            QCOMPARE(points, int64_t{300 * classes});
        }
        // Noise moves points off the curve, by at most noise per coordinate.
        SyntheticConfig c;
        c.noise = 0.5f;
        c.seed = 9;
        const Dataset noisy = make_synthetic(c);
        c.noise = 0.0f;
        QVERIFY(!same(noisy.train_x, make_synthetic(c).train_x));
        double max_x = 0;
        for_each_point(noisy, [&](double x, double y, int) {
            max_x = std::max({max_x, std::fabs(x), std::fabs(y)});
        });
        QVERIFY(max_x <= 5.5 + 1e-4);
    }

    void other_shapes_without_noise() {
        SyntheticConfig c;
        c.samples = 1000;
        c.noise = 0.0f;
        c.kind = SyntheticKind::Circles;
        for_each_point(make_synthetic(c), [](double x, double y, int label) {
            const double r = std::hypot(x, y);
            if (label == 1)
                QVERIFY(r <= 2.5 + 1e-4);
            else
                QVERIFY(r >= 3.5 - 1e-4 && r <= 5.0 + 1e-4);
        });
        c.kind = SyntheticKind::Xor;
        for_each_point(make_synthetic(c), [](double x, double y, int label) {
            QCOMPARE(label, x * y >= 0 ? 1 : 0);
            QVERIFY(std::fabs(x) >= 0.3 - 1e-4 && std::fabs(x) <= 5.3 + 1e-4);
            QVERIFY(std::fabs(y) >= 0.3 - 1e-4 && std::fabs(y) <= 5.3 + 1e-4);
        });
        c.kind = SyntheticKind::Gauss;
        c.samples = 4000;
        double sum[2][2] = {}, sq[2][2] = {};
        int64_t n[2] = {};
        for_each_point(make_synthetic(c), [&](double x, double y, int label) {
            sum[label][0] += x;
            sum[label][1] += y;
            sq[label][0] += x * x;
            sq[label][1] += y * y;
            ++n[label];
        });
        for (int k = 0; k < 2; ++k)
            for (int d = 0; d < 2; ++d) {
                const double mean = sum[k][d] / n[k];
                const double sd = std::sqrt(sq[k][d] / n[k] - mean * mean);
                QVERIFY(std::fabs(mean - (k == 1 ? 2.0 : -2.0)) < 0.1);
                QVERIFY(std::fabs(sd - std::sqrt(0.5)) < 0.05);  // variance 0.5 at noise 0
            }
        c.kind = SyntheticKind::Moons;
        c.samples = 1000;
        for_each_point(make_synthetic(c), [](double x, double y, int label) {
            // Undo the centring and stretch to sklearn's units.
            const double X = x * 0.3 + 0.5, Y = y * 0.3 + 0.25;
            if (label == 0) {
                QVERIFY(std::fabs(std::hypot(X, Y) - 1.0) < 1e-4 && Y >= -1e-4);
            } else {
                QVERIFY(std::fabs(std::hypot(1.0 - X, 0.5 - Y) - 1.0) < 1e-4 && Y <= 0.5 + 1e-4);
            }
        });
    }

    void unit_range() {
        // Noise-free sets lie in [-1, 1]^2 after the documented division by 6.
        for (SyntheticKind k : kAll) {
            if (k == SyntheticKind::Gauss) continue;  // unbounded tails by nature
            SyntheticConfig c;
            c.kind = k;
            const Dataset ds = make_synthetic(c);
            for (const Tensor* t : {&ds.train_x, &ds.test_x})
                for (float v : t->span()) QVERIFY(v >= -1.0f && v <= 1.0f);
        }
    }
};

QTEST_APPLESS_MAIN(TestSynthetic)
#include "test_synthetic.moc"
