// Block quantization for the scaled recipes. One element kernel, a template over the element
// format and the scale's layout (one scale, or one per column of a row panel), carries the
// rounding inlined; blocks are handled a panel of block rows at a time: the panel's column
// maxima, then each column group's scale spread over its columns, then each row through the
// kernel. Threads take whole panels (or fixed 4096-element units), and statistics are summed per
// unit in unit order, so no result depends on the thread count.
#include "core/precision/block_quantize.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <vector>

#include "core/common/parallel.h"
#include "core/numeric/element_formats.h"

namespace mpwb {
namespace {

constexpr int64_t kUnit = 4096;            // elements per per-tensor work unit
constexpr int64_t kGrainElements = 16384;  // below this, threads cost more than they save
constexpr int16_t kNoExponent = INT16_MIN;

// What one work unit saw, summed in unit order afterwards.
struct UnitStats {
    int64_t nonzero = 0, underflow = 0, saturated = 0;
    double signal = 0, noise = 0;
};

struct UniformScale {
    float multiplier, dequant;
    float mult(int64_t) const { return multiplier; }
    float deq(int64_t) const { return dequant; }
};
struct ColumnScales {
    const float* multiplier;
    const float* dequant;
    float mult(int64_t c) const { return multiplier[c]; }
    float deq(int64_t c) const { return dequant[c]; }
};

template <class Spec, bool kStochastic>
inline float round_to(float s, uint64_t key, uint64_t index) {
    if constexpr (kStochastic)
        return round_element_stochastic<Spec>(s, counter_random_bits(key, index));
    else
        return round_element_saturating<Spec>(s);
}

// out[c] = (round(x[c] op scale) * dequant) * post for c in [0, n), op = * or / (kDivide).
// index0: the linear index of x[0] in the operand (the stochastic rounding counter).
template <class Spec, bool kDivide, bool kStochastic, bool kStats, class Scales>
[[gnu::always_inline]] inline void quantize_run_body(const float* x, float* out, int64_t n,
                                                     const Scales& scales, float post, uint64_t key,
                                                     uint64_t index0, UnitStats* st) {
    for (int64_t c = 0; c < n; ++c) {
        const float v = x[c];
        const float s = kDivide ? v / scales.mult(c) : v * scales.mult(c);
        const float q = round_to<Spec, kStochastic>(s, key, index0 + static_cast<uint64_t>(c));
        const float o = q * scales.deq(c) * post;
        if constexpr (kStats) {
            st->saturated += rounds_past_max<Spec>(s);
            if (std::isfinite(v)) {
                st->nonzero += v != 0.0f;
                st->underflow += (v != 0.0f) & (q == 0.0f);
                const double err = static_cast<double>(v) - static_cast<double>(o);
                st->signal += static_cast<double>(v) * v;
                st->noise += err * err;
            }
        }
        out[c] = o;
    }
}

// The kernel compiled twice: for the build's baseline ISA and for AVX2, whose per-lane variable
// shifts the rounding needs to vectorise. No FMA in either, so both give the same bits.
template <class Spec, bool kDivide, bool kStochastic, bool kStats, class Scales>
void quantize_run(const float* x, float* out, int64_t n, const Scales& scales, float post, uint64_t key,
                  uint64_t index0, UnitStats* st) {
    quantize_run_body<Spec, kDivide, kStochastic, kStats>(x, out, n, scales, post, key, index0, st);
}
template <class Spec, bool kDivide, bool kStochastic, bool kStats, class Scales>
__attribute__((target("avx2"))) void quantize_run_avx2(const float* x, float* out, int64_t n,
                                                       const Scales& scales, float post, uint64_t key,
                                                       uint64_t index0, UnitStats* st) {
    quantize_run_body<Spec, kDivide, kStochastic, kStats>(x, out, n, scales, post, key, index0, st);
}

bool cpu_has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}

// The element kernel with the format, the division and the statistics chosen once per call.
template <class Scales>
using RunFn = void (*)(const float*, float*, int64_t, const Scales&, float, uint64_t, uint64_t, UnitStats*);

template <class Scales, class Spec, bool kDivide>
RunFn<Scales> pick_run(bool stochastic, bool stats) {
    if (cpu_has_avx2()) {
        if (stochastic)
            return stats ? quantize_run_avx2<Spec, kDivide, true, true, Scales>
                         : quantize_run_avx2<Spec, kDivide, true, false, Scales>;
        return stats ? quantize_run_avx2<Spec, kDivide, false, true, Scales>
                     : quantize_run_avx2<Spec, kDivide, false, false, Scales>;
    }
    if (stochastic)
        return stats ? quantize_run<Spec, kDivide, true, true, Scales>
                     : quantize_run<Spec, kDivide, true, false, Scales>;
    return stats ? quantize_run<Spec, kDivide, false, true, Scales>
                 : quantize_run<Spec, kDivide, false, false, Scales>;
}

template <class Scales>
RunFn<Scales> pick_run(Format element, bool divide, bool stochastic, bool stats) {
    switch (element) {
        case Format::E5M2:
            return divide ? pick_run<Scales, E5M2Spec, true>(stochastic, stats)
                          : pick_run<Scales, E5M2Spec, false>(stochastic, stats);
        case Format::E2M1:
            return divide ? pick_run<Scales, E2M1Spec, true>(stochastic, stats)
                          : pick_run<Scales, E2M1Spec, false>(stochastic, stats);
        default:
            return divide ? pick_run<Scales, E4M3Spec, true>(stochastic, stats)
                          : pick_run<Scales, E4M3Spec, false>(stochastic, stats);
    }
}

inline uint32_t abs_bits(float v) { return std::bit_cast<uint32_t>(v) & 0x7fffffffu; }

// Max of |x| as FP32 bit patterns: NaN patterns sort above inf, inf above every finite value.
uint32_t amax_bits(const float* x, int64_t n) {
    uint32_t m = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, abs_bits(x[i]));
    return m;
}

int64_t grain_units(int64_t elements_per_unit) {
    return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, elements_per_unit));
}

// Moves the per-unit statistics into stats (values, fractions, SQNR).
void finish_element_stats(const std::vector<UnitStats>& units, int64_t values, ScalingStats& stats) {
    UnitStats sum;
    for (const UnitStats& u : units) {
        sum.nonzero += u.nonzero;
        sum.underflow += u.underflow;
        sum.saturated += u.saturated;
        sum.signal += u.signal;
        sum.noise += u.noise;
    }
    stats.values = values;
    stats.underflow_fraction = sum.nonzero ? static_cast<double>(sum.underflow) / sum.nonzero : 0.0;
    stats.saturate_fraction = values ? static_cast<double>(sum.saturated) / values : 0.0;
    stats.sqnr_db = sum.noise > 0 ? 10.0 * std::log10(sum.signal / sum.noise) : 999.0;
}

// Block counts and the exponent histogram from one entry per block.
void finish_block_stats(const std::vector<int16_t>& exponents, const std::vector<uint8_t>& clipped,
                        ScalingStats& stats) {
    stats.blocks = static_cast<int64_t>(exponents.size());
    stats.clipped_blocks = std::count(clipped.begin(), clipped.end(), uint8_t{1});
    int lo = INT16_MAX, hi = INT16_MIN;
    for (int16_t e : exponents)
        if (e != kNoExponent) lo = std::min<int>(lo, e), hi = std::max<int>(hi, e);
    stats.block_exponent_counts.clear();
    stats.block_exponent_min = 0;
    if (lo > hi) return;
    stats.block_exponent_min = lo;
    stats.block_exponent_counts.assign(static_cast<size_t>(hi - lo + 1), 0);
    for (int16_t e : exponents)
        if (e != kNoExponent) ++stats.block_exponent_counts[static_cast<size_t>(e - lo)];
}

float fp32_block_multiplier(float amax, bool power_of_two) {
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;  // zero, inf, NaN: TE's scale 1
    float scale = E4M3Spec::kMax / amax;
    if (!std::isfinite(scale)) scale = FLT_MAX;
    // Rounding the multiplier down keeps amax * scale <= 448: no block maximum clips.
    if (power_of_two) scale = std::bit_cast<float>(std::bit_cast<uint32_t>(scale) & 0x7f800000u);
    return scale;
}

}  // namespace

BlockShape tile_along(SumAlong along, int64_t length) {
    return along == SumAlong::Cols ? BlockShape{1, length} : BlockShape{length, 1};
}

int element_emax(Format element) {
    switch (element) {
        case Format::E5M2:
            return 15;
        case Format::E2M1:
            return 2;
        default:
            return 8;
    }
}

float element_max(Format element) {
    switch (element) {
        case Format::E5M2:
            return E5M2Spec::kMax;
        case Format::E2M1:
            return E2M1Spec::kMax;
        default:
            return E4M3Spec::kMax;
    }
}

bool element_rounds_past_max(Format element, float x) {
    switch (element) {
        case Format::E5M2:
            return rounds_past_max<E5M2Spec>(x);
        case Format::E2M1:
            return rounds_past_max<E2M1Spec>(x);
        default:
            return rounds_past_max<E4M3Spec>(x);
    }
}

float amax_of(const float* x, int64_t n) {
    const int64_t units = (n + kUnit - 1) / kUnit;
    std::vector<uint32_t> partial(static_cast<size_t>(units), 0);
    parallel_for(units, grain_units(kUnit), [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
            const int64_t b = u * kUnit;
            partial[static_cast<size_t>(u)] = amax_bits(x + b, std::min(kUnit, n - b));
        }
    });
    uint32_t m = 0;
    for (uint32_t p : partial) m = std::max(m, p);
    return std::bit_cast<float>(m);
}

float per_tensor_scale(float amax, float elem_max, int margin, float previous) {
    if (!(amax > 0.0f) || !std::isfinite(amax)) return previous;
    const float scale = elem_max / amax / std::exp2(static_cast<float>(margin));
    return std::isfinite(scale) ? scale : FLT_MAX;
}

void quantize_per_tensor(const float* x, float* out, int64_t n, float scale, float amax,
                         const QuantizeOptions& opt) {
    const UniformScale scales{scale, 1.0f / scale};
    const bool stats = opt.stats != nullptr;
    const auto run = pick_run<UniformScale>(opt.element, false, opt.stochastic, stats);
    const int64_t units = (n + kUnit - 1) / kUnit;
    std::vector<UnitStats> unit_stats(stats ? static_cast<size_t>(units) : 0);
    parallel_for(units, grain_units(kUnit), [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
            const int64_t b = u * kUnit;
            run(x + b, out + b, std::min(kUnit, n - b), scales, 1.0f, opt.random_key,
                static_cast<uint64_t>(b), stats ? &unit_stats[static_cast<size_t>(u)] : nullptr);
        }
    });
    if (!stats) return;
    ScalingStats& s = *opt.stats;
    s.element = opt.element;
    s.amax = amax;
    s.scale = scale;
    finish_element_stats(unit_stats, n, s);
    s.blocks = 0;
    s.clipped_blocks = 0;
    s.block_exponent_min = 0;
    s.block_exponent_counts.clear();
}

uint8_t mx_scale_code(float amax, Format element, bool rceil) {
    if (!std::isfinite(amax)) return kE8M0NaN;
    if (amax == 0.0f) return 0;
    int e = floor_log2(amax) - element_emax(element);
    // RCEIL: amax / 2^e lies in [2^emax, 2^(emax+1)); when it exceeds the element max the next
    // power of two is the smallest that fits. Exact in double (amax / 2^e is a power-of-two shift).
    if (rceil && std::ldexp(static_cast<double>(amax), -e) > element_max(element)) ++e;
    e = std::clamp(e, -127, 127);
    return static_cast<uint8_t>(e + 127);
}

float nvfp4_tensor_scale(float amax, bool four_over_six) {
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;
    const float bound = four_over_six ? kFourOverSixScaleBound : E4M3Spec::kMax;
    const float s = amax / (bound * E2M1Spec::kMax);
    return s >= FLT_MIN ? s : 1.0f;
}

BlockScale nvfp4_block_scale(float amax, float tensor_scale, float expansion) {
    const float bs = round_element_saturating<E4M3Spec>(amax / E2M1Spec::kMax / tensor_scale * expansion);
    // A zero block scale (an all-zero block, or one too small for E4M3): every element is 0.
    const float divisor = bs == 0.0f ? INFINITY : bs * tensor_scale;
    return {divisor, bs};
}

BlockScale block_scale(BlockScaleRule rule, float amax, Format element, float tensor_scale) {
    switch (rule) {
        case BlockScaleRule::Fp32:
        case BlockScaleRule::Fp32PowerOfTwo: {
            const float m = fp32_block_multiplier(amax, rule == BlockScaleRule::Fp32PowerOfTwo);
            return {m, 1.0f / m};
        }
        case BlockScaleRule::E8M0Floor:
        case BlockScaleRule::E8M0RCeil: {
            const uint8_t code = mx_scale_code(amax, element, rule == BlockScaleRule::E8M0RCeil);
            // 2^-e is the code 254 - code; the NaN code 0xFF maps to 0xFF (NaN) as well.
            const uint8_t inverse = code == kE8M0NaN ? kE8M0NaN : static_cast<uint8_t>(254 - code);
            return {e8m0_to_float(inverse), e8m0_to_float(code)};
        }
        case BlockScaleRule::NvFp4:
        case BlockScaleRule::NvFp4FourOverSix:
            return nvfp4_block_scale(amax, tensor_scale, 1.0f);
    }
    return {1.0f, 1.0f};
}

namespace {

// One thread's scratch for the panels it quantizes: each column's maximum, each group's, the
// scales spread over the columns, and under 4 over 6 the map-to-4 candidate's scales, both
// candidates' outputs and each group's choice.
struct PanelWork {
    std::vector<uint32_t> col_amax, group_amax;
    std::vector<float> mult, deq;
    std::vector<float> mult4, deq4, out6, out4;
    std::vector<uint8_t> to_four;

    PanelWork(int64_t cols, int64_t groups, int64_t candidate_rows)
        : col_amax(static_cast<size_t>(cols)),
          group_amax(static_cast<size_t>(groups)),
          mult(static_cast<size_t>(cols)),
          deq(static_cast<size_t>(cols)),
          to_four(static_cast<size_t>(groups)) {
        if (candidate_rows == 0) return;
        mult4.resize(static_cast<size_t>(cols));
        deq4.resize(static_cast<size_t>(cols));
        out6.resize(static_cast<size_t>(candidate_rows * cols));
        out4.resize(static_cast<size_t>(candidate_rows * cols));
    }
};

// The block maxima of rows [r0, r1) and each group's scale (and map-to-4 candidate) over its
// columns.
void panel_scales(const float* x, int64_t r0, int64_t r1, int64_t cols, int64_t block_cols,
                  BlockScaleRule rule, const QuantizeOptions& opt, PanelWork& w) {
    std::fill(w.col_amax.begin(), w.col_amax.end(), 0u);
    for (int64_t r = r0; r < r1; ++r) {
        const float* row = x + r * cols;
        for (int64_t c = 0; c < cols; ++c) w.col_amax[c] = std::max(w.col_amax[c], abs_bits(row[c]));
    }
    for (size_t g = 0; g < w.group_amax.size(); ++g) {
        const int64_t c0 = static_cast<int64_t>(g) * block_cols, c1 = std::min(cols, c0 + block_cols);
        uint32_t m = 0;
        for (int64_t c = c0; c < c1; ++c) m = std::max(m, w.col_amax[c]);
        w.group_amax[g] = m;
        const float amax = std::bit_cast<float>(m);
        const BlockScale bs = block_scale(rule, amax, opt.element, opt.tensor_scale);
        std::fill(w.mult.begin() + c0, w.mult.begin() + c1, bs.multiplier);
        std::fill(w.deq.begin() + c0, w.deq.begin() + c1, bs.dequant);
        if (rule != BlockScaleRule::NvFp4FourOverSix) continue;
        const BlockScale four = nvfp4_block_scale(amax, opt.tensor_scale, kFourOverSixExpansion);
        std::fill(w.mult4.begin() + c0, w.mult4.begin() + c1, four.multiplier);
        std::fill(w.deq4.begin() + c0, w.deq4.begin() + c1, four.dequant);
    }
}

// 4 over 6: quantizes rows [r0, r1) with both candidates (the same random bits for both, as the
// kernel draws them by element index), sums each block's error in float64 (rows, then columns),
// and moves the map-to-4 scales into w.mult / w.deq for the groups where that error is lower.
// A NaN error (a NaN or inf in the block) compares false: the block keeps 6.
void choose_four_over_six(const float* x, int64_t r0, int64_t r1, int64_t cols, int64_t block_cols,
                          RunFn<ColumnScales> run, const QuantizeOptions& opt, PanelWork& w) {
    const ColumnScales six{w.mult.data(), w.deq.data()}, four{w.mult4.data(), w.deq4.data()};
    const size_t groups = w.group_amax.size();
    std::vector<double> err6(groups, 0.0), err4(groups, 0.0);
    const bool squared = opt.four_over_six_error == FourOverSixError::Mse;
    for (int64_t r = r0; r < r1; ++r) {
        const float* row = x + r * cols;
        float* o6 = w.out6.data() + (r - r0) * cols;
        float* o4 = w.out4.data() + (r - r0) * cols;
        const uint64_t index0 = static_cast<uint64_t>(r * cols);
        run(row, o6, cols, six, opt.tensor_scale, opt.random_key, index0, nullptr);
        run(row, o4, cols, four, opt.tensor_scale, opt.random_key, index0, nullptr);
        for (size_t g = 0; g < groups; ++g) {
            const int64_t c0 = static_cast<int64_t>(g) * block_cols, c1 = std::min(cols, c0 + block_cols);
            double e6 = err6[g], e4 = err4[g];
            for (int64_t c = c0; c < c1; ++c) {
                const double d6 = static_cast<double>(row[c]) - o6[c],
                             d4 = static_cast<double>(row[c]) - o4[c];
                e6 += squared ? d6 * d6 : std::fabs(d6);
                e4 += squared ? d4 * d4 : std::fabs(d4);
            }
            err6[g] = e6;
            err4[g] = e4;
        }
    }
    for (size_t g = 0; g < groups; ++g) {
        w.to_four[g] = err4[g] < err6[g];
        if (!w.to_four[g]) continue;
        const int64_t c0 = static_cast<int64_t>(g) * block_cols, c1 = std::min(cols, c0 + block_cols);
        std::copy(w.mult4.begin() + c0, w.mult4.begin() + c1, w.mult.begin() + c0);
        std::copy(w.deq4.begin() + c0, w.deq4.begin() + c1, w.deq.begin() + c0);
    }
}

// Per-block statistics of one panel: whether its maximum clips, its scale's exponent, and
// whether 4 over 6 chose 4.
struct BlockRecords {
    std::vector<int16_t> exponents;
    std::vector<uint8_t> clipped, to_four;
    std::vector<uint32_t> panel_amax;
};

void record_panel_blocks(int64_t p, int64_t block_cols, bool divide, Format element, const PanelWork& w,
                         BlockRecords& records) {
    const int64_t groups = static_cast<int64_t>(w.group_amax.size());
    for (int64_t g = 0; g < groups; ++g) {
        const size_t b = static_cast<size_t>(p * groups + g);
        const int64_t c0 = g * block_cols;
        const uint32_t m = w.group_amax[static_cast<size_t>(g)];
        uint32_t& panel_max = records.panel_amax[static_cast<size_t>(p)];
        panel_max = std::max(panel_max, m);
        const float amax = std::bit_cast<float>(m), mult = w.mult[c0], deq = w.deq[c0];
        const float scaled_max = divide ? amax / mult : amax * mult;
        records.clipped[b] = element_rounds_past_max(element, scaled_max);
        records.exponents[b] =
            deq > 0.0f && std::isfinite(deq) ? static_cast<int16_t>(floor_log2(deq)) : kNoExponent;
        records.to_four[b] = w.to_four[static_cast<size_t>(g)];
    }
}

}  // namespace

void quantize_blocks(const float* x, float* out, int64_t rows, int64_t cols, BlockShape block,
                     BlockScaleRule rule, const QuantizeOptions& opt) {
    const bool stats = opt.stats != nullptr;
    const bool four_over_six = rule == BlockScaleRule::NvFp4FourOverSix;
    const bool divide = rule == BlockScaleRule::NvFp4 || four_over_six;
    const float post = divide ? opt.tensor_scale : 1.0f;
    const auto run = pick_run<ColumnScales>(opt.element, divide, opt.stochastic, stats);
    const auto run_candidate =
        four_over_six ? pick_run<ColumnScales>(opt.element, true, opt.stochastic, false) : nullptr;
    const int64_t panels = (rows + block.rows - 1) / block.rows;
    const int64_t groups = (cols + block.cols - 1) / block.cols;
    std::vector<UnitStats> panel_stats(stats ? static_cast<size_t>(panels) : 0);
    BlockRecords records;
    records.exponents.resize(stats ? static_cast<size_t>(panels * groups) : 0);
    records.clipped.resize(records.exponents.size());
    records.to_four.resize(records.exponents.size());
    records.panel_amax.resize(panel_stats.size());
    parallel_for(panels, grain_units(block.rows * cols), [&](int64_t p0, int64_t p1) {
        PanelWork w(cols, groups, four_over_six ? block.rows : 0);
        for (int64_t p = p0; p < p1; ++p) {
            const int64_t r0 = p * block.rows, r1 = std::min(rows, r0 + block.rows);
            panel_scales(x, r0, r1, cols, block.cols, rule, opt, w);
            if (four_over_six) choose_four_over_six(x, r0, r1, cols, block.cols, run_candidate, opt, w);
            if (stats) record_panel_blocks(p, block.cols, divide, opt.element, w, records);
            const ColumnScales scales{w.mult.data(), w.deq.data()};
            for (int64_t r = r0; r < r1; ++r)
                run(x + r * cols, out + r * cols, cols, scales, post, opt.random_key,
                    static_cast<uint64_t>(r * cols), stats ? &panel_stats[static_cast<size_t>(p)] : nullptr);
        }
    });
    if (!stats) return;
    ScalingStats& s = *opt.stats;
    s.element = opt.element;
    s.amax = std::bit_cast<float>(
        records.panel_amax.empty() ? 0u
                                   : *std::max_element(records.panel_amax.begin(), records.panel_amax.end()));
    s.scale = divide ? opt.tensor_scale : 0.0f;
    finish_element_stats(panel_stats, rows * cols, s);
    finish_block_stats(records.exponents, records.clipped, s);
    s.blocks_scaled_to_4 = std::count(records.to_four.begin(), records.to_four.end(), uint8_t{1});
}

std::array<float, 16> hadamard_signs(uint64_t seed) {
    std::array<float, 16> signs{};
    for (size_t i = 0; i < signs.size(); ++i) signs[i] = (counter_random_bits(seed, i) & 1u) ? -1.0f : 1.0f;
    return signs;
}

std::array<float, 16> fixed_hadamard_signs() {
    std::array<float, 16> signs{};
    signs.fill(1.0f);
    return signs;
}

void hadamard16_along_rows(const float* x, float* out, int64_t rows, int64_t cols,
                           const std::array<float, 16>& signs) {
    const int64_t groups = rows / 16;
    parallel_for(groups, grain_units(16 * cols), [&](int64_t g0, int64_t g1) {
        for (int64_t g = g0; g < g1; ++g) {
            float* o = out + g * 16 * cols;
            const float* in = x + g * 16 * cols;
            for (int i = 0; i < 16; ++i)
                for (int64_t c = 0; c < cols; ++c)
                    o[i * cols + c] = in[i * cols + c] * signs[static_cast<size_t>(i)];
            // Sylvester's H16 as four butterfly stages over whole rows (vectorised across columns).
            for (int h = 1; h < 16; h *= 2)
                for (int i = 0; i < 16; i += 2 * h)
                    for (int j = i; j < i + h; ++j) {
                        float* a = o + j * cols;
                        float* b = o + (j + h) * cols;
                        for (int64_t c = 0; c < cols; ++c) {
                            const float u = a[c], v = b[c];
                            a[c] = u + v;
                            b[c] = u - v;
                        }
                    }
            for (int64_t k = 0; k < 16 * cols; ++k) o[k] *= 0.25f;  // 1/sqrt(16): orthogonal
        }
    });
    if (x != out) std::copy(x + groups * 16 * cols, x + rows * cols, out + groups * 16 * cols);
}

}  // namespace mpwb
