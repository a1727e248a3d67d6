// Taking a trained run elsewhere: its final weights (RunStore::final_weights) as a safetensors
// file named as a PyTorch nn.Sequential's state_dict, and optionally the Python script that
// builds that nn.Sequential and loads them (core/nn/pytorch_export.h), with a text run's vocabulary. One
// function for the CLI
// (`mpwb-cli runs export`) and the workbench. No file is ever overwritten.
#pragma once
#include <cstdint>
#include <string>

#include "core/nn/pytorch_export.h"
#include "sessions/run_store.h"

namespace mpwb {

struct ExportedModel {
    std::int64_t run_id = 0;
    std::int64_t step = 0;    // the step the weights are from
    std::size_t tensors = 0;  // tensors in the safetensors file
    std::int64_t values = 0;  // FP32 values in them
    std::string safetensors_path;
    std::string script_path;  // empty when no script was asked for
    InputNormalisation normalisation;
};

// Writes the run's final weights to `safetensors_path` and, when `script_path` is not empty, the
// PyTorch script there (it loads the weights from a file of the safetensors file's name beside
// it). Throws Error with a message naming the run or the file: the run does not exist, has no
// stored weights (say why: running, ended before its first step, recorded before schema 8),
// its network has a layer PyTorch cannot express, the weights do not fit its network, a file
// exists already (never overwritten), or cannot be written. Nothing is left behind on failure.
// `producer` goes into the safetensors metadata ("mpwb-cli 0.9.0"; empty: "mpwb").
ExportedModel export_run_for_pytorch(RunStore& store, std::int64_t run_id,
                                     const std::string& safetensors_path, const std::string& script_path,
                                     const std::string& producer = {});

// Why a run has no stored final weights, for an error: still running, ended before its first
// step, or recorded before schema 8.
std::string why_no_final_weights(const Run& run);

// How the run's inputs were normalised, from its stored configuration: synthetic sets and
// normalize=false are used as they are; otherwise the train split's statistics, computed again
// from the dataset (the run stores none), or a description of why they could not be.
InputNormalisation run_input_normalisation(const std::string& config_json, const Shape& input_shape);

}  // namespace mpwb
