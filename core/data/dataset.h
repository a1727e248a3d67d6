// Dataset: the train and test splits every data source produces (synthetic 2-D sets, IDX images,
// CSV tables, text), in the one layout the training loop consumes, so a source never needs to know
// about the network or the backend.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/loss_targets.h"
#include "core/data/vocabulary.h"
#include "core/tensor/shape.h"
#include "core/tensor/tensor.h"

namespace mpwb {

struct Dataset {
    // x: [N, ...sample_shape]. y: [N] class indices stored as float when num_classes > 0,
    // [N, k] regression targets when num_classes == 0.
    Tensor train_x, train_y, test_x, test_y;
    Shape sample_shape;
    int num_classes = 0;
    std::string name;
    std::vector<std::string> class_names;  // num_classes entries (empty for regression)
    // Text datasets (core/data/text_corpus.h): how the token ids map to text; stored with the run
    // so that sampling and export read the ids as the run trained on them.
    std::optional<Vocabulary> vocabulary;
    // Text datasets: the training part's token ids. train_x and train_y hold the windows of phase
    // 0 (window w at tokens [w·T, w·T + T]); a later epoch reads them at its own phase
    // (batcher.h, window_phase and gather_train_batch). Empty for other datasets.
    std::vector<int32_t> train_tokens;

    bool is_classification() const { return num_classes > 0; }
    // What the labels are, which decides the losses that fit (core/nn/loss_registry.h): class
    // indices per sample ([N]) or per position ([N, T]), or regression targets.
    TargetKind target_kind() const {
        if (!is_classification()) return TargetKind::Regression;
        return train_y.rank() > 1 ? TargetKind::ClassPerPosition : TargetKind::ClassPerSample;
    }
    int64_t train_size() const { return train_x.rank() ? train_x.dim(0) : 0; }
    int64_t test_size() const { return test_x.rank() ? test_x.dim(0) : 0; }
    // Values per regression target row (1 for classification).
    int64_t target_width() const { return (num_classes == 0 && train_y.rank() > 1) ? train_y.dim(1) : 1; }
};

}  // namespace mpwb
