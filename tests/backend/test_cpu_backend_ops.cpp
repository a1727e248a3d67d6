// Op-by-op tests of the CPU backend in the manner of ggml's test-backend-ops: every op of
// core/backend/backend.h against the float64 naive loops of tests/backend/reference_ops.h, by
// relative error (FP32 ~1e-5); reduced-format GEMM against the float64 product of the rounded
// operands; convolution sized so the im2col buffer is split into several chunks; NaN and inf
// handling; and results that are bit for bit the same with one thread and with two.
#include <QtTest/QtTest>

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/backend/backend.h"
#include "core/common/parallel.h"
#include "core/common/rng.h"
#include "core/common/error.h"
#include "core/numeric/format.h"
#include "tests/common/test_support.h"
#include "tests/backend/reference_ops.h"

using namespace mpwb;
using ref::Vec;

namespace {

std::vector<float> random_vec(Rng& rng, int64_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = rng.uniform(lo, hi);
    return v;
}

// Values at least `gap` away from zero (no ReLU kink inside a rounding error).
std::vector<float> away_from_zero(Rng& rng, int64_t n, float lo, float hi, float gap) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) {
        do x = rng.uniform(lo, hi);
        while (std::fabs(x) < gap);
    }
    return v;
}

Vec dbl(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// Largest |got - ref| / (|ref| + rms(ref)): relative where values are large, and measured
// against the typical magnitude where a sum cancels to near zero. NaN counts as infinite.
double rel_error(const float* got, const Vec& ref, int64_t* worst = nullptr) {
    double rms = 0;
    for (double r : ref) rms += r * r;
    rms = std::sqrt(rms / static_cast<double>(std::max<size_t>(ref.size(), 1)));
    if (rms == 0) rms = 1e-30;
    double max_err = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double e = std::fabs(static_cast<double>(got[i]) - ref[i]) / (std::fabs(ref[i]) + rms);
        if (!(e <= max_err)) {
            max_err = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
            if (worst) *worst = static_cast<int64_t>(i);
        }
    }
    return max_err;
}

#define EXPECT_CLOSE(what, got, ref, tol)                                                                    \
    do {                                                                                                     \
        int64_t worst_ = -1;                                                                                 \
        const double err_ = rel_error((got), (ref), &worst_);                                                \
        QVERIFY2(err_ <= (tol), qPrintable(QString("%1: relative error %2 > %3 at %4 (got %5, expected %6)") \
                                               .arg(QString::fromStdString(what))                            \
                                               .arg(err_)                                                    \
                                               .arg(tol)                                                     \
                                               .arg(worst_)                                                  \
                                               .arg(worst_ >= 0 ? double((got)[worst_]) : 0.0, 0, 'g', 9)    \
                                               .arg(worst_ >= 0 ? (ref)[size_t(worst_)] : 0.0, 0, 'g', 9))); \
    } while (0)

std::string conv_name(const ConvGeometry& g) {
    return "conv n" + std::to_string(g.batch) + " c" + std::to_string(g.in_channels) + " " +
           std::to_string(g.in_h) + "x" + std::to_string(g.in_w) + " oc" + std::to_string(g.out_channels) +
           " k" + std::to_string(g.kernel_h) + " s" + std::to_string(g.stride) + " p" +
           std::to_string(g.padding);
}

// A float buffer whose last element ends right before an inaccessible page, so reading one
// element past the end faults instead of passing unnoticed.
class GuardedBuffer {
public:
    explicit GuardedBuffer(size_t count) {
        page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        const size_t bytes = count * sizeof(float);
        data_pages_ = (bytes + page_ - 1) / page_;
        base_ = static_cast<char*>(mmap(nullptr, (data_pages_ + 1) * page_, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        mprotect(base_ + data_pages_ * page_, page_, PROT_NONE);
        data_ = reinterpret_cast<float*>(base_ + data_pages_ * page_ - bytes);
    }
    ~GuardedBuffer() { munmap(base_, (data_pages_ + 1) * page_); }
    float* data() { return data_; }

private:
    size_t page_ = 0, data_pages_ = 0;
    char* base_ = nullptr;
    float* data_ = nullptr;
};

}  // namespace

class TestCpuBackendOps : public QObject {
    Q_OBJECT

    std::unique_ptr<Backend> be_ = make_cpu_backend();
    Rng rng_{12345};

    // One GEMM case against the float64 product of the operands rounded to `format`. The bound
    // per element is FP32 accumulation: k * 2^-24 * sum |a b| (times |alpha|) plus the beta term.
    void check_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta, Format format,
                    int64_t pad = 0) {
        const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
        auto a = random_vec(rng_, (ta ? k : m) * lda, -2, 2);
        auto b = random_vec(rng_, (tb ? n : k) * ldb, -2, 2);
        auto c = random_vec(rng_, m * ldc, -1, 1);
        std::vector<float> ar(a.size()), br(b.size());
        round_to_format(format, a.data(), ar.data(), a.size());
        round_to_format(format, b.data(), br.data(), b.size());
        Vec ad = dbl(ar), bd = dbl(br), cd = dbl(c), unrounded = dbl(c);
        ref::gemm(ta, tb, m, n, k, alpha, ad, lda, bd, ldb, beta, cd, ldc);
        ref::gemm(ta, tb, m, n, k, alpha, dbl(a), lda, dbl(b), ldb, beta, unrounded, ldc);
        auto got = c;
        be_->gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, got.data(), ldc, format);
        const std::string what = "gemm " + std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " " +
                                 std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " +
                                 format_name(format);
        double max_off_unrounded = 0;
        for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n + pad; ++j) {
                const size_t idx = static_cast<size_t>(i * ldc + j);
                if (j >= n) {  // the gap between rows of C belongs to someone else
                    QVERIFY2(got[idx] == c[idx],
                             qPrintable(QString::fromStdString(what + ": wrote into C's padding")));
                    continue;
                }
                const double bound =
                    2.0 * static_cast<double>(k + 2) * 0x1.0p-24 *
                        (std::fabs(alpha) * ref::gemm_abs_sum(ta, tb, i, j, k, ad, lda, bd, ldb) +
                         std::fabs(beta * c[idx])) +
                    1e-30;
                const double err = std::fabs(got[idx] - cd[idx]);
                QVERIFY2(err <= bound,
                         qPrintable(QString("%1: C[%2,%3] = %4, float64 product of rounded operands %5, "
                                            "error %6 > bound %7")
                                        .arg(QString::fromStdString(what))
                                        .arg(i)
                                        .arg(j)
                                        .arg(double(got[idx]), 0, 'g', 9)
                                        .arg(cd[idx], 0, 'g', 12)
                                        .arg(err)
                                        .arg(bound)));
                max_off_unrounded = std::max(max_off_unrounded, std::fabs(got[idx] - unrounded[idx]) / bound);
            }
        }
        // A reduced format must really round: the result must differ from the unrounded
        // product by more than accumulation error somewhere.
        if (format != Format::FP32)
            QVERIFY2(max_off_unrounded > 4,
                     qPrintable(QString::fromStdString(
                         what + ": result indistinguishable from unrounded operands")));
    }

    void check_conv(const ConvGeometry& g, Format format = Format::FP32) {
        const int64_t xn = g.batch * g.in_channels * g.in_h * g.in_w;
        const int64_t wn = g.out_channels * g.in_channels * g.kernel_h * g.kernel_w;
        const int64_t yn = g.batch * g.out_channels * g.out_h() * g.out_w();
        auto x = random_vec(rng_, xn), w = random_vec(rng_, wn), b = random_vec(rng_, g.out_channels);
        auto dy = random_vec(rng_, yn);
        const std::string what = conv_name(g);
        Vec bias = dbl(b);
        Vec yref = ref::conv2d_forward(g, dbl(x), dbl(w), &bias);
        std::vector<float> y(static_cast<size_t>(yn), std::nanf(""));
        be_->conv2d_forward(g, x.data(), w.data(), b.data(), y.data(), format);
        EXPECT_CLOSE(what + " forward", y.data(), yref, 2e-5);
        // Without bias.
        Vec yref_nb = ref::conv2d_forward(g, dbl(x), dbl(w), nullptr);
        be_->conv2d_forward(g, x.data(), w.data(), nullptr, y.data(), format);
        EXPECT_CLOSE(what + " forward without bias", y.data(), yref_nb, 2e-5);

        Vec dx_ref, dw_ref, db_ref;
        ref::conv2d_backward(g, dbl(x), dbl(w), dbl(dy), dx_ref, dw_ref, db_ref);
        // Garbage in the outputs: backward must overwrite, not accumulate.
        std::vector<float> dx(static_cast<size_t>(xn), 7.0f), dw(static_cast<size_t>(wn), 7.0f),
            db(static_cast<size_t>(g.out_channels), 7.0f);
        be_->conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), format);
        EXPECT_CLOSE(what + " dx", dx.data(), dx_ref, 2e-5);
        EXPECT_CLOSE(what + " dw", dw.data(), dw_ref, 2e-5);
        EXPECT_CLOSE(what + " db", db.data(), db_ref, 2e-5);
        // dx and db may be null (first layer, no bias); dw is still right.
        std::fill(dw.begin(), dw.end(), -3.0f);
        be_->conv2d_backward(g, x.data(), w.data(), dy.data(), nullptr, dw.data(), nullptr, format);
        EXPECT_CLOSE(what + " dw without dx", dw.data(), dw_ref, 2e-5);
    }

private slots:
    void init() { set_thread_count(2); }
    void cleanupTestCase() { set_thread_count(0); }

    void gemmAllTransposes() {
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                check_gemm(ta, tb, 7, 13, 29, 1.0f, 0.0f, Format::FP32);
                check_gemm(ta, tb, 65, 33, 130, -0.75f, 0.5f, Format::FP32);
                check_gemm(ta, tb, 1, 17, 5, 2.0f, 1.0f, Format::FP32);
                check_gemm(ta, tb, 19, 1, 300, 0.5f, -1.0f, Format::FP32);
                // Leading dimensions larger than the matrices.
                check_gemm(ta, tb, 11, 9, 23, 1.5f, 0.25f, Format::FP32, 5);
            }
    }

    void gemmReducedOperands() {
        for (Format f : {Format::TF32, Format::FP16, Format::BF16})
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    check_gemm(ta, tb, 23, 31, 67, 1.0f, 0.0f, f);
                    check_gemm(ta, tb, 40, 9, 150, -1.25f, 0.5f, f, 3);
                }
    }

    // Sizes beyond BLAS's int are refused before any operand is touched (the pointers here are
    // null): cast down they wrapped, and OpenBLAS looped on "parameter number 13 had an illegal
    // value" or wrote past the end of C.
    void gemmRefusesSizesBeyondBlasInt() {
        const int64_t huge = int64_t{3} << 30;  // 3,221,225,472
        const QString msg = mpwb::test::error_text<DeviceError>([&] {
            be_->gemm(false, false, huge, 1, 1, 1.0f, nullptr, 1, nullptr, 1, 0.0f, nullptr, 1, Format::FP32);
        });
        VERIFY_MSG(msg, "GEMM size m", "3,221,225,472");
        const QString neg = mpwb::test::error_text<DeviceError>([&] {
            be_->gemm(false, false, 2, 2, 2, 1.0f, nullptr, -1, nullptr, 2, 0.0f, nullptr, 2, Format::FP32);
        });
        VERIFY_MSG(neg, "GEMM size lda", "-1");
    }

    // The operands are m x k / k x n regions of larger arrays: the backend may read exactly
    // (rows - 1) * ld + cols elements of each, no further (BLAS's contract for sub-matrices).
    void gemmReadsOnlyTheMatrix() {
        const int64_t m = 5, n = 6, k = 7, lda = 16, ldb = 12;
        for (Format f : {Format::FP32, Format::FP16}) {
            GuardedBuffer a((m - 1) * lda + k), b((k - 1) * ldb + n);
            for (int64_t i = 0; i < (m - 1) * lda + k; ++i) a.data()[i] = 0.25f * static_cast<float>(i % 7);
            for (int64_t i = 0; i < (k - 1) * ldb + n; ++i) b.data()[i] = 0.5f * static_cast<float>(i % 5);
            std::vector<float> c(static_cast<size_t>(m * n));
            be_->gemm(false, false, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n, f);
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                    double s = 0;
                    for (int64_t p = 0; p < k; ++p)
                        s += double(a.data()[i * lda + p]) * b.data()[p * ldb + j];
                    QCOMPARE(double(c[static_cast<size_t>(i * n + j)]), s);  // small integers*quarters: exact
                }
        }
    }

    void roundAndScale() {
        auto x = random_vec(rng_, 5000, -70000, 70000);
        x[0] = std::nanf("");
        x[1] = std::numeric_limits<float>::infinity();
        x[2] = 1e-7f;
        for (Format f :
             {Format::FP32, Format::TF32, Format::FP16, Format::BF16, Format::E4M3, Format::E5M2}) {
            std::vector<float> out(x.size());
            be_->round(f, x.data(), out.data(), static_cast<int64_t>(x.size()));
            for (size_t i = 0; i < x.size(); ++i) {
                const float e = round_to_format(x[i], f);
                QVERIFY2(
                    std::memcmp(&e, &out[i], sizeof(float)) == 0,
                    qPrintable(
                        QString("round %1 of %2").arg(QString::fromStdString(format_name(f))).arg(x[i])));
            }
            auto inplace = x;
            be_->round(f, inplace.data(), inplace.data(), static_cast<int64_t>(x.size()));
            QVERIFY(std::memcmp(inplace.data(), out.data(), x.size() * sizeof(float)) == 0);
        }
        auto y = random_vec(rng_, 70000);
        auto s = y;
        be_->scale(-3.5f, s.data(), static_cast<int64_t>(s.size()));
        for (size_t i = 0; i < y.size(); ++i) QCOMPARE(s[i], y[i] * -3.5f);  // one exact-rounded product
    }

    void biasRowsAndChannels() {
        const int64_t rows = 37, cols = 300;
        auto y = random_vec(rng_, rows * cols), b = random_vec(rng_, cols);
        Vec yref = dbl(y);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < cols; ++j) yref[r * cols + j] += b[j];
        be_->add_bias_rows(y.data(), b.data(), rows, cols);
        EXPECT_CLOSE(std::string("add_bias_rows"), y.data(), yref, 1e-6);

        auto dy = random_vec(rng_, rows * cols);
        Vec dbref(static_cast<size_t>(cols), 0.0);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < cols; ++j) dbref[j] += dy[r * cols + j];
        std::vector<float> db(static_cast<size_t>(cols), 9.0f);
        be_->bias_grad_rows(dy.data(), db.data(), rows, cols);
        EXPECT_CLOSE(std::string("bias_grad_rows"), db.data(), dbref, 1e-5);

        const int64_t n = 6, c = 5, hw = 7 * 9;
        auto yc = random_vec(rng_, n * c * hw), bc = random_vec(rng_, c);
        Vec ycref = dbl(yc);
        for (int64_t s = 0; s < n; ++s)
            for (int64_t ch = 0; ch < c; ++ch)
                for (int64_t i = 0; i < hw; ++i) ycref[(s * c + ch) * hw + i] += bc[ch];
        be_->add_bias_channels(yc.data(), bc.data(), n, c, hw);
        EXPECT_CLOSE(std::string("add_bias_channels"), yc.data(), ycref, 1e-6);

        auto dyc = random_vec(rng_, n * c * hw);
        Vec dbcref(static_cast<size_t>(c), 0.0);
        for (int64_t s = 0; s < n; ++s)
            for (int64_t ch = 0; ch < c; ++ch)
                for (int64_t i = 0; i < hw; ++i) dbcref[ch] += dyc[(s * c + ch) * hw + i];
        std::vector<float> dbc(static_cast<size_t>(c), 9.0f);
        be_->bias_grad_channels(dyc.data(), dbc.data(), n, c, hw);
        EXPECT_CLOSE(std::string("bias_grad_channels"), dbc.data(), dbcref, 1e-5);
    }

    void activations() {
        const int64_t n = 40000;  // above the parallel grain: more than one chunk
        auto x = away_from_zero(rng_, n, -6.0f, 6.0f, 1e-3f);
        x[0] = 30.0f;
        x[1] = -30.0f;
        auto dy = random_vec(rng_, n);
        const float slope = 0.07f;
        // Every entry of the activation table, against its float64 reference.
        for (const ActivationInfo& info : activation_infos()) {
            const Activation kind = info.kind;
            const std::string name = info.name;
            Vec yref(static_cast<size_t>(n)), dxref(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) {
                yref[i] = ref::activation(kind, slope, x[i]);
                dxref[i] = dy[i] * ref::activation_grad(kind, slope, x[i]);
            }
            std::vector<float> y(static_cast<size_t>(n)), dx(static_cast<size_t>(n));
            be_->activation_forward(kind, slope, x.data(), y.data(), n);
            EXPECT_CLOSE(name + " forward", y.data(), yref, 1e-5);
            be_->activation_backward(kind, slope, x.data(), y.data(), dy.data(), dx.data(), n);
            EXPECT_CLOSE(name + " backward", dx.data(), dxref, 1e-5);
            for (int64_t i = 0; i < n; ++i) QVERIFY(std::isfinite(y[i]) && std::isfinite(dx[i]));
        }
    }

    void conv2dGeometries() {
        struct Case {
            int64_t n, c, h, w, oc, k, s, p;
        };
        const Case cases[] = {
            {2, 3, 8, 8, 4, 3, 1, 1},  {3, 2, 9, 7, 5, 3, 2, 0},   {2, 4, 7, 10, 3, 1, 1, 0},
            {2, 3, 11, 9, 2, 5, 1, 2}, {1, 2, 12, 13, 3, 5, 2, 2}, {3, 1, 6, 5, 2, 3, 2, 1},
            {2, 2, 5, 6, 4, 1, 2, 1},  {2, 3, 4, 4, 2, 5, 1, 2},   {1, 1, 3, 3, 1, 3, 1, 0},
        };
        for (const auto& cs : cases) {
            ConvGeometry g;
            g.batch = cs.n;
            g.in_channels = cs.c;
            g.in_h = cs.h;
            g.in_w = cs.w;
            g.out_channels = cs.oc;
            g.kernel_h = g.kernel_w = cs.k;
            g.stride = cs.s;
            g.padding = cs.p;
            check_conv(g);
        }
    }

    // The CPU backend splits the batch into im2col chunks of about 8M column entries
    // (conv_chunk in cpu_backend.cpp); these geometries need three and two chunks, with a short
    // last chunk, so the chunk offsets and the dw accumulation across chunks are exercised.
    void conv2dSeveralIm2colChunks() {
        ConvGeometry g;
        g.batch = 60;
        g.in_channels = 8;
        g.in_h = 40;
        g.in_w = 37;
        g.out_channels = 3;
        g.kernel_h = g.kernel_w = 5;
        g.stride = 1;
        g.padding = 2;
        const int64_t per_sample = g.in_channels * 25 * g.out_h() * g.out_w();
        QVERIFY2(g.batch * per_sample > 2 * (int64_t{8} << 20), "geometry must need at least three chunks");
        check_conv(g);

        g.batch = 30;
        g.in_h = 80;
        g.in_w = 75;
        g.stride = 2;
        QVERIFY(g.batch * g.in_channels * 25 * g.out_h() * g.out_w() > (int64_t{8} << 20));
        check_conv(g);
    }

    void conv2dReducedOperands() {
        ConvGeometry g;
        g.batch = 2;
        g.in_channels = 3;
        g.in_h = 6;
        g.in_w = 7;
        g.out_channels = 4;
        g.kernel_h = g.kernel_w = 3;
        g.padding = 1;
        for (Format f : {Format::FP16, Format::BF16}) {
            auto x = random_vec(rng_, g.batch * g.in_channels * g.in_h * g.in_w);
            auto w = random_vec(rng_, g.out_channels * g.in_channels * 9);
            std::vector<float> xr(x.size()), wr(w.size());
            round_to_format(f, x.data(), xr.data(), x.size());
            round_to_format(f, w.data(), wr.data(), w.size());
            Vec yref = ref::conv2d_forward(g, dbl(xr), dbl(wr), nullptr);
            std::vector<float> y(yref.size());
            be_->conv2d_forward(g, x.data(), w.data(), nullptr, y.data(), f);
            EXPECT_CLOSE("conv " + format_name(f), y.data(), yref, 2e-6);
        }
    }

    void maxPool() {
        struct Case {
            int64_t n, c, h, w, k, s, p;
        };
        for (const Case& cs :
             {Case{2, 3, 8, 8, 2, 2, 0}, Case{1, 2, 7, 9, 3, 2, 1}, Case{2, 1, 6, 5, 3, 1, 1},
              Case{1, 2, 5, 5, 2, 1, 1}, Case{1, 1, 9, 6, 4, 3, 2}}) {
            PoolGeometry g;
            g.batch = cs.n;
            g.channels = cs.c;
            g.in_h = cs.h;
            g.in_w = cs.w;
            g.kernel = cs.k;
            g.stride = cs.s;
            g.padding = cs.p;
            const int64_t xn = g.batch * g.channels * g.in_h * g.in_w,
                          yn = g.batch * g.channels * g.out_h() * g.out_w();
            // All negative: a padded cell must never win (it is not a zero).
            auto x = random_vec(rng_, xn, -5.0f, -1.0f);
            std::vector<int64_t> arg_ref;
            Vec yref = ref::maxpool_forward(g, dbl(x), &arg_ref);
            std::vector<float> y(static_cast<size_t>(yn));
            std::vector<int32_t> arg(static_cast<size_t>(yn));
            be_->maxpool_forward(g, x.data(), y.data(), arg.data());
            const QString what =
                QString("maxpool %1x%2 k%3 s%4 p%5").arg(cs.h).arg(cs.w).arg(cs.k).arg(cs.s).arg(cs.p);
            for (int64_t o = 0; o < yn; ++o) {
                QVERIFY2(double(y[o]) == yref[o], qPrintable(what + " value"));
                QVERIFY2(arg[o] == arg_ref[o], qPrintable(what + " argmax"));
            }
            auto dy = random_vec(rng_, yn);
            Vec dxref(static_cast<size_t>(xn), 0.0);
            for (int64_t o = 0; o < yn; ++o) dxref[arg_ref[o]] += dy[o];
            std::vector<float> dx(static_cast<size_t>(xn), 5.0f);
            be_->maxpool_backward(g, dy.data(), arg.data(), dx.data());
            EXPECT_CLOSE((what + " backward").toStdString(), dx.data(), dxref, 1e-6);
        }
    }

    void maxPoolTiesAndNaN() {
        PoolGeometry g;
        g.batch = 1;
        g.channels = 1;
        g.in_h = 4;
        g.in_w = 4;
        g.kernel = 2;
        g.stride = 2;
        std::vector<float> x = {1,
                                1,
                                0,
                                0,  //
                                1,
                                1,
                                0,
                                std::nanf(""),
                                -std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                2,
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                3,
                                3};
        // A NaN in the first cell of the window, before any finite value.
        x[2] = std::nanf("");
        std::vector<float> y(4);
        std::vector<int32_t> arg(4);
        be_->maxpool_forward(g, x.data(), y.data(), arg.data());
        QCOMPARE(y[0], 1.0f);
        QCOMPARE(arg[0], 0);  // first of four equal values
        QVERIFY2(std::isnan(y[1]), "NaN must propagate through max pooling");
        QVERIFY2(arg[1] >= 0 && std::isnan(x[static_cast<size_t>(arg[1])]), "argmax points at the NaN");
        QCOMPARE(y[2], -std::numeric_limits<float>::infinity());  // all -inf is a valid maximum
        QVERIFY(arg[2] >= 0);
        QCOMPARE(y[3], std::numeric_limits<float>::infinity());
        QCOMPARE(arg[3], 11);

        // NaN in a later row of the window, after a larger finite value.
        std::vector<float> x2 = {5, 1, 1, std::nanf("")};
        PoolGeometry g2 = g;
        g2.in_h = g2.in_w = 2;
        std::vector<float> y2(1);
        std::vector<int32_t> a2(1);
        be_->maxpool_forward(g2, x2.data(), y2.data(), a2.data());
        QVERIFY2(std::isnan(y2[0]), "NaN after a larger value must still propagate");
        // A NaN followed by a larger finite value in the same row of the window.
        std::vector<float> x3 = {std::nanf(""), 9, 1, 1};
        be_->maxpool_forward(g2, x3.data(), y2.data(), a2.data());
        QVERIFY2(std::isnan(y2[0]), "NaN before a larger value must still propagate");
        std::vector<float> x4 = {1, 1, std::nanf(""), 9};
        be_->maxpool_forward(g2, x4.data(), y2.data(), a2.data());
        QVERIFY2(std::isnan(y2[0]), "NaN in the second row before a larger value must still propagate");
    }

    void avgPool() {
        struct Case {
            int64_t n, c, h, w, k, s, p;
        };
        for (const Case& cs : {Case{2, 3, 8, 8, 2, 2, 0}, Case{1, 2, 7, 9, 3, 2, 1},
                               Case{2, 1, 6, 5, 3, 1, 1}, Case{1, 1, 9, 6, 4, 3, 2}}) {
            PoolGeometry g;
            g.batch = cs.n;
            g.channels = cs.c;
            g.in_h = cs.h;
            g.in_w = cs.w;
            g.kernel = cs.k;
            g.stride = cs.s;
            g.padding = cs.p;
            const int64_t xn = g.batch * g.channels * g.in_h * g.in_w,
                          yn = g.batch * g.channels * g.out_h() * g.out_w();
            auto x = random_vec(rng_, xn), dy = random_vec(rng_, yn);
            const std::string what = "avgpool k" + std::to_string(cs.k) + " p" + std::to_string(cs.p);
            std::vector<float> y(static_cast<size_t>(yn)), dx(static_cast<size_t>(xn), 3.0f);
            be_->avgpool_forward(g, x.data(), y.data());
            EXPECT_CLOSE(what + " forward", y.data(), ref::avgpool_forward(g, dbl(x)), 1e-6);
            be_->avgpool_backward(g, dy.data(), dx.data());
            EXPECT_CLOSE(what + " backward", dx.data(), ref::avgpool_backward(g, dbl(dy)), 1e-6);
        }
    }

    void batchNorm() {
        struct Case {
            int64_t n, c, hw;
        };
        for (const Case& cs : {Case{16, 5, 1}, Case{4, 3, 6 * 7}, Case{1, 2, 25}}) {
            const int64_t total = cs.n * cs.c * cs.hw;
            // An offset mean and a large spread: the variance must not be lost to cancellation.
            auto x = random_vec(rng_, total, 3.0f, 9.0f);
            auto gamma = random_vec(rng_, cs.c, 0.5f, 2.0f), beta = random_vec(rng_, cs.c);
            auto rm = random_vec(rng_, cs.c), rv = random_vec(rng_, cs.c, 0.5f, 2.0f);
            const auto rm0 = rm, rv0 = rv;
            std::vector<float> save_mean(static_cast<size_t>(cs.c)), save_invstd(static_cast<size_t>(cs.c));
            std::vector<float> y(static_cast<size_t>(total));
            const float momentum = 0.1f, eps = 1e-5f;
            const std::string what = "batchnorm n" + std::to_string(cs.n) + " c" + std::to_string(cs.c) +
                                     " hw" + std::to_string(cs.hw);
            be_->batchnorm_forward(x.data(), y.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                                   save_mean.data(), save_invstd.data(), cs.n, cs.c, cs.hw, momentum, eps,
                                   true);
            ref::BatchNormStats st;
            Vec yref = ref::batchnorm_train(dbl(x), dbl(gamma), dbl(beta), cs.n, cs.c, cs.hw, eps, &st);
            EXPECT_CLOSE(what + " train forward", y.data(), yref, 1e-5);
            Vec inv(st.var.size()), rm_ref(st.var.size()), rv_ref(st.var.size());
            const double count = static_cast<double>(cs.n * cs.hw);
            for (size_t ch = 0; ch < st.var.size(); ++ch) {
                inv[ch] = 1 / std::sqrt(st.var[ch] + eps);
                rm_ref[ch] = (1 - momentum) * rm0[ch] + momentum * st.mean[ch];
                const double unbiased = count > 1 ? st.var[ch] * count / (count - 1) : st.var[ch];
                rv_ref[ch] = (1 - momentum) * rv0[ch] + momentum * unbiased;
            }
            EXPECT_CLOSE(what + " saved mean", save_mean.data(), st.mean, 1e-6);
            EXPECT_CLOSE(what + " saved invstd", save_invstd.data(), inv, 1e-5);
            EXPECT_CLOSE(what + " running mean", rm.data(), rm_ref, 1e-6);
            EXPECT_CLOSE(what + " running var (unbiased)", rv.data(), rv_ref, 1e-5);

            // Backward: the analytic batch-norm gradient written from its definition in float64.
            auto dy = random_vec(rng_, total);
            Vec dxref(static_cast<size_t>(total)), dgref(static_cast<size_t>(cs.c), 0.0),
                dbref(static_cast<size_t>(cs.c), 0.0);
            for (int64_t ch = 0; ch < cs.c; ++ch) {
                double sdy = 0, sdyx = 0;
                for (int64_t s = 0; s < cs.n; ++s)
                    for (int64_t i = 0; i < cs.hw; ++i) {
                        const int64_t k = (s * cs.c + ch) * cs.hw + i;
                        const double xhat = (x[k] - st.mean[ch]) * inv[ch];
                        sdy += dy[k];
                        sdyx += dy[k] * xhat;
                    }
                dgref[ch] = sdyx;
                dbref[ch] = sdy;
                for (int64_t s = 0; s < cs.n; ++s)
                    for (int64_t i = 0; i < cs.hw; ++i) {
                        const int64_t k = (s * cs.c + ch) * cs.hw + i;
                        const double xhat = (x[k] - st.mean[ch]) * inv[ch];
                        dxref[k] = gamma[ch] * inv[ch] * (dy[k] - sdy / count - xhat * sdyx / count);
                    }
            }
            std::vector<float> dx(static_cast<size_t>(total)), dg(static_cast<size_t>(cs.c)),
                db(static_cast<size_t>(cs.c));
            be_->batchnorm_backward(x.data(), dy.data(), gamma.data(), save_mean.data(), save_invstd.data(),
                                    dx.data(), dg.data(), db.data(), cs.n, cs.c, cs.hw);
            EXPECT_CLOSE(what + " dx", dx.data(), dxref, 2e-5);
            EXPECT_CLOSE(what + " dgamma", dg.data(), dgref, 2e-5);
            EXPECT_CLOSE(what + " dbeta", db.data(), dbref, 1e-5);
            // dx null: parameters' gradients only.
            std::fill(dg.begin(), dg.end(), 0.0f);
            be_->batchnorm_backward(x.data(), dy.data(), gamma.data(), save_mean.data(), save_invstd.data(),
                                    nullptr, dg.data(), db.data(), cs.n, cs.c, cs.hw);
            EXPECT_CLOSE(what + " dgamma without dx", dg.data(), dgref, 2e-5);

            // Inference: running statistics, which are left alone.
            const auto rm1 = rm, rv1 = rv;
            be_->batchnorm_forward(x.data(), y.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                                   save_mean.data(), save_invstd.data(), cs.n, cs.c, cs.hw, momentum, eps,
                                   false);
            Vec yeval(static_cast<size_t>(total));
            for (int64_t s = 0; s < cs.n; ++s)
                for (int64_t ch = 0; ch < cs.c; ++ch)
                    for (int64_t i = 0; i < cs.hw; ++i) {
                        const int64_t k = (s * cs.c + ch) * cs.hw + i;
                        yeval[k] = gamma[ch] * (x[k] - double(rm1[ch])) / std::sqrt(double(rv1[ch]) + eps) +
                                   beta[ch];
                    }
            EXPECT_CLOSE(what + " eval forward", y.data(), yeval, 1e-5);
            QVERIFY(rm == rm1 && rv == rv1);
        }
    }

    void multiply() {
        const int64_t n = 50000;
        auto x = random_vec(rng_, n), m = random_vec(rng_, n);
        std::vector<float> y(static_cast<size_t>(n));
        be_->multiply(x.data(), m.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) QCOMPARE(y[i], x[i] * m[i]);
    }

    void softmaxCrossEntropy() {
        const int64_t n = 150, k = 10;  // more rows than one parallel chunk
        auto z = random_vec(rng_, n * k, -6, 6);
        std::vector<float> labels(static_cast<size_t>(n));
        std::vector<int64_t> li(static_cast<size_t>(n));
        int64_t correct = 0;
        for (int64_t r = 0; r < n; ++r) {
            li[r] = static_cast<int64_t>(rng_.below(k));
            labels[r] = static_cast<float>(li[r]);
            // Make about half of the rows predict their label.
            if (r % 2 == 0) z[r * k + li[r]] = 7.0f;
            int64_t arg = 0;
            for (int64_t j = 1; j < k; ++j)
                if (z[r * k + j] > z[r * k + arg]) arg = j;
            correct += arg == li[r];
        }
        for (float grad_scale : {1.0f, 1024.0f, 0.125f}) {
            Vec dref;
            const double lref = ref::softmax_cross_entropy(dbl(z), li, n, k, &dref, grad_scale);
            std::vector<float> d(static_cast<size_t>(n * k));
            const auto r = be_->softmax_cross_entropy(z.data(), labels.data(), d.data(), n, k, grad_scale);
            QVERIFY2(std::fabs(r.loss - lref) <= 1e-5 * lref,
                     qPrintable(QString("loss %1 vs %2").arg(r.loss).arg(lref)));
            QCOMPARE(r.correct, correct);
            EXPECT_CLOSE("dlogits, grad_scale " + std::to_string(grad_scale), d.data(), dref, 1e-5);
        }
        // Without dlogits (evaluation).
        const auto r = be_->softmax_cross_entropy(z.data(), labels.data(), nullptr, n, k, 1.0f);
        QCOMPARE(r.correct, correct);
    }

    void softmaxCrossEntropyExtremeLogits() {
        const int64_t k = 3;
        std::vector<float> z = {80,  -80, 0,  //
                                -80, -80, -80, 80, 80, -80, -80, 80, 80};
        std::vector<float> labels = {1, 2, 0, 0};
        std::vector<int64_t> li = {1, 2, 0, 0};
        Vec dref;
        const double lref = ref::softmax_cross_entropy(dbl(z), li, 4, k, &dref, 65536.0);
        std::vector<float> d(z.size());
        const auto r = be_->softmax_cross_entropy(z.data(), labels.data(), d.data(), 4, k, 65536.0f);
        QVERIFY(std::isfinite(r.loss));
        QVERIFY2(std::fabs(r.loss - lref) <= 1e-5 * lref,
                 qPrintable(QString("loss %1 vs %2").arg(r.loss).arg(lref)));
        for (float v : d) QVERIFY(std::isfinite(v));
        EXPECT_CLOSE(std::string("extreme dlogits"), d.data(), dref, 1e-5);
    }

    void meanSquaredError() {
        const int64_t n = 33, k = 3;
        auto p = random_vec(rng_, n * k, -3, 3), t = random_vec(rng_, n * k, -3, 3);
        for (float grad_scale : {1.0f, 512.0f}) {
            std::vector<float> d(p.size());
            const auto r = be_->mse(p.data(), t.data(), d.data(), n, k, grad_scale);
            const double lref = ref::mse(dbl(p), dbl(t));
            QVERIFY(std::fabs(r.loss - lref) <= 1e-6 * lref);
            Vec dref(p.size());
            for (size_t i = 0; i < p.size(); ++i)
                dref[i] = grad_scale * 2.0 * (double(p[i]) - t[i]) / double(n * k);
            EXPECT_CLOSE("mse dpred, grad_scale " + std::to_string(grad_scale), d.data(), dref, 1e-6);
        }
        const auto r = be_->mse(p.data(), t.data(), nullptr, n, k, 1.0f);
        QVERIFY(std::fabs(r.loss - ref::mse(dbl(p), dbl(t))) <= 1e-6 * r.loss);
    }

    void scaleAndCheckFinite() {
        const int64_t n = 40000;
        auto x = random_vec(rng_, n, -100, 100);
        auto s = x;
        QVERIFY(be_->scale_and_check_finite(0.5f, s.data(), n));
        for (int64_t i = 0; i < n; ++i) QCOMPARE(s[i], x[i] * 0.5f);
        for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::nanf("")}) {
            for (int64_t pos : {int64_t{0}, n / 2, n - 1}) {
                s = x;
                s[pos] = bad;
                QVERIFY2(!be_->scale_and_check_finite(0.25f, s.data(), n),
                         qPrintable(QString("missed %1 at %2").arg(bad).arg(pos)));
                // The other values are still scaled (the step may be retried at another scale).
                QCOMPARE(s[(pos + 1) % n], x[(pos + 1) % n] * 0.25f);
            }
        }
        // An overflow produced by the scaling itself.
        s = x;
        s[7] = 3e38f;
        QVERIFY(!be_->scale_and_check_finite(4.0f, s.data(), n));
        // NaN times zero is still NaN.
        s = x;
        s[3] = std::nanf("");
        QVERIFY(!be_->scale_and_check_finite(0.0f, s.data(), n));
        // A factor of 1 (no loss scale) only checks: values untouched, every kind found anywhere.
        s = x;
        QVERIFY(be_->scale_and_check_finite(1.0f, s.data(), n));
        QVERIFY(s == x);
        s[n - 1] = std::numeric_limits<float>::max();  // the largest finite value is finite
        QVERIFY(be_->scale_and_check_finite(1.0f, s.data(), n));
        for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::nanf(""), -std::nanf("")})
            for (int64_t pos : {int64_t{0}, n / 3, n - 1}) {
                s = x;
                s[pos] = bad;
                QVERIFY2(!be_->scale_and_check_finite(1.0f, s.data(), n),
                         qPrintable(QString("missed %1 at %2 with factor 1").arg(bad).arg(pos)));
            }
    }

    void sumSquares() {
        const int64_t n = 100001;
        auto x = random_vec(rng_, n, -3, 3);
        double ref = 0;
        for (float v : x) ref += double(v) * v;
        QVERIFY(std::fabs(be_->sum_squares(x.data(), n) - ref) <= 1e-12 * ref);
        x[5] = std::nanf("");
        QVERIFY(std::isnan(be_->sum_squares(x.data(), n)));
    }

    // The same inputs give bit-identical results with one thread and with two.
    void threadCountIndependence() {
        Rng r(99);
        const int64_t m = 96, n = 80, k = 257;
        auto a = random_vec(r, m * k), b = random_vec(r, k * n);
        ConvGeometry g;
        g.batch = 9;
        g.in_channels = 3;
        g.in_h = 14;
        g.in_w = 11;
        g.out_channels = 6;
        g.kernel_h = g.kernel_w = 3;
        g.padding = 1;
        g.stride = 1;
        auto cx = random_vec(r, g.batch * g.in_channels * g.in_h * g.in_w);
        auto cw = random_vec(r, g.out_channels * g.in_channels * 9), cb = random_vec(r, g.out_channels);
        auto cdy = random_vec(r, g.batch * g.out_channels * g.out_h() * g.out_w());
        const int64_t rows = 300, cols = 200;
        auto dy = random_vec(r, rows * cols);
        auto bnx = random_vec(r, 64 * 8 * 25);
        std::vector<float> gamma(8, 1.3f), beta(8, 0.2f);
        auto logits = random_vec(r, 500 * 10, -5, 5);
        std::vector<float> labels(500);
        for (auto& l : labels) l = static_cast<float>(r.below(10));
        auto act = random_vec(r, 100000, -4, 4);

        // Each op's outputs under a name, so a difference says which op depends on threads.
        auto run_all = [&] {
            std::vector<std::pair<std::string, std::vector<float>>> out;
            const char* label = "";
            auto append = [&](const std::vector<float>& v) { out.emplace_back(label, v); };
            std::vector<float> c(static_cast<size_t>(m * n));
            for (Format f : {Format::FP32, Format::FP16}) {
                label = f == Format::FP32 ? "gemm fp32" : "gemm fp16";
                be_->gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n, f);
                append(c);
            }
            std::vector<float> y(static_cast<size_t>(g.batch * g.out_channels * g.out_h() * g.out_w()));
            label = "conv2d_forward";
            be_->conv2d_forward(g, cx.data(), cw.data(), cb.data(), y.data(), Format::FP32);
            append(y);
            std::vector<float> dx(cx.size()), dw(cw.size()), db(cb.size());
            be_->conv2d_backward(g, cx.data(), cw.data(), cdy.data(), dx.data(), dw.data(), db.data(),
                                 Format::FP32);
            label = "conv2d_backward dx";
            append(dx);
            label = "conv2d_backward dw";
            append(dw);
            label = "conv2d_backward db";
            append(db);
            std::vector<float> bg(static_cast<size_t>(cols));
            label = "bias_grad_rows";
            be_->bias_grad_rows(dy.data(), bg.data(), rows, cols);
            append(bg);
            std::vector<float> bny(bnx.size()), rm(8, 0.0f), rv(8, 1.0f), sm(8), si(8), bdx(bnx.size()),
                dg(8), dbb(8);
            be_->batchnorm_forward(bnx.data(), bny.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                                   sm.data(), si.data(), 64, 8, 25, 0.1f, 1e-5f, true);
            label = "batchnorm_forward";
            append(bny);
            be_->batchnorm_backward(bnx.data(), bny.data(), gamma.data(), sm.data(), si.data(), bdx.data(),
                                    dg.data(), dbb.data(), 64, 8, 25);
            label = "batchnorm_backward";
            append(bdx);
            append(dg);
            std::vector<float> dl(logits.size());
            const auto lr =
                be_->softmax_cross_entropy(logits.data(), labels.data(), dl.data(), 500, 10, 8.0f);
            label = "softmax_cross_entropy";
            append(dl);
            append({static_cast<float>(lr.loss)});
            std::vector<float> ay(act.size());
            label = "GELU";
            be_->activation_forward(Activation::GELU, 0, act.data(), ay.data(),
                                    static_cast<int64_t>(act.size()));
            append(ay);
            return out;
        };
        set_thread_count(1);
        const auto one = run_all();
        set_thread_count(2);
        const auto two = run_all();
        QCOMPARE(one.size(), two.size());
        QString report;
        for (size_t op = 0; op < one.size(); ++op) {
            const auto& a1 = one[op].second;
            const auto& a2 = two[op].second;
            QCOMPARE(a1.size(), a2.size());
            size_t differing = 0;
            for (size_t i = 0; i < a1.size(); ++i)
                differing += std::memcmp(&a1[i], &a2[i], sizeof(float)) != 0;
            if (differing)
                report += QString("%1: %2 of %3 values differ; ")
                              .arg(QString::fromStdString(one[op].first))
                              .arg(differing)
                              .arg(a1.size());
        }
        QVERIFY2(report.isEmpty(), qPrintable("1 thread vs 2 threads: " + report));
    }
};

QTEST_APPLESS_MAIN(TestCpuBackendOps)
#include "test_cpu_backend_ops.moc"
