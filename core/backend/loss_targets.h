// TargetKind: what a loss op reads as its targets, which is what a dataset holds. At the op
// interface's level, in a header of its own, so that the datasets (core/data/dataset.h) and the
// loss registry (core/nn/loss_registry.h) name the same kinds without seeing each other.
#pragma once

namespace mpwb {

enum class TargetKind {
    ClassPerSample,    // y [N]: one class index per sample, stored as float
    ClassPerPosition,  // y [N, T]: one class index per position of a sequence (the next token)
    Regression,        // y [N, k]: k real values per sample
};

// "class per sample", "class per position", "regression": how messages name a kind.
constexpr const char* target_kind_text(TargetKind kind) {
    switch (kind) {
        case TargetKind::ClassPerSample:
            return "class per sample";
        case TargetKind::ClassPerPosition:
            return "class per position";
        case TargetKind::Regression:
            return "regression";
    }
    return "?";
}

}  // namespace mpwb
