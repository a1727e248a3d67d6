// CudaStepEngine: the StepEngine of the CUDA backend. Built from a Network, it keeps everything
// a training step touches on the GPU in the formats the precision policy names (FP16/BF16
// activations, gradients and weight copies as real 2-byte values, FP32 masters and optimizer
// state), and runs one step as a fixed sequence of enqueued work:
//
//   gather batch -> forward (cuBLASLt GEMMs with bias/ReLU epilogues, cuDNN convolution and
//   pooling, own kernels) -> the run's FP32 loss (run_loss) with the loss scale folded in ->
//   backward -> multi-tensor unscale + non-finite check -> scaler decision -> fused optimizer
//   (skips itself on overflow) -> the step's record into mapped host memory.
//
// Nothing in that sequence synchronises or allocates, so each batch size's sequence is captured
// once as a CUDA graph and replayed; the host only writes the step's small StepInput (step
// number, batch offset, live learning-rate factor) before each replay.
//
// The plan is each layer's DeviceOp (device_plan.h: what the Layer object says it runs as, never
// the network's JSON or its class); each op's launches are their own overloads of forward and
// backward below. A statistics step is a graph of its own (cuda_gradient_stats.cpp): the plain
// step plus, per layer, the gradients' FP32 values before rounding (which a real BF16 GEMM never
// writes to memory) computed again into scratch from the same operands, binned on the device by
// the exponent-histogram kernel; only the counts reach the host.
#pragma once
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/cuda/device_context.h"
#include "core/engine/cuda/device_gradient_stats.h"
#include "core/backend/cuda/fp8_kernels.h"
#include "core/engine/cuda/cuda_fp8_linear.h"
#include "core/engine/cuda/device_plan.h"
#include "core/backend/cuda/step_math.h"
#include "core/engine/step_engine.h"

namespace mpwb::cuda {

class CudaStepEngine final : public StepEngine {
public:
    // Plans the network, then uploads the dataset and the network's initial weights (masters,
    // reduced copies, BatchNorm running statistics).
    CudaStepEngine(DeviceContext& context, Network& network, const Dataset& data,
                   const StepEngineConfig& config);
    ~CudaStepEngine() override;

    // A device FP8 run keeps its amax histories on the device, which checkpoints do not hold yet.
    StepCapabilities capabilities() const override { return {.checkpoints = !fp8_.enabled}; }
    void set_epoch_order(std::span<const int64_t> order) override;
    void set_scaler(const LossScalerConfig& config, const LossScaler& state) override;
    // fp8-delayed / fp8-current settings changed live (cuda_fp8_linear.cpp).
    void set_recipe(const ScaledRecipeConfig& recipe) override;
    void launch(const StepLaunch& attempt) override;
    void collect(std::vector<StepResult>& out, bool wait) override;
    Backend::LossResult evaluate() override;
    void download_weights() override;
    // Checkpoints (cuda_engine_state.cpp): the optimizer's buffers in Optimizer::save_state's
    // format, so a checkpoint resumes on either engine. load_state also re-uploads the weights
    // and BatchNorm statistics from the network's host tensors and takes the update count from
    // the scaler set_scaler gave it (the restored run's), refusing an optimizer state that counts
    // other updates.
    StepEngineState save_state() override;
    void load_state(const StepEngineState& state) override;
    std::string description() const override;

private:
    struct Buffer {
        void* data = nullptr;
        DType dtype = DType::F32;
        int64_t per_sample = 0;  // elements per sample (activations) or in all (parameters)
    };
    struct ParamPlan {
        Parameter* host = nullptr;
        float* master = nullptr;
        void* copy = nullptr;  // null when the layer reads the master
        bool has_copy = false;
        DType copy_dtype = DType::F32;
        void* grad = nullptr;
        DType grad_dtype = DType::F32;
        float* a = nullptr;
        float* b = nullptr;
        int64_t n = 0;
        bool decay = true;
        const void* read() const { return copy ? copy : master; }
    };
    // A planned layer with its device state.
    struct LayerPlan : PlannedLayer {
        explicit LayerPlan(PlannedLayer planned) : PlannedLayer(std::move(planned)) {}
        // Linear with a bias: whether its bias gradient comes from the weight-gradient GEMM's
        // epilogue or from the own column-sum kernel; timed on the first (eager) step.
        enum class BiasGradPath { Undecided, Epilogue, Kernel } bias_grad_path = BiasGradPath::Undecided;
        std::vector<size_t> params;         // indices into params_
        std::vector<Tensor*> host_buffers;  // Layer::buffers(): BatchNorm's running mean and variance
        float* running_mean = nullptr;
        float* running_var = nullptr;
        float* save_mean = nullptr;
        float* save_invstd = nullptr;
        float* mask = nullptr;  // dropout
        // Statistics: the histogram index of each parameter's gradient and of the input gradient
        // (kNoTarget where the layer writes none).
        std::vector<size_t> param_targets;
        size_t dx_target = kNoTarget;
        Fp8LinearState fp8;  // Linear under fp8-delayed / fp8-current (cuda_fp8_linear.cpp)
    };
    static constexpr size_t kNoTarget = static_cast<size_t>(-1);

    // One layer's launches: what they read and write.
    struct LayerCall {
        LayerPlan& plan;
        size_t index = 0;
        int64_t batch = 0;
        bool training = true;
        const void* x = nullptr;
        const void* y = nullptr;
        void* y_out = nullptr;      // forward's output (y)
        const void* dy = nullptr;   // backward
        void* dx = nullptr;         // backward; null below the lowest trained layer
        void* dx_buffer = nullptr;  // the layer's input-gradient buffer, even where dx is null
    };

    void plan_layers(Network& network);
    void plan_parameters(LayerPlan& plan, Layer& layer, std::span<Parameter* const> all_params);
    void upload(const Dataset& data);
    void allocate_buffers();
    void allocate_activations();
    void allocate_parameter_buffers();
    void allocate_layer_state();
    void allocate_step_state();
    // Each parameter's master, copy, gradient and optimizer state; returns the largest's size.
    int64_t allocate_parameters();
    // The gradient and parameter lists, the optimizer's constants, the schedule and the record
    // ring, before the first step.
    void upload_step_tables();
    // The step as enqueued work (what a graph captures); batch is the sample count.
    void enqueue_step(int64_t batch);
    void enqueue_forward(int64_t batch, bool training);
    void enqueue_backward(int64_t batch);
    void enqueue_tail();
    // The run's loss kernel over the output of `batch` samples; dout null: the loss only.
    void enqueue_loss(int64_t batch, void* dout, const float* grad_scale);
    void forward_layer(size_t i, int64_t batch, bool training);
    void backward_layer(size_t i, int64_t batch);
    void forward(const NoDeviceOp&, const LayerCall& call);
    void forward(const LinearOp& op, const LayerCall& call);
    void forward(const Conv2dOp& op, const LayerCall& call);
    void forward(const PoolOp& op, const LayerCall& call);
    void forward(const ActivationOp& op, const LayerCall& call);
    void forward(const ReshapeOp&, const LayerCall&) {}
    void forward(const DropoutOp& op, const LayerCall& call);
    void forward(const BatchNormOp& op, const LayerCall& call);
    void backward(const NoDeviceOp&, const LayerCall& call);
    void backward(const LinearOp& op, const LayerCall& call);
    void backward(const Conv2dOp& op, const LayerCall& call);
    void backward(const PoolOp& op, const LayerCall& call);
    void backward(const ActivationOp& op, const LayerCall& call);
    void backward(const ReshapeOp&, const LayerCall&) {}
    void backward(const DropoutOp& op, const LayerCall& call);
    void backward(const BatchNormOp& op, const LayerCall& call);
    // Gradient statistics (cuda_gradient_stats.cpp).
    void plan_statistics(Network& network);
    void allocate_statistics();
    // Runs the step for `batch` from graphs (captured on the second use of a batch size; the
    // first runs eagerly so cuBLASLt and cuDNN choose their algorithms outside a capture).
    void launch_step(std::map<int64_t, cudaGraphExec_t>& graphs, int64_t batch);
    void enqueue_statistics_start(int64_t batch);
    void enqueue_statistics_end();
    // Before a layer's backward: the FP32 gradients its reduced-precision launches round away,
    // computed into scratch from the same operands and binned. After: the FP32 gradients it
    // wrote itself, binned where they are.
    void statistics_before(const LayerCall& call);
    void statistics_after(const LayerCall& call);
    void shadow(const NoDeviceOp&, const LayerCall&) {}
    void shadow(const ReshapeOp&, const LayerCall&) {}
    void shadow(const LinearOp& op, const LayerCall& call);
    void shadow(const Conv2dOp& op, const LayerCall& call);
    void shadow(const PoolOp& op, const LayerCall& call);
    void shadow(const ActivationOp& op, const LayerCall& call);
    void shadow(const DropoutOp& op, const LayerCall& call);
    void shadow(const BatchNormOp& op, const LayerCall& call);
    // An exact FP32 copy of n values of the activation dtype, in scratch slot `slot` (0..2).
    const float* upcast(int slot, const void* values, int64_t n);
    void histogram(size_t target, DType t, const void* values, int64_t n);
    bool wants_shadow_grad(const LayerPlan& L, size_t p) const;
    void deliver_statistics();
    // Linear's weight and bias gradients, the bias's by the GEMM's epilogue or the own kernel
    // (whichever the first step measured faster).
    void linear_weight_grads(const LayerCall& call);
    // An FP32 target for a gradient: the parameter's own buffer when it is FP32, else scratch
    // that store_param_grad converts.
    float* f32_target(const ParamPlan& p, float* scratch) const;
    // dst (dtype of the parameter's grad) from an FP32 sum, converting when they differ.
    void store_param_grad(const ParamPlan& p, const float* sum);

    // Per-tensor FP8 (cuda_fp8_linear.cpp): the state, the step's begin and end, a Linear's
    // launches on the FP8 tensor cores or, for shapes they refuse, with its FP8 values in BF16.
    struct Fp8Shapes {
        Fp8MatmulShape forward, wgrad, dgrad;
    };
    void allocate_fp8(Network& network);
    Fp8Shapes fp8_shapes(const LayerPlan& L, int64_t batch) const;
    void note_fp8_shapes(const LayerPlan& L);
    bool fp8_on_tensor_cores(LayerPlan& L, int64_t batch);
    void enqueue_fp8_begin();
    void enqueue_fp8_end();
    void fp8_quantize_operand(DType t, const void* x, int64_t rows, int64_t cols, int32_t state,
                              Fp8Element element, kernels::Fp8Outputs out, bool record);
    void fp8_forward(const LayerCall& call);
    void fp8_backward(const LayerCall& call);
    void fp8_backward_fp8(const LayerCall& call);
    void fp8_backward_bf16(const LayerCall& call);

    DeviceContext& ctx_;
    StepEngineConfig config_;
    std::vector<float> lr_by_iteration_;  // the schedule sampled for iterations 0..total_steps
    DeviceArena arena_;
    cudaStream_t stream_ = nullptr;
    const LossDefinition* loss_ = nullptr;  // the run's loss (run_loss)
    int64_t output_width_ = 0;
    int64_t label_width_ = 1;
    int64_t max_batch_ = 0;
    size_t lowest_trained_ = 0;
    DType act_ = DType::F32;
    bool tf32_ = false;

    std::vector<LayerPlan> layers_;
    std::vector<ParamPlan> params_;
    std::vector<Buffer> acts_;           // acts_[i]: input of layer i; the last one is the output
    std::vector<Buffer> grads_;          // grads_[i]: gradient of acts_[i]
    float* bias_sum_ = nullptr;          // FP32 scratch for a bias or BatchNorm gradient
    void* dtype_scratch_ = nullptr;      // a weight gradient in the compute dtype before conversion
    void* reduction_scratch_ = nullptr;  // the partials of the losses' and bias gradients' sums
    float* labels_ = nullptr;

    // Dataset and batch order.
    float* train_x_ = nullptr;
    float* train_y_ = nullptr;
    float* test_x_ = nullptr;
    float* test_y_ = nullptr;
    int32_t* order_ = nullptr;
    int32_t* eval_order_ = nullptr;
    int64_t train_n_ = 0, test_n_ = 0, sample_width_ = 0;

    // The step's shared state in device memory.
    StepInput* input_ = nullptr;
    StepFlags* flags_ = nullptr;
    ScalerRuleConfig* scaler_config_ = nullptr;
    ScalerState* scaler_state_ = nullptr;
    OptimizerConstants* optimizer_ = nullptr;
    float* lr_table_ = nullptr;
    GradEntry* grad_entries_ = nullptr;
    ParamEntry* param_entries_ = nullptr;
    int64_t total_param_elements_ = 0;
    float* loss_sum_ = nullptr;
    int64_t* correct_ = nullptr;
    int64_t* device_step_ = nullptr;  // StepInput::step, where dropout reads it

    // Host side of the step's input and of the record ring (mapped: the device writes records
    // straight into host memory, so reading them back needs no copy and no synchronisation).
    static constexpr int64_t kRingSize = 4096;
    PinnedBuffer inputs_;  // kRingSize StepInputs, one per step in flight
    PinnedBuffer ring_;    // kRingSize StepRecords + the count, mapped
    StepRecord* ring_host_ = nullptr;
    volatile int64_t* ring_count_host_ = nullptr;
    StepRecord* ring_device_ = nullptr;
    int64_t* ring_count_device_ = nullptr;
    int64_t records_read_ = 0;
    int64_t launched_ = 0;
    double last_collect_time_ = 0;
    uint64_t last_end_ns_ = 0;       // the last record's device timer
    double evaluation_seconds_ = 0;  // since that record, spent in evaluate()

    std::map<int64_t, cudaGraphExec_t> graphs_;  // by batch size

    // Gradient statistics: the targets in Network::backward's order, their device counts and
    // the pinned copy a statistics step ends by writing, the FP32 scratch of the recomputed
    // gradients, and the probe of the statistics step in flight.
    std::vector<GradientStatsTarget> stats_targets_;
    size_t loss_target_ = kNoTarget;
    DeviceHistogram* stats_counts_ = nullptr;
    PinnedBuffer stats_host_;
    float* stats_dx_ = nullptr;
    float* stats_grad_ = nullptr;
    float* stats_weight_ = nullptr;
    float* stats_inputs_[3] = {nullptr, nullptr, nullptr};
    float* stats_loss_sum_ = nullptr;
    int64_t* stats_correct_ = nullptr;
    cudaEvent_t stats_done_ = nullptr;
    bool statistics_pass_ = false;  // while a statistics step is enqueued
    GradientProbe* pending_probe_ = nullptr;
    int64_t pending_probe_step_ = 0;
    std::map<int64_t, cudaGraphExec_t> statistics_graphs_;

    // Checkpoints (cuda_engine_state.cpp).
    // The masters from the network's host tensors, the reduced copies derived from them on the
    // device, BatchNorm's running statistics: at construction and on load_state.
    void upload_weights();
    std::vector<Parameter*> host_parameters() const;
    std::string parameter_text(size_t index) const;  // "parameter 2 (layer 1 weight)"
    ScalerState download_scaler_state();
    // The host engine's dropout generator, carried through a device run for a resume on the
    // CPU: the device draws its masks from (seed, step) and never reads it. Unset: the state
    // the host engine starts with.
    std::optional<Rng::State> dropout_state_;
    Fp8EngineState fp8_;
};

}  // namespace mpwb::cuda
