// LayerNorm and RMSNorm layers over core/nn/row_norm (see norm_layer.h). Gain starts at 1 and
// bias at 0, as PyTorch's nn.LayerNorm and nn.RMSNorm; neither is decayed (normalisation
// parameters, as nanoGPT groups them).
#include "core/nn/norm_layer.h"

namespace mpwb {

NormLayer::NormLayer(NormKind kind, float eps, bool affine, bool bias)
    : kind_(kind), eps_(eps), affine_(affine), bias_on_(bias) {}

// Per sample: the gain and bias (d each), and the statistics of every row (mean and 1/std).
LayerPlan NormLayer::plan(const Shape& input) const {
    if (input.size() != 1 && input.size() != 2)
        throw ShapeError("normalises the last dimension of [d] or [T, d], gets " + shape_to_string(input) +
                         "; add Flatten before it");
    const int64_t d = input.back();
    LayerPlan p;
    p.output = input;
    p.parameters = affine_ ? saturating_mul(d, has_bias() ? 2 : 1) : 0;
    p.saved = saturating_mul(input.size() == 2 ? input[0] : 1, 2);  // mean and rstd per row
    p.saved_detail = "2 × " + std::to_string(input.size() == 2 ? input[0] : 1) + " norm statistics";
    return p;
}

Shape NormLayer::build(const Shape& input) {
    LayerPlan p = plan(input);
    d_ = input.back();
    gain_.name = "weight";
    bias_.name = "bias";
    if (affine_) {
        gain_.value.resize({d_});
        gain_.grad.resize({d_});
        gain_.weight_decay = false;
    }
    if (has_bias()) {
        bias_.value.resize({d_});
        bias_.grad.resize({d_});
        bias_.weight_decay = false;
    }
    return std::move(p.output);
}

void NormLayer::init(Rng&) {
    if (affine_) gain_.value.fill(1.0f);
    if (has_bias()) bias_.value.fill(0.0f);
}

std::vector<Parameter*> NormLayer::parameters() {
    if (has_bias()) return {&gain_, &bias_};
    if (affine_) return {&gain_};
    return {};
}

RowNormShape NormLayer::row_shape(const Tensor& x) const {
    return {.kind = kind_, .rows = x.numel() / d_, .d = d_, .eps = eps_};
}

void NormLayer::forward(LayerContext&, const Tensor& x, Tensor& y) {
    const RowNormShape shape = row_shape(x);
    y.resize(x.shape());
    rstd_.resize({shape.rows});
    if (kind_ == NormKind::LayerNorm) mean_.resize({shape.rows});
    row_norm_forward(shape, x.data(), affine_ ? gain_.value.data() : nullptr,
                     has_bias() ? bias_.value.data() : nullptr, y.data(),
                     kind_ == NormKind::LayerNorm ? mean_.data() : nullptr, rstd_.data());
}

void NormLayer::backward(LayerContext&, const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx) {
    const RowNormShape shape = row_shape(x);
    if (dx) dx->resize(x.shape());
    row_norm_backward(shape, x.data(), affine_ ? gain_.value.data() : nullptr,
                      kind_ == NormKind::LayerNorm ? mean_.data() : nullptr, rstd_.data(), dy.data(),
                      dx ? dx->data() : nullptr, affine_ ? gain_.grad.data() : nullptr,
                      has_bias() ? bias_.grad.data() : nullptr);
}

nlohmann::json NormLayer::to_json() const {
    nlohmann::json j{{"type", kind()}, {"eps", float_as_json_double(eps_)}};
    if (!affine_) j["affine"] = false;
    if (kind_ == NormKind::LayerNorm && !bias_on_) j["bias"] = false;
    return j;
}

namespace {

// torch 1.13's nn.LayerNorm has no bias switch and nn.RMSNorm arrives in torch 2.4, so the
// script defines both norms as classes of its own, with nn.LayerNorm's tensor names.
const char* const kRowNormClass = R"py(class RowNorm(nn.Module):
    """LayerNorm or RMSNorm over the last dimension, with an optional gain ("weight") and, for
    LayerNorm, bias, as MP Workbench's LayerNorm and RMSNorm layers compute them."""

    def __init__(self, d, eps, rms, affine, bias):
        super().__init__()
        self.eps, self.rms = eps, rms
        self.weight = nn.Parameter(torch.ones(d)) if affine else None
        self.bias = nn.Parameter(torch.zeros(d)) if affine and bias and not rms else None

    def forward(self, x):
        if not self.rms:
            x = x - x.mean(-1, keepdim=True)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.weight is not None:
            x = x * self.weight
        if self.bias is not None:
            x = x + self.bias
        return x)py";

}  // namespace

PytorchModule NormLayer::pytorch_module(const Shape&) const {
    return {"RowNorm(" + std::to_string(d_) + ", eps=" + python_float(eps_) +
                ", rms=" + python_bool(kind_ == NormKind::RMSNorm) + ", affine=" + python_bool(affine_) +
                ", bias=" + python_bool(bias_on_) + ")",
            kRowNormClass};
}

}  // namespace mpwb
