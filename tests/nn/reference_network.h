// A float64 forward pass for any layer or network, driven by the layer's JSON description and
// its parameter values, built from the naive loops of tests/backend/reference_ops.h. The gradient
// tests finite-difference it to check the engine's FP32 backward passes.
#pragma once
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tensor/shape.h"
#include "tests/backend/reference_ops.h"

namespace mpwb::ref {

inline int64_t json_int(const nlohmann::json& spec, const char* key, int64_t fallback) {
    return spec.contains(key) ? spec[key].get<int64_t>() : fallback;
}

// y = layer(x) for a batch; `in` is the per-sample input shape, params in parameters() order.
// mask: Dropout's multiplier per element (training mode); null means identity.
inline Vec layer_forward(const nlohmann::json& spec, const Shape& in, int64_t batch, const Vec& x,
                         const std::vector<Vec>& params, const Vec* mask = nullptr) {
    const std::string type = spec.at("type");
    if (type == "Linear") {
        const int64_t out = spec.at("out"), features = in.at(0);
        const bool bias = params.size() > 1;
        Vec y(static_cast<size_t>(batch * out));
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t o = 0; o < out; ++o) {
                double s = bias ? params[1][o] : 0.0;
                for (int64_t i = 0; i < features; ++i) s += params[0][o * features + i] * x[n * features + i];
                y[n * out + o] = s;
            }
        return y;
    }
    if (type == "Conv2d") {
        ConvGeometry g;
        g.batch = batch;
        g.in_channels = in.at(0);
        g.in_h = in.at(1);
        g.in_w = in.at(2);
        g.out_channels = spec.at("out_channels");
        g.kernel_h = g.kernel_w = spec.at("kernel");
        g.stride = json_int(spec, "stride", 1);
        g.padding = json_int(spec, "padding", 0);
        return conv2d_forward(g, x, params.at(0), params.size() > 1 ? &params[1] : nullptr);
    }
    if (type == "MaxPool2d" || type == "AvgPool2d") {
        PoolGeometry g;
        g.batch = batch;
        g.channels = in.at(0);
        g.in_h = in.at(1);
        g.in_w = in.at(2);
        g.kernel = json_int(spec, "kernel", 2);
        g.stride = json_int(spec, "stride", g.kernel);
        g.padding = json_int(spec, "padding", 0);
        return type == "MaxPool2d" ? maxpool_forward(g, x) : avgpool_forward(g, x);
    }
    for (const ActivationInfo& a : activation_infos()) {  // the activation table's kinds
        if (type != a.name) continue;
        const double slope = spec.contains("slope") ? spec["slope"].get<double>() : 0.01;
        Vec y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = activation(a.kind, slope, x[i]);
        return y;
    }
    if (type == "Flatten" || type == "Identity") return x;
    if (type == "Dropout") {
        if (!mask) return x;
        Vec y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * (*mask)[i];
        return y;
    }
    if (type == "BatchNorm") {
        const int64_t c = in.at(0), hw = in.size() == 3 ? in[1] * in[2] : 1;
        const double eps = spec.contains("eps") ? spec["eps"].get<float>() : 1e-5f;
        return batchnorm_train(x, params.at(0), params.at(1), batch, c, hw, eps);
    }
    throw std::runtime_error("reference has no layer " + type);
}

}  // namespace mpwb::ref
