// The names under which a run's metrics are stored, one constant each. The recorder writes
// them, and the run browser, `mpwb-cli runs`, the plot board and the report read them, so a
// key is spelt once: a renamed or new metric changes here and in the one place that logs it.
#pragma once
#include <string>
#include <string_view>

namespace mpwb::metric_key {

// Per training step (RunRecorder::on_step).
inline constexpr char train_loss[] = "train_loss";
inline constexpr char train_accuracy[] = "train_accuracy";
inline constexpr char samples_per_second[] = "samples_per_second";  // this step's samples / its seconds
inline constexpr char step_seconds[] = "step_seconds";
inline constexpr char lr[] = "lr";
inline constexpr char loss_scale[] = "loss_scale";
inline constexpr char skipped[] = "skipped";                      // 1 when the update was dropped
inline constexpr char overflow_count[] = "overflow_count";        // running total
inline constexpr char skipped_count[] = "skipped_count";          // running total
inline constexpr char retries[] = "retries";                      // only when nonzero
inline constexpr char grad_norm[] = "grad_norm";                  // only when nonzero
inline constexpr char tokens_per_second[] = "tokens_per_second";  // per-position targets only

// Per evaluation (RunRecorder::on_eval).
inline constexpr char test_loss[] = "test_loss";
inline constexpr char test_accuracy[] = "test_accuracy";
inline constexpr char epoch_train_loss[] = "epoch_train_loss";
inline constexpr char epoch_train_accuracy[] = "epoch_train_accuracy";
inline constexpr char test_bits_per_token[] = "test_bits_per_token";  // per-position targets only

// Per gradient statistic: "<stat>/<layer label>/<kind>" (gradient_stat).
inline constexpr char underflow[] = "underflow";
inline constexpr char subnormal[] = "subnormal";
inline constexpr char overflow[] = "overflow";
inline constexpr char max_abs[] = "max_abs";
inline constexpr char headroom_log2[] = "headroom_log2";

// Histogram kinds (and the <kind> part of a gradient statistic's key).
inline constexpr char activation_grad[] = "activation_grad";
inline constexpr char weight_grad_prefix[] = "weight_grad:";  // + parameter name

// Instability indicators per statistics step of a transformer run (RunRecorder::on_stability):
// "stability/<block label>/<indicator>" ("stability/2 TransformerBlock/attn_logit_max") and
// "stability/output/<indicator>" (stability_key; sessions/stability_series.h reads them back).
inline constexpr char stability_prefix[] = "stability/";
inline constexpr char stability_output[] = "output";  // never a layer label: those start with a digit
inline constexpr char attn_logit_max[] = "attn_logit_max";
inline constexpr char attn_entropy_mean[] = "attn_entropy_mean";
inline constexpr char attn_entropy_min[] = "attn_entropy_min";
inline constexpr char residual_rms[] = "residual_rms";
inline constexpr char outlier_ratio[] = "outlier_ratio";
inline constexpr char logit_max[] = "logit_max";
inline constexpr char log_z_mean[] = "log_z_mean";

// The event the recorder writes last: RunSummary::to_json().
inline constexpr char summary_event[] = "summary";

inline std::string gradient_stat(std::string_view stat, std::string_view layer, std::string_view kind) {
    std::string key(stat);
    key += '/';
    key += layer;
    key += '/';
    key += kind;
    return key;
}

inline std::string stability_key(std::string_view source, std::string_view indicator) {
    std::string key(stability_prefix);
    key += source;
    key += '/';
    key += indicator;
    return key;
}

}  // namespace mpwb::metric_key
