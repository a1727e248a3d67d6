// Checks core/backend/cuda/element_math.h on the host, where it is the CUDA kernels' CPU
// reference: its integer FP16/BF16/TF32 rounding against core/numeric's round_to_format (every
// FP16 value's neighbourhood, every BF16 value's, a strided sweep of all floats and random bit
// patterns: subnormals, signed zero, inf, NaN payloads, the overflow boundaries), load/store by
// dtype, CpuBackend's activation loops against the activation table's entries called one
// element at a time (the kernels' way), batch normalisation and loss steps against CpuBackend bit
// for bit (same order of operations on the host), the histogram slot rules against
// ExponentHistogram::compute, and the dropout hash's keep rate and per-step masks.
// Needs no GPU: nothing here touches CUDA.
#include <QtTest/QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/cuda/element_math.h"
#include "core/common/rng.h"
#include "core/numeric/bfloat16.h"
#include "core/numeric/exponent_histogram.h"
#include "core/numeric/format.h"
#include "core/numeric/half.h"

using namespace mpwb;
using namespace mpwb::cuda;

namespace {

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// Bits equal, or both NaN (the CPU's and the reference's NaN may differ only when both are NaN
// and the rule under test does not define the payload).
bool same_value(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

QString hex(uint32_t b) { return QString("0x%1").arg(b, 8, 16, QChar('0')); }

// Compares element_math's rounding of x into FP16, BF16 and TF32 with core's, bit for bit
// (NaN payloads included: both keep the quiet payload the same way). Returns an empty string
// when equal, else a description of the first difference.
QString rounding_difference(float x) {
    const uint16_t h = half_bits_from_float(x), core_h = float_to_half_bits(x);
    if (h != core_h)
        return QString("fp16 bits of %1: %2, core %3").arg(hex(bits(x))).arg(h, 0, 16).arg(core_h, 0, 16);
    const uint16_t b = bf16_bits_from_float(x), core_b = float_to_bf16_bits(x);
    if (b != core_b)
        return QString("bf16 bits of %1: %2, core %3").arg(hex(bits(x))).arg(b, 0, 16).arg(core_b, 0, 16);
    const struct {
        Format f;
        float mine;
    } values[] = {{Format::FP16, round_to_half_value(x)},
                  {Format::BF16, round_to_bf16_value(x)},
                  {Format::TF32, round_to_tf32_value(x)}};
    for (const auto& v : values) {
        const float core = round_to_format(x, v.f);
        if (bits(v.mine) != bits(core))
            return QString("%1 of %2: %3, core %4")
                .arg(format_name(v.f).c_str(), hex(bits(x)), hex(bits(v.mine)), hex(bits(core)));
        if (bits(round_to_device_format(x, v.f)) != bits(core))
            return QString("round_to_device_format(%1, %2) differs")
                .arg(hex(bits(x)), format_name(v.f).c_str());
    }
    if (bits(round_to_device_format(x, Format::FP32)) != bits(x))
        return "fp32 rounding changed " + hex(bits(x));
    return {};
}

#define VERIFY_ROUNDING(x)                         \
    do {                                           \
        const QString d_ = rounding_difference(x); \
        QVERIFY2(d_.isEmpty(), qPrintable(d_));    \
    } while (0)

std::vector<float> activation_inputs(Rng& rng, size_t n) {
    std::vector<float> x = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            1e-30f,
                            -1e-30f,
                            1e-45f,
                            88.0f,
                            -88.0f,
                            89.0f,
                            -104.0f,
                            20.0f,
                            -20.0f,
                            9.0f,
                            -9.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max()};
    while (x.size() < n) {
        const float scale = rng.uniform() < 0.2f ? 100.0f : 6.0f;
        x.push_back(rng.uniform(-scale, scale));
    }
    return x;
}

}  // namespace

class TestElementMath : public QObject {
    Q_OBJECT

private slots:
    void half_decode_matches_core_for_all_halves() {
        for (uint32_t h = 0; h <= 0xffff; ++h) {
            const float mine = float_from_half_bits(static_cast<uint16_t>(h));
            const float core = half_bits_to_float(static_cast<uint16_t>(h));
            QVERIFY2(bits(mine) == bits(core), qPrintable(QString("half %1 decodes to %2, core %3")
                                                              .arg(h, 4, 16, QChar('0'))
                                                              .arg(hex(bits(mine)), hex(bits(core)))));
        }
    }

    // Every FP16 value, its float neighbours, and the midpoints to the next FP16 value with their
    // neighbours: every rounding decision (ties to even, subnormal quanta, the carry into the
    // exponent, 65504 / 65520 / inf) is taken at one of these.
    void rounding_matches_core_around_every_half() {
        for (uint32_t h = 0; h <= 0xffff; ++h) {
            const uint32_t mag = h & 0x7fff;
            if (mag > 0x7c00) continue;  // NaN patterns: their floats are covered by the sweeps
            const float value = half_bits_to_float(static_cast<uint16_t>(h));
            for (int d = -3; d <= 3; ++d) VERIFY_ROUNDING(from_bits(bits(value) + static_cast<uint32_t>(d)));
            if (mag >= 0x7c00) continue;
            const double next =
                mag == 0x7bff ? 65536.0 : std::fabs(half_bits_to_float(static_cast<uint16_t>(mag + 1)));
            const auto mid = static_cast<float>((std::fabs(static_cast<double>(value)) + next) / 2);  // exact
            QCOMPARE(static_cast<double>(mid), (std::fabs(static_cast<double>(value)) + next) / 2);
            const float signed_mid = (h & 0x8000) ? -mid : mid;
            for (int d = -2; d <= 2; ++d)
                VERIFY_ROUNDING(from_bits(bits(signed_mid) + static_cast<uint32_t>(d)));
        }
        // The boundaries by name.
        QCOMPARE(half_bits_from_float(65504.0f), uint16_t{0x7bff});
        QCOMPARE(half_bits_from_float(65519.996f), uint16_t{0x7bff});
        QCOMPARE(half_bits_from_float(65520.0f), uint16_t{0x7c00});
        QCOMPARE(half_bits_from_float(-65520.0f), uint16_t{0xfc00});
        QCOMPARE(half_bits_from_float(0x1p-25f), uint16_t{0x0000});         // tie to even: 0
        QCOMPARE(half_bits_from_float(0x1.000002p-25f), uint16_t{0x0001});  // just above: 2^-24
        QCOMPARE(half_bits_from_float(-0.0f), uint16_t{0x8000});
        QCOMPARE(half_bits_from_float(0x1.ff8p-15f), uint16_t{0x03ff});  // the largest subnormal
        QCOMPARE(half_bits_from_float(0x1.ffcp-15f), uint16_t{0x0400});  // its tie carries into the exponent
    }

    void rounding_matches_core_around_every_bf16() {
        const uint32_t offsets[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
        for (uint32_t b = 0; b <= 0xffff; ++b) {
            const uint32_t base = b << 16;
            QVERIFY(bits(float_from_bf16_bits(static_cast<uint16_t>(b))) ==
                    bits(bf16_bits_to_float(static_cast<uint16_t>(b))));
            for (uint32_t o : offsets) VERIFY_ROUNDING(from_bits(base + o));
            VERIFY_ROUNDING(from_bits(base - 1));
        }
        // TF32's decisions sit at the low 13 bits: the tie and its neighbours in every binade.
        for (uint32_t e = 0; e < 256; ++e)
            for (uint32_t m : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2fffu, 0x3000u, 0x3001u, 0x7fefffu,
                               0x7ff000u, 0x7fffffu})
                for (uint32_t s : {0u, 0x80000000u}) VERIFY_ROUNDING(from_bits(s | (e << 23) | m));
    }

    // A stride through all 2^32 patterns (every exponent, sign and NaN class), then random bits.
    void rounding_matches_core_over_a_sweep_and_random_floats() {
        for (uint64_t b = 0; b <= 0xffffffffull; b += 251)
            VERIFY_ROUNDING(from_bits(static_cast<uint32_t>(b)));
        Rng rng(20240611);
        for (int i = 0; i < 4'000'000; ++i) {
            const auto b = static_cast<uint32_t>(rng.next_u64());
            VERIFY_ROUNDING(from_bits(b));
            // Same mantissa bits in the subnormal and overflow ranges of FP16.
            VERIFY_ROUNDING(
                from_bits((b & 0x807fffffu) | (static_cast<uint32_t>(100 + (b >> 23) % 20) << 23)));
            VERIFY_ROUNDING(from_bits((b & 0x807fffffu) | (142u << 23)));  // [32768, 65536)
        }
    }

    void load_and_store_round_like_the_formats() {
        Rng rng(7);
        std::vector<float> f32(1);
        std::vector<uint16_t> f16(1);
        for (int i = 0; i < 200000; ++i) {
            const float x = from_bits(static_cast<uint32_t>(rng.next_u64()));
            store_value<DType::F16>(f16.data(), 0, x);
            QVERIFY(same_value(load_value<DType::F16>(f16.data(), 0), round_to_format(x, Format::FP16)));
            QCOMPARE(f16[0], float_to_half_bits(x));
            store_value(DType::BF16, f16.data(), 0, x);
            QVERIFY(same_value(load_value(DType::BF16, f16.data(), 0), round_to_format(x, Format::BF16)));
            QVERIFY(same_value(round_to_dtype(DType::BF16, x), round_to_format(x, Format::BF16)));
            QVERIFY(same_value(round_to_dtype(DType::F16, x), round_to_format(x, Format::FP16)));
            store_value(DType::F32, f32.data(), 0, x);
            QCOMPARE(bits(load_value(DType::F32, f32.data(), 0)), bits(x));
        }
    }

    // CpuBackend's loops and the kernels run the same table entries; called element by element as
    // a kernel does (only the one of x and y its backward reads), an entry gives the loop's bits.
    // (On the device CUDA's expf/erff/tanhf are within 2 ulp instead.)
    void activations_match_cpu_backend_bit_for_bit() {
        auto cpu = make_cpu_backend();
        Rng rng(11);
        const std::vector<float> x = activation_inputs(rng, 300000);
        std::vector<float> dy(x.size());
        for (float& d : dy) d = rng.uniform(-2.0f, 2.0f);
        const auto n = static_cast<int64_t>(x.size());
        const float slope = 0.01f;
        for_each_activation([&](auto entry) {
            using A = decltype(entry);
            std::vector<float> y(x.size()), dx(x.size());
            cpu->activation_forward(A::kind, slope, x.data(), y.data(), n);
            cpu->activation_backward(A::kind, slope, x.data(), y.data(), dy.data(), dx.data(), n);
            constexpr float nan = std::numeric_limits<float>::quiet_NaN();
            for (size_t i = 0; i < x.size(); ++i) {
                const float mine_y = A::forward(x[i], slope);
                const float mine_dx = A::backward(A::backward_reads_output ? nan : x[i],
                                                  A::backward_reads_output ? y[i] : nan, dy[i], slope);
                QVERIFY2(same_value(mine_y, y[i]),
                         qPrintable(QString("activation %1 forward of %2: %3, cpu %4")
                                        .arg(A::name)
                                        .arg(double(x[i]), 0, 'g', 9)
                                        .arg(double(mine_y), 0, 'g', 9)
                                        .arg(double(y[i]), 0, 'g', 9)));
                QVERIFY2(same_value(mine_dx, dx[i]),
                         qPrintable(QString("activation %1 backward at %2: %3, cpu %4")
                                        .arg(A::name)
                                        .arg(double(x[i]), 0, 'g', 9)
                                        .arg(double(mine_dx), 0, 'g', 9)
                                        .arg(double(dx[i]), 0, 'g', 9)));
            }
        });
        // ReLU sends NaN to 0 (x > 0 is false for NaN).
        QCOMPARE(ReluActivation::forward(std::numeric_limits<float>::quiet_NaN(), 0), 0.0f);
    }

    // The batchnorm steps after the sums, driven in the CPU's summation order, reproduce
    // CpuBackend's outputs and running statistics exactly.
    void batchnorm_steps_match_cpu_backend() {
        auto cpu = make_cpu_backend();
        Rng rng(3);
        const int64_t n = 7, c = 3, hw = 5, total = n * c * hw;
        std::vector<float> x(total), dy(total), gamma(c), beta(c);
        for (float& v : x) v = rng.uniform(-3.0f, 5.0f);
        for (float& v : dy) v = rng.uniform(-1.0f, 1.0f);
        for (float& v : gamma) v = rng.uniform(0.5f, 1.5f);
        for (float& v : beta) v = rng.uniform(-0.5f, 0.5f);
        std::vector<float> rm(c, 0.25f), rv(c, 2.0f), my_rm = rm, my_rv = rv;
        std::vector<float> y(total), mean(c), invstd(c), dx(total), dgamma(c), dbeta(c);
        const float momentum = 0.1f, eps = 1e-5f;
        cpu->batchnorm_forward(x.data(), y.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                               mean.data(), invstd.data(), n, c, hw, momentum, eps, true);
        cpu->batchnorm_backward(x.data(), dy.data(), gamma.data(), mean.data(), invstd.data(), dx.data(),
                                dgamma.data(), dbeta.data(), n, c, hw);
        for (int64_t ch = 0; ch < c; ++ch) {
            double sum = 0, sum_sq = 0, sum_dy = 0, sum_dy_xhat = 0;
            for (int64_t s = 0; s < n; ++s)
                for (int64_t i = 0; i < hw; ++i) {
                    const double v = x[(s * c + ch) * hw + i];
                    sum += v;
                    sum_sq += v * v;
                }
            const BatchnormChannel st =
                batchnorm_training_stats(sum, sum_sq, double(n * hw), eps, momentum, my_rm[ch], my_rv[ch]);
            QCOMPARE(bits(st.mean), bits(mean[ch]));
            QCOMPARE(bits(st.invstd), bits(invstd[ch]));
            QCOMPARE(bits(my_rm[ch]), bits(rm[ch]));
            QCOMPARE(bits(my_rv[ch]), bits(rv[ch]));
            const BatchnormAffine a = batchnorm_affine(gamma[ch], beta[ch], st);
            for (int64_t s = 0; s < n; ++s)
                for (int64_t i = 0; i < hw; ++i) {
                    const int64_t e = (s * c + ch) * hw + i;
                    QCOMPARE(bits(batchnorm_apply(x[e], a)), bits(y[e]));
                    sum_dy += dy[e];
                    sum_dy_xhat += batchnorm_dy_xhat(x[e], dy[e], st.mean, st.invstd);
                }
            QCOMPARE(bits(float(sum_dy)), bits(dbeta[ch]));
            QCOMPARE(bits(float(sum_dy_xhat)), bits(dgamma[ch]));
            const BatchnormBackwardChannel k = batchnorm_backward_channel(
                gamma[ch], st.mean, st.invstd, sum_dy, sum_dy_xhat, double(n * hw));
            for (int64_t s = 0; s < n; ++s)
                for (int64_t i = 0; i < hw; ++i) {
                    const int64_t e = (s * c + ch) * hw + i;
                    QCOMPARE(bits(batchnorm_dx(x[e], dy[e], k)), bits(dx[e]));
                }
        }
        // Inference uses the running statistics.
        std::vector<float> y_eval(total), unused(c);
        cpu->batchnorm_forward(x.data(), y_eval.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                               unused.data(), unused.data(), n, c, hw, momentum, eps, false);
        for (int64_t e = 0; e < total; ++e) {
            const int64_t ch = (e / hw) % c;
            const BatchnormAffine a =
                batchnorm_affine(gamma[ch], beta[ch], batchnorm_inference_stats(rm[ch], rv[ch], eps));
            QCOMPARE(bits(batchnorm_apply(x[e], a)), bits(y_eval[e]));
        }
    }

    // The loss steps in the CPU's order reproduce its loss, correct count and gradient; the
    // out-of-order argmax merge a warp uses equals the CPU's left-to-right scan, NaN and ties
    // included.
    void softmax_cross_entropy_steps_match_cpu_backend() {
        auto cpu = make_cpu_backend();
        Rng rng(5);
        const int64_t n = 64, k = 37;
        std::vector<float> logits(n * k), labels(n), dlogits(n * k);
        for (float& z : logits) z = rng.uniform(-8.0f, 8.0f);
        for (int64_t r = 0; r < n; ++r) labels[r] = float(rng.below(k));
        for (int64_t r = 0; r < 8; ++r) logits[r * k + int64_t(labels[r])] = 30.0f;  // some correct rows
        const float scale = 1024.0f;
        const auto result =
            cpu->softmax_cross_entropy(logits.data(), labels.data(), dlogits.data(), n, k, scale);
        double loss = 0;
        int64_t correct = 0;
        const float g = scale / float(n);
        for (int64_t r = 0; r < n; ++r) {
            const float* z = logits.data() + r * k;
            float zmax = z[0];
            int64_t arg = 0;
            for (int64_t j = 1; j < k; ++j)
                if (argmax_takes(z[j], zmax)) zmax = z[j], arg = j;
            float sum = 0.0f;
            for (int64_t j = 0; j < k; ++j) sum += exp_f(sub_rn(z[j], zmax));
            const float log_sum = log_f(sum);
            const auto label = int64_t(labels[r]);
            loss += cross_entropy_row_loss(log_sum, zmax, z[label]);
            correct += arg == label;
            for (int64_t j = 0; j < k; ++j)
                QCOMPARE(bits(cross_entropy_grad(z[j], zmax, log_sum, g, j == label)),
                         bits(dlogits[r * k + j]));
        }
        QCOMPARE(loss / double(n), result.loss);
        QCOMPARE(correct, result.correct);
        QVERIFY(correct >= 8);

        // Argmax merging over rows with ties, NaNs and -inf, split into strided parts as warp
        // lanes see them and merged in a butterfly order.
        const float nan = std::numeric_limits<float>::quiet_NaN(),
                    inf = std::numeric_limits<float>::infinity();
        for (int trial = 0; trial < 20000; ++trial) {
            const int64_t len = 1 + int64_t(rng.below(80));
            std::vector<float> row(len);
            for (float& v : row) {
                const uint64_t kind = rng.below(10);
                v = kind == 0 ? nan : kind == 1 ? -inf : kind == 2 ? 3.0f : float(int(rng.below(5)));
            }
            float best = row[0];
            int64_t best_index = 0;
            for (int64_t j = 1; j < len; ++j)
                if (argmax_takes(row[j], best)) best = row[j], best_index = j;
            float lane_value[32];
            int64_t lane_index[32];
            for (int lane = 0; lane < 32; ++lane) {
                lane_value[lane] = 0.0f;
                lane_index[lane] = -1;
                for (int64_t j = lane; j < len; j += 32)
                    if (lane_index[lane] < 0 || argmax_takes(row[j], lane_value[lane]))
                        lane_value[lane] = row[j], lane_index[lane] = j;
            }
            for (int offset = 16; offset > 0; offset >>= 1) {
                float nv[32];
                int64_t ni[32];
                for (int lane = 0; lane < 32; ++lane) {
                    nv[lane] = lane_value[lane];
                    ni[lane] = lane_index[lane];
                    argmax_merge(nv[lane], ni[lane], lane_value[lane ^ offset], lane_index[lane ^ offset]);
                }
                std::copy(nv, nv + 32, lane_value);
                std::copy(ni, ni + 32, lane_index);
            }
            for (int lane = 0; lane < 32; ++lane) {
                QCOMPARE(lane_index[lane], best_index);
                QVERIFY(same_value(lane_value[lane], best));
            }
        }
    }

    void histogram_slots_match_exponent_histogram() {
        for (int f = 0; f < int(kFormatCount); ++f)
            QCOMPARE(format_max_finite_bits(f), bits(format_info(Format(f)).max_finite));
        Rng rng(9);
        std::vector<float> x;
        for (int i = 0; i < 1'000'000; ++i) x.push_back(from_bits(static_cast<uint32_t>(rng.next_u64())));
        for (int i = 0; i < 200'000; ++i)
            x.push_back(rng.normal() * std::ldexp(1.0f, int(rng.below(60)) - 40));
        for (int f = 0; f < int(kFormatCount); ++f) {
            const float m = format_info(Format(f)).max_finite;
            for (float v :
                 {m, std::nextafter(m, 0.0f), std::nextafter(m, INFINITY), -std::nextafter(m, INFINITY)})
                x.push_back(v);
        }
        for (float v : {0.0f, -0.0f, 1e-45f, -1e-45f, 0x1p-126f, 0x1.fffffcp-127f, INFINITY, -INFINITY, NAN})
            x.push_back(v);

        ExponentHistogram mine;
        uint32_t max_bits = 0;
        for (float v : x) {
            const int slot = histogram_slot(v);
            QVERIFY(slot >= 0 && slot < kHistogramSlotCount);
            if (slot == kHistogramZeroSlot)
                ++mine.zeros;
            else if (slot == kHistogramNonFiniteSlot)
                ++mine.non_finite;
            else {
                // The bin is floor(log2|x|) + 149.
                QCOMPARE(slot, std::ilogb(v) - kHistogramMinExponent);
                ++mine.bins[size_t(slot)];
            }
            for (int f = 0; f < int(kFormatCount); ++f)
                mine.above_max[size_t(f)] += histogram_above_max(v, f);
            max_bits = std::max(max_bits, histogram_max_abs_bits(v));
        }
        mine.max_abs = from_bits(max_bits);
        const ExponentHistogram core = ExponentHistogram::compute(x.data(), x.size());
        QCOMPARE(mine.zeros, core.zeros);
        QCOMPARE(mine.non_finite, core.non_finite);
        for (size_t f = 0; f < kFormatCount; ++f) QCOMPARE(mine.above_max[f], core.above_max[f]);
        QCOMPARE(bits(mine.max_abs), bits(core.max_abs));
        for (size_t b = 0; b < ExponentHistogram::kBinCount; ++b) QCOMPARE(mine.bins[b], core.bins[b]);
        QVERIFY(mine == core);
    }

    void dropout_keeps_one_minus_p_and_changes_with_the_step() {
        const int64_t n = 1'000'000;
        const uint64_t seed = 42;
        for (float p : {0.0f, 0.1f, 0.5f, 0.9f}) {
            const uint64_t key = dropout_key(seed, 1);
            int64_t kept = 0;
            for (int64_t i = 0; i < n; ++i) {
                const float m = dropout_mask_value(p, key, i);
                QVERIFY(m == 0.0f || m == 1.0f / (1.0f - p));
                kept += m != 0.0f;
            }
            // Binomial standard deviation at n = 1e6 is at most 5e-4: six of them.
            const double rate = double(kept) / double(n);
            QVERIFY2(std::fabs(rate - (1.0 - p)) < 3e-3,
                     qPrintable(QString("p %1 keeps %2").arg(p).arg(rate)));
        }
        // Consecutive steps, other seeds: masks agree only as often as independent draws would.
        const float p = 0.5f;
        auto agreement = [&](uint64_t key_a, uint64_t key_b) {
            int64_t same = 0;
            for (int64_t i = 0; i < n; ++i)
                same += dropout_mask_value(p, key_a, i) == dropout_mask_value(p, key_b, i);
            return double(same) / double(n);
        };
        for (int64_t step = 1; step < 6; ++step) {
            QVERIFY(std::fabs(agreement(dropout_key(seed, step), dropout_key(seed, step + 1)) - 0.5) < 3e-3);
            QVERIFY(std::fabs(agreement(dropout_key(seed, step), dropout_key(seed + 1, step)) - 0.5) < 3e-3);
        }
        QCOMPARE(agreement(dropout_key(seed, 3), dropout_key(seed, 3)), 1.0);
        // Neighbouring elements are independent: the four (kept, kept') pairs each near 1/4.
        const uint64_t key = dropout_key(seed, 7);
        int64_t pairs[4] = {};
        for (int64_t i = 0; i + 1 < n; ++i)
            ++pairs[(dropout_uniform(key, i) < p) * 2 + (dropout_uniform(key, i + 1) < p)];
        for (int64_t count : pairs) QVERIFY(std::fabs(double(count) / double(n - 1) - 0.25) < 3e-3);
        // Uniform draws cover [0, 1) with 24 bits.
        QVERIFY(dropout_uniform(key, 0) >= 0.0f && dropout_uniform(key, 0) < 1.0f);
    }
};

QTEST_APPLESS_MAIN(TestElementMath)
#include "test_element_math.moc"
