// CudaStepEngine's checkpoints: what carries from step to step on the device and is not in the
// rest of a checkpoint, and its restore.
//
// A checkpoint holds the weights (download_weights: the FP32 masters and BatchNorm's running
// statistics into the network's host tensors), the loss scaler (the host's LossScaler is the
// authority; set_scaler uploads it, and its applied steps are the device optimizer's update count
// and its optimizer iteration the schedule's clock), the position and the live learning-rate
// factor. The device adds the optimizer's buffers (SGD's momentum, Adam's moments), which
// save_state hands over in Optimizer::save_state's format (device_optimizer_state.h). Nothing
// else carries: the reduced weight copies are the masters rounded, the gradients, activations,
// BatchNorm's batch statistics and dropout masks are rewritten by every step, and the masks come
// from a counter hash of (seed, step), so a resumed step draws the mask the uninterrupted run drew.
//
// Captured CUDA graphs stay valid across load_state: it writes into the buffers the graphs were
// captured with, and a replay reads every value (the step input, the scaler with its counters,
// the optimizer's constants, the schedule) from device memory.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/backend/cuda/cuda_check.h"
#include "core/backend/cuda/kernels.h"
#include "core/engine/cuda/cuda_step_engine.h"
#include "core/engine/cuda/device_optimizer_state.h"
#include "core/engine/host_step_engine.h"

namespace mpwb::cuda {
namespace {

void download_floats(std::vector<float>& out, const float* device, int64_t n, cudaStream_t stream) {
    out.resize(static_cast<size_t>(n));
    check_cuda(
        cudaMemcpyAsync(out.data(), device, out.size() * sizeof(float), cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync (optimizer state)");
}

void upload_floats(float* device, const std::vector<float>& values, cudaStream_t stream) {
    check_cuda(
        cudaMemcpyAsync(device, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync (optimizer state)");
}

}  // namespace

void CudaStepEngine::upload_weights() {
    for (auto& p : params_) {
        check_cuda(cudaMemcpyAsync(p.master, p.host->value.data(), static_cast<size_t>(p.n) * sizeof(float),
                                   cudaMemcpyHostToDevice, stream_),
                   "cudaMemcpyAsync (weights)");
        if (p.copy) kernels::convert(DType::F32, p.master, p.copy_dtype, p.copy, p.n, stream_);
    }
    for (auto& L : layers_) {
        if (!std::holds_alternative<BatchNormOp>(L.op)) continue;
        const Tensor& mean = *L.host_buffers.at(0);
        const Tensor& var = *L.host_buffers.at(1);
        check_cuda(cudaMemcpyAsync(L.running_mean, mean.data(), static_cast<size_t>(mean.numel()) * 4,
                                   cudaMemcpyHostToDevice, stream_),
                   "cudaMemcpyAsync (running mean)");
        check_cuda(cudaMemcpyAsync(L.running_var, var.data(), static_cast<size_t>(var.numel()) * 4,
                                   cudaMemcpyHostToDevice, stream_),
                   "cudaMemcpyAsync (running variance)");
    }
}

std::vector<Parameter*> CudaStepEngine::host_parameters() const {
    std::vector<Parameter*> out;
    for (const ParamPlan& p : params_) out.push_back(p.host);
    return out;
}

std::string CudaStepEngine::parameter_text(size_t index) const {
    for (const LayerPlan& L : layers_)
        for (size_t i : L.params)
            if (i == index)
                return "parameter " + std::to_string(index) + " (" + L.label + " " + params_[i].host->name +
                       ")";
    return "parameter " + std::to_string(index);
}

ScalerState CudaStepEngine::download_scaler_state() {
    ScalerState s;
    check_cuda(cudaMemcpyAsync(&s, scaler_state_, sizeof s, cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync (scaler state)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (scaler state)");
    return s;
}

StepEngineState CudaStepEngine::save_state() {
    ctx_.make_current();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (save state)");
    const DeviceOptimizerBuffers kept = device_optimizer_buffers(config_.optimizer);
    DeviceOptimizerState state;
    state.updates = download_scaler_state().applied_steps;
    for (const ParamPlan& p : params_) {
        if (kept.first) download_floats(state.first.emplace_back(), p.a, p.n, stream_);
        if (kept.second) download_floats(state.second.emplace_back(), p.b, p.n, stream_);
    }
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (save state)");
    StepEngineState out;
    out.optimizer = encode_device_optimizer_state(config_.optimizer, host_parameters(), state,
                                                  [this](size_t i) { return parameter_text(i); });
    out.dropout = dropout_state_ ? *dropout_state_ : Rng(config_.seed ^ kDropoutSeedSalt).state();
    return out;
}

void CudaStepEngine::load_state(const StepEngineState& saved) {
    ctx_.make_current();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (load state)");
    // Everything is checked before the first byte reaches the device.
    const DeviceOptimizerState state =
        decode_device_optimizer_state(config_.optimizer, saved.optimizer, host_parameters(),
                                      [this](size_t i) { return parameter_text(i); });
    const int64_t applied = download_scaler_state().applied_steps;
    if (state.updates != applied)
        throw DataError("the optimizer state counts " + std::to_string(state.updates) +
                        " updates of every parameter; the loss scaler the run resumes with applied " +
                        std::to_string(applied) + " steps, and the CUDA engine counts its updates with them");
    const DeviceOptimizerBuffers kept = device_optimizer_buffers(config_.optimizer);
    for (size_t i = 0; i < params_.size(); ++i) {
        const ParamPlan& p = params_[i];
        if (kept.first != (p.a != nullptr) || kept.second != (p.b != nullptr))
            throw std::logic_error("the optimizer buffers of " + parameter_text(i) + " are not its rule's");
        if (kept.first) upload_floats(p.a, state.first[i], stream_);
        if (kept.second) upload_floats(p.b, state.second[i], stream_);
    }
    upload_weights();
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (load state)");
    dropout_state_ = saved.dropout;
}

}  // namespace mpwb::cuda
