// The losses (see loss_registry.h): the table, the lookups and the one choice of a run's loss.
#include "core/nn/loss_registry.h"

#include <cmath>

#include "core/common/error.h"
#include "core/common/text_format.h"

namespace mpwb {

namespace {

Backend::LossResult cross_entropy_op(Backend& backend, const LossCall& c) {
    return backend.softmax_cross_entropy(c.out, c.target, c.dout, c.rows, c.width, c.grad_scale);
}

Backend::LossResult mse_op(Backend& backend, const LossCall& c) {
    return backend.mse(c.out, c.target, c.dout, c.rows, c.width, c.grad_scale);
}

// Per-position targets come from a text file through a tokenizer: a class id outside the
// outputs would index past the row, so each is checked here, named by its row.
Backend::LossResult token_cross_entropy_op(Backend& backend, const LossCall& c) {
    for (int64_t r = 0; r < c.rows; ++r) {
        const float t = c.target[r];
        if (!(t >= 0.0f && t < static_cast<float>(c.width) && t == std::floor(t)))
            throw DataError("token_cross_entropy: the target of sample " +
                            std::to_string(r / c.rows_per_sample) + " of the batch, position " +
                            std::to_string(r % c.rows_per_sample) + " is " + shortest_text(t) +
                            ", not a class in [0, " + std::to_string(c.width) + ")");
    }
    return backend.softmax_cross_entropy(c.out, c.target, c.dout, c.rows, c.width, c.grad_scale, c.z_loss);
}

std::vector<LossDefinition> make_registry() {
    return {
        {.name = "cross_entropy",
         .help = "softmax cross-entropy over class scores (logits)",
         .targets = TargetKind::ClassPerSample,
         .host = &cross_entropy_op,
         .device = DeviceLoss::SoftmaxCrossEntropy,
         .pytorch = "nn.CrossEntropyLoss()",
         .pytorch_outputs = "logits (the run trained them with softmax cross-entropy)",
         .softmax_rows = true},
        {.name = "mse",
         .help = "mean squared error",
         .targets = TargetKind::Regression,
         .host = &mse_op,
         .device = DeviceLoss::MeanSquaredError,
         .pytorch = "nn.MSELoss()",
         .pytorch_outputs = "the regression outputs (the run trained them with MSE)"},
        // A language model's loss: the next token at every position. Its own entry rather than
        // cross_entropy reading two target kinds: the rows differ (samples x positions), the
        // CUDA engine has no kernel for it yet, and PyTorch's text flattens the positions.
        {.name = "token_cross_entropy",
         .help = "softmax cross-entropy at every position of a sequence, averaged over tokens",
         .targets = TargetKind::ClassPerPosition,
         .host = &token_cross_entropy_op,
         .device = DeviceLoss::None,
         .pytorch = "lambda logits, targets: nn.functional.cross_entropy(logits.flatten(0, -2), "
                    "targets.flatten().long())",
         .pytorch_outputs = "next-token logits [batch, T, vocabulary] (the run trained them with "
                            "softmax cross-entropy at every position)",
         .takes_z_loss = true,
         .softmax_rows = true},
    };
}

// "mse", "cross_entropy or mse", "a, b or c" over the losses that pass `keep`.
template <class Keep>
std::string names_where(Keep keep) {
    std::vector<std::string> names;
    for (const LossDefinition& loss : loss_registry())
        if (keep(loss)) names.push_back(loss.name);
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
        text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return text;
}

}  // namespace

Backend::LossResult LossDefinition::on_host(Backend& backend, const Tensor& out, const Tensor& target,
                                            float* dout, float grad_scale, float z_loss) const {
    const int64_t per_sample = target_rows_per_sample(targets, target);
    const int64_t rows = out.dim(0) * per_sample;
    LossCall call{.out = out.data(),
                  .target = target.data(),
                  .dout = dout,
                  .rows = rows,
                  .width = out.numel() / rows,
                  .rows_per_sample = per_sample,
                  .grad_scale = grad_scale,
                  .z_loss = z_loss};
    return host(backend, call);
}

int64_t target_rows_per_sample(TargetKind kind, const Tensor& targets) {
    return kind == TargetKind::ClassPerPosition && targets.rank() > 1 ? targets.numel() / targets.dim(0) : 1;
}

const std::vector<LossDefinition>& loss_registry() {
    static const std::vector<LossDefinition> registry = make_registry();
    return registry;
}

const LossDefinition* find_loss(std::string_view name) {
    for (const LossDefinition& loss : loss_registry())
        if (loss.name == name) return &loss;
    return nullptr;
}

const LossDefinition& default_loss() { return loss_registry().front(); }

std::string loss_name_list() {
    return names_where([](const LossDefinition&) { return true; });
}

std::string z_loss_losses() {
    return names_where([](const LossDefinition& l) { return l.takes_z_loss; });
}

const LossDefinition& loss_named(std::string_view name) {
    if (const LossDefinition* loss = find_loss(name)) return *loss;
    throw NetworkError("unknown loss \"" + std::string(name) + "\"; choose " + loss_name_list());
}

const LossDefinition& run_loss(std::string_view loss, TargetKind targets, std::string_view dataset) {
    const LossDefinition& chosen = loss_named(loss);
    if (chosen.targets == targets) return chosen;
    const std::string fitting = names_where([&](const LossDefinition& l) { return l.targets == targets; });
    throw NetworkError("the network's loss " + chosen.name + " does not fit dataset '" +
                       std::string(dataset) + "': " + chosen.name + " needs " +
                       target_kind_text(chosen.targets) + " targets, the dataset holds " +
                       target_kind_text(targets) + " targets; " +
                       (fitting.empty() ? std::string("no loss reads those yet")
                                        : "set the network's \"loss\" to " + fitting));
}

}  // namespace mpwb
