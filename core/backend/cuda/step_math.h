// The device-resident training step's state and rules: the structs the step's kernels share
// through device memory, and as MPWB_HD functions the two decisions the step takes on the GPU,
// so that no host synchronisation is needed per step:
//   scaler_rule     the LossScaler's on_step_result for the skip rule (core/precision), kept
//                   bit for bit: tests/backend/test_step_math drives both with the same overflow
//                   sequences and compares every field;
//   optimizer_rule  one element of the SGD/Adam/AdamW update (core/optim/optimizer.cpp),
//                   compared element for element with Optimizer::step by the same test.
// The host replays each step's record through its own LossScaler (events, summaries), so the
// device decides and the host narrates; the two must agree, and the trainer checks they do.
//
// Bit-exactness with the CPU needs every operation rounded on its own, so the rules do their
// arithmetic through the *_rn helpers of core/backend/hd_math.h. The host helpers that build these structs
// from core's LossScaler are in step_math_host.h, so that this header needs neither nlohmann json nor CUDA
// headers.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/backend/cuda/device_types.h"
#include "core/backend/hd_math.h"

namespace mpwb::cuda {

inline constexpr int32_t kAllFinite = 0x7fffffff;
// StepRecord::first_bad when every gradient was finite but the loss was not (the CPU trainer's
// first_nonfinite_layer "loss"); gradient orders start at 0, the tensor nearest the loss.
inline constexpr int32_t kNonFiniteLoss = -1;

// Per-step flags the step's kernels share. Reset at the start of every step.
struct StepFlags {
    int32_t first_bad = kAllFinite;  // smallest GradEntry::order holding a non-finite value
    int32_t pad = 0;
    // Of the unscaled gradients, when clipping asked for it. Double, as core/optim/grad_clip.cpp
    // accumulates it: a float sum of millions of squares loses the digits the norm needs.
    double sum_squares = 0.0;
};

// One gradient tensor for check_gradients. order: 0 for the tensor nearest the loss.
struct GradEntry {
    const void* data = nullptr;
    int64_t n = 0;
    int64_t offset = 0;  // elements before this tensor in the concatenation (for the grid)
    int32_t order = 0;
    DType dtype = DType::F32;
};

// One parameter for optimizer_step. copy is null when the layers read the master directly.
struct ParamEntry {
    float* master = nullptr;
    const void* grad = nullptr;
    void* copy = nullptr;
    float* a = nullptr;  // SGD momentum buffer / Adam first moment
    float* b = nullptr;  // Adam second moment
    int64_t n = 0;
    int64_t offset = 0;
    DType grad_dtype = DType::F32;
    DType copy_dtype = DType::F16;
    int32_t decay = 1;  // Parameter::weight_decay
};

enum class OptimizerKind : int32_t { SGD = 0, Adam = 1, AdamW = 2 };

struct OptimizerConstants {
    OptimizerKind kind = OptimizerKind::SGD;
    float momentum = 0.0f;
    int32_t nesterov = 0;
    float weight_decay = 0.0f;
    float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    int32_t master_fp16 = 0;  // fp16-pure: the master itself is rounded to FP16 after the update
    float clip_norm = 0.0f;   // 0: no clipping
};

// The skip rule's configuration (LossScalerConfig with OverflowAction::Skip; retries need the
// host and run step by step). The factors and clamps are doubles because LossScaler keeps them
// as doubles and forms scale * factor in double before rounding once to float: a factor such as
// 0.3 would give other scales if it were rounded to float first.
struct ScalerRuleConfig {
    int32_t mode = 2;  // 0 none, 1 static, 2 dynamic (ScalerMode's order)
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
    int32_t hysteresis = 1;
    int32_t refill_every_clean_step = 0;
    double min_scale = 0x1p-24;
    double max_scale = 0x1p24;
    int32_t count_skipped_steps = 1;
    int32_t grow_only_if_finite = 1;
    int32_t growth_after_interval = 0;  // GrowthTiming::AfterInterval
    int32_t pad = 0;
};

// The scaler's state as LossScaler keeps it, plus what the step just decided.
struct ScalerState {
    float scale = 65536.0f;
    int32_t hysteresis_tracker = 1;
    int64_t growth_tracker = 0;
    int64_t optimizer_iteration = 0;
    int64_t applied_steps = 0;
    int64_t skipped_steps = 0;
    int64_t overflow_count = 0;
    float scale_used = 65536.0f;  // the scale the last step ran with
    int32_t last_applied = 1;     // the last step's verdict
};

// What the host tells the device per step (copied from pinned memory before the launch).
struct StepInput {
    int64_t step = 0;          // 1-based
    int64_t batch_offset = 0;  // into the epoch's order
    float lr_scale = 1.0f;     // the user's live learning-rate change
    int32_t pad = 0;
};

// What the device tells the host per step (a ring in device memory, read back every N steps).
struct StepRecord {
    int64_t step = 0;
    float loss = 0.0f;
    float scale_used = 0.0f;
    int64_t correct = 0;
    int32_t first_bad = kAllFinite;
    int32_t applied = 1;
    float grad_norm = 0.0f;  // before clipping; 0 when not clipping
    float lr = 0.0f;
    // The device's global timer (ns) when the record was written: consecutive records give each
    // step's own time, where host read-backs arrive in bursts.
    uint64_t end_ns = 0;
};

// ExponentHistogram in device memory: counts as unsigned long long for atomicAdd, the largest
// magnitude as the bits of a non-negative float (they order like the values, inf included).
struct DeviceHistogram {
    static constexpr int kMinExponent = -149;
    static constexpr int kBinCount = 277;
    unsigned long long bins[kBinCount];
    unsigned long long zeros;
    unsigned long long non_finite;
    unsigned long long above_max[6];  // indexed by Format
    unsigned int max_abs_bits;
    unsigned int pad;
};

// ---- the loss scaler's skip rule ----

// LossScaler::count_clean_step for a dynamic scaler: hysteresis refill, the growth window in
// either timing, and growth (refused when the grown scale is not a finite float and
// grow_only_if_finite, else clamped at max_scale). std::min / std::max are spelled out as
// LossScaler's library calls evaluate them, comparison first.
MPWB_HD void scaler_count_clean_step(const ScalerRuleConfig& c, ScalerState& s) {
    if (c.refill_every_clean_step) s.hysteresis_tracker = c.hysteresis;
    bool due = false;
    if (!c.growth_after_interval) {
        ++s.growth_tracker;
        due = s.growth_tracker >= c.growth_interval;
        if (due) s.growth_tracker = 0;
    } else {
        due = s.growth_tracker > c.growth_interval;
        if (due) s.growth_tracker = 0;
        ++s.growth_tracker;
    }
    if (!due) return;
    if (!c.refill_every_clean_step) s.hysteresis_tracker = c.hysteresis;
    const double wanted = mul_rn(static_cast<double>(s.scale), c.growth_factor);
    if (c.grow_only_if_finite && !is_finite(static_cast<float>(wanted))) return;
    s.scale = static_cast<float>(c.max_scale < wanted ? c.max_scale : wanted);
}

// LossScaler::back_off: every overflow restarts the growth window; the hysteresis-th overflow
// since the last refill, and each one after it, multiplies the scale by backoff_factor, clamped
// below at min_scale.
MPWB_HD void scaler_back_off(const ScalerRuleConfig& c, ScalerState& s) {
    s.growth_tracker = 0;
    --s.hysteresis_tracker;
    if (s.hysteresis_tracker > 0) return;
    s.hysteresis_tracker = 0;
    const double wanted = mul_rn(static_cast<double>(s.scale), c.backoff_factor);
    s.scale = static_cast<float>(wanted < c.min_scale ? c.min_scale : wanted);
}

// One scaler decision (LossScaler::on_step_result with OverflowAction::Skip, in every mode);
// returns true when the step's update is applied. Sets scale_used to the scale the step ran with
// (s.scale on entry) and last_applied to the verdict.
MPWB_HD bool scaler_rule(const ScalerRuleConfig& c, bool nonfinite, ScalerState& s) {
    s.scale_used = s.scale;
    const bool dynamic = c.mode == 2;
    if (!nonfinite) {
        ++s.applied_steps;
        ++s.optimizer_iteration;
        if (dynamic) scaler_count_clean_step(c, s);
        s.last_applied = 1;
        return true;
    }
    ++s.overflow_count;
    if (dynamic) scaler_back_off(c, s);
    ++s.skipped_steps;
    if (c.count_skipped_steps) ++s.optimizer_iteration;
    s.last_applied = 0;
    return false;
}

// ---- the optimizer ----

// The per-step scalars of one update, which the CPU optimizer computes once per tensor and step
// (core/optim/optimizer.cpp, Adam::update_range): computing them per element would cost two
// double pows per element, so optimizer_step forms them once per block. Trivially constructible
// (no member initialisers) so a kernel can hold one in shared memory.
struct OptimizerStepScalars {
    float lr;            // SGD
    int32_t fresh;       // SGD: the first applied update (the momentum buffer starts at d)
    float step_size;     // Adam: lr / (1 - beta1^t), in double, rounded to float
    float bc2_sqrt;      // Adam: sqrt(1 - beta2^t), in double, rounded to float
    float one_minus_b1;  // 1 - beta1 in double, rounded to float
    float one_minus_b2;
    float shrink;  // AdamW, parameters with weight decay: 1 - lr * wd in double
};

// lr: this step's learning rate; step: this update's number from 1 (Adam's bias corrections);
// fresh: the parameter's first applied update.
MPWB_HD OptimizerStepScalars optimizer_step_scalars(const OptimizerConstants& k, float lr, int64_t step,
                                                    bool fresh) {
    OptimizerStepScalars s{};
    s.bc2_sqrt = 1.0f;
    s.shrink = 1.0f;
    s.lr = lr;
    s.fresh = fresh ? 1 : 0;
    if (k.kind == OptimizerKind::SGD) return s;
    const double b1 = k.beta1, b2 = k.beta2;
    const double bc1 = sub_rn(1.0, pow_d(b1, static_cast<double>(step)));
    const double bc2 = sub_rn(1.0, pow_d(b2, static_cast<double>(step)));
    s.step_size = static_cast<float>(div_rn(static_cast<double>(lr), bc1));
    s.bc2_sqrt = static_cast<float>(sqrt_rn(bc2));
    s.one_minus_b1 = static_cast<float>(sub_rn(1.0, b1));
    s.one_minus_b2 = static_cast<float>(sub_rn(1.0, b2));
    s.shrink =
        static_cast<float>(sub_rn(1.0, mul_rn(static_cast<double>(lr), static_cast<double>(k.weight_decay))));
    return s;
}

// One element of the update, g already unscaled and clipped; w the FP32 master, a and b the
// kind's state (SGD: a = momentum buffer; Adam: a, b = first and second moments; unused ones
// may be any float). decay: Parameter::weight_decay. FP32 per element, operation by operation
// as Sgd::update_range and adam_loop compute it.
MPWB_HD void optimizer_rule(const OptimizerConstants& k, const OptimizerStepScalars& s, bool decay, float g,
                            float& w, float& a, float& b) {
    const float wd = decay ? k.weight_decay : 0.0f;
    if (k.kind == OptimizerKind::SGD) {
        float d = g;
        if (wd != 0.0f) d = add_rn(d, mul_rn(wd, w));
        if (k.momentum != 0.0f) {
            const float buf = s.fresh ? d : add_rn(mul_rn(k.momentum, a), d);
            a = buf;
            d = k.nesterov ? add_rn(d, mul_rn(k.momentum, buf)) : buf;
        }
        w = sub_rn(w, mul_rn(s.lr, d));
        return;
    }
    const bool decoupled = k.kind == OptimizerKind::AdamW;
    if (wd != 0.0f) {
        if (decoupled)
            w = mul_rn(w, s.shrink);
        else
            g = add_rn(g, mul_rn(wd, w));
    }
    const float m = add_rn(mul_rn(k.beta1, a), mul_rn(s.one_minus_b1, g));
    const float v = add_rn(mul_rn(k.beta2, b), mul_rn(s.one_minus_b2, mul_rn(g, g)));
    a = m;
    b = v;
    const float denom = add_rn(div_rn(sqrt_rn(v), s.bc2_sqrt), k.eps);
    w = sub_rn(w, mul_rn(s.step_size, div_rn(m, denom)));
}

// This step's learning rate: the schedule's rate at the optimizer iteration before this step's
// increment (held at the table's last entry past its end) times the user's live factor, as the
// CPU trainer's schedule.lr_at(outcome.optimizer_iteration - 1) * lr_scale, FP32 product.
// iteration_after: ScalerState::optimizer_iteration after scaler_rule; a skipped step that did
// not advance it reads the rate of the iteration before, held at 0 (the trainer's max(0, ...)).
MPWB_HD float step_lr(const float* lr_table, int64_t lr_table_size, int64_t iteration_after, float lr_scale) {
    int64_t index = iteration_after - 1;
    if (index > lr_table_size - 1) index = lr_table_size - 1;
    if (index < 0) index = 0;
    return mul_rn(lr_table[index], lr_scale);
}

// The clipping factor from the sum of squares of the unscaled gradients, as clip_grad_norm:
// 1 (no multiply) unless clip_norm > 0 and the norm is finite and above it.
MPWB_HD float clip_coefficient(double sum_squares, float clip_norm) {
    if (!(clip_norm > 0.0f)) return 1.0f;
    const auto norm = static_cast<float>(sqrt_rn(sum_squares));
    if (!is_finite(norm) || norm <= clip_norm) return 1.0f;
    return div_rn(clip_norm, add_rn(norm, 1e-6f));
}

// The same with the per-step scalars formed per call: for references and tests, not kernels.
MPWB_HD void optimizer_rule(const OptimizerConstants& k, float lr, int64_t step, bool fresh, bool decay,
                            float g, float& w, float& a, float& b) {
    optimizer_rule(k, optimizer_step_scalars(k, lr, step, fresh), decay, g, w, a, b);
}

}  // namespace mpwb::cuda
