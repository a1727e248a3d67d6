// The losses (see loss_registry.h): the table, the lookups and the one choice of a run's loss.
#include "core/nn/loss_registry.h"

#include "core/common/error.h"

namespace mpwb {

namespace {

std::vector<LossDefinition> make_registry() {
    return {
        {.name = "cross_entropy",
         .help = "softmax cross-entropy over class scores (logits)",
         .targets = TargetKind::ClassPerSample,
         .host = &Backend::softmax_cross_entropy,
         .device = DeviceLoss::SoftmaxCrossEntropy,
         .pytorch = "nn.CrossEntropyLoss()",
         .pytorch_outputs = "logits (the run trained them with softmax cross-entropy)"},
        {.name = "mse",
         .help = "mean squared error",
         .targets = TargetKind::Regression,
         .host = &Backend::mse,
         .device = DeviceLoss::MeanSquaredError,
         .pytorch = "nn.MSELoss()",
         .pytorch_outputs = "the regression outputs (the run trained them with MSE)"},
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
                                            float* dout, float grad_scale) const {
    const int64_t n = out.dim(0);
    const int64_t k = out.numel() / n;
    return (backend.*host)(out.data(), target.data(), dout, n, k, grad_scale);
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
