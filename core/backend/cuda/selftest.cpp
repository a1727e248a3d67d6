// The op parity checks: inputs drawn and rounded to the dtype on the host, so the CPU backend and
// the device see identical values; the CPU backend's result (with its exact emulation of the
// operand format) is the reference.
#include "core/backend/cuda/selftest.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/backend/cpu/cpu_backend.h"
#include "core/backend/cuda/cuda_check.h"
#include "core/backend/cuda/element_math.h"
#include "core/backend/cuda/fp8_gemm.h"
#include "core/backend/cuda/fp8_kernels.h"
#include "core/backend/cuda/fp8_math.h"
#include "core/backend/cuda/kernels.h"
#include "core/common/rng.h"
#include "core/numeric/exponent_histogram.h"

namespace mpwb::cuda {

double tolerance_for(DType dtype, bool tf32) {
    if (dtype != DType::F32) return 1e-2;
    return tf32 ? 1e-3 : 1e-5;
}

namespace {

using Host = std::vector<float>;

// Device memory for one check; freed with the harness.
class Harness {
public:
    Harness(DeviceContext& ctx, const std::function<void(const SelftestLine&)>& report)
        : ctx_(ctx), report_(report), stream_(ctx.stream()) {}

    Host random(int64_t n, DType t, float lo = -1.0f, float hi = 1.0f) {
        Host v(static_cast<size_t>(n));
        for (auto& x : v) x = round_to_dtype(t, rng_.uniform(lo, hi));
        return v;
    }
    // Copies ordered on the harness's stream (non-blocking, so a plain cudaMemcpy on the legacy
    // stream would not wait for its kernels, nor they for the copy's DMA), then waited for.
    void copy_in(void* dst, const void* src, size_t bytes) {
        check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_),
                   "cudaMemcpyAsync (selftest)");
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (selftest)");
    }
    void copy_out(void* dst, const void* src, size_t bytes) {
        check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
                   "cudaMemcpyAsync (selftest)");
        check_cuda(cudaStreamSynchronize(stream_), "a selftest op");
    }
    void* upload(const Host& v, DType t) {
        void* d = arena_.allocate(v.size() * dtype_size(t), "selftest input");
        std::vector<uint16_t> bits;
        const void* src = v.data();
        if (t != DType::F32) {
            bits.resize(v.size());
            for (size_t i = 0; i < v.size(); ++i)
                bits[i] = t == DType::F16 ? half_bits_from_float(v[i]) : bf16_bits_from_float(v[i]);
            src = bits.data();
        }
        copy_in(d, src, v.size() * dtype_size(t));
        return d;
    }
    void* zeros(int64_t n, DType t) { return upload(Host(static_cast<size_t>(n), 0.0f), t); }
    // Zero-filled device memory of any layout (FP8 bytes, states).
    void* raw(size_t bytes) { return arena_.allocate(bytes, "selftest buffer"); }
    Host download(const void* d, int64_t n, DType t) {
        check_cuda(cudaStreamSynchronize(stream_), "a selftest op");
        Host v(static_cast<size_t>(n));
        if (t == DType::F32) {
            copy_out(v.data(), d, v.size() * 4);
        } else {
            std::vector<uint16_t> bits(v.size());
            copy_out(bits.data(), d, v.size() * 2);
            for (size_t i = 0; i < v.size(); ++i)
                v[i] = t == DType::F16 ? float_from_half_bits(bits[i]) : float_from_bf16_bits(bits[i]);
        }
        return v;
    }
    // Compares and reports; the reference is rounded to the dtype the device stores.
    void compare(const std::string& name, const Host& device, Host reference, DType stored,
                 double tolerance) {
        for (auto& r : reference) r = round_to_dtype(stored, r);
        SelftestLine line;
        line.name = name;
        line.tolerance = tolerance;
        double max_diff = 0, max_ref = 0;
        bool bad = device.size() != reference.size();
        for (size_t i = 0; !bad && i < device.size(); ++i) {
            const bool ref_finite = std::isfinite(reference[i]);
            if (!std::isfinite(device[i]) && ref_finite) {
                bad = true;
                line.detail = "non-finite value at " + std::to_string(i);
                break;
            }
            if (!ref_finite) continue;
            max_diff = std::max(max_diff, std::fabs(static_cast<double>(device[i]) - reference[i]));
            max_ref = std::max(max_ref, std::fabs(static_cast<double>(reference[i])));
        }
        line.error = max_ref > 0 ? max_diff / max_ref : max_diff;
        line.passed = !bad && line.error <= tolerance;
        if (!line.passed && line.detail.empty()) line.detail = "relative error above tolerance";
        if (!line.passed) ++failures_;
        report_(line);
    }
    void note(const std::string& name, const std::string& what) {
        SelftestLine line;
        line.name = name;
        line.passed = true;
        line.detail = what;
        report_(line);
    }
    void fail(const std::string& name, const std::string& why) {
        SelftestLine line;
        line.name = name;
        line.detail = why;
        ++failures_;
        report_(line);
    }
    DeviceContext& ctx() { return ctx_; }
    cudaStream_t stream() const { return stream_; }
    CpuBackend& cpu() { return cpu_; }
    int failures() const { return failures_; }

private:
    DeviceContext& ctx_;
    const std::function<void(const SelftestLine&)>& report_;
    cudaStream_t stream_;
    DeviceArena arena_{size_t{16} << 20};
    Rng rng_{20261122};
    CpuBackend cpu_;
    int failures_ = 0;
};

const DType kDtypes[] = {DType::F32, DType::F16, DType::BF16};

std::string dtype_label(DType t, bool tf32) { return tf32 ? "tf32" : dtype_name(t); }

// Conversions compared bit for bit (NaN for NaN, payloads aside): every FP16 value decoded; for
// encoding, every half, the floats one ulp either side of it and of each midpoint between
// neighbours (where round-to-nearest-even decides), and a million random bit patterns.
std::vector<uint32_t> conversion_inputs() {
    std::vector<uint32_t> bits;
    for (uint32_t hbits = 0; hbits < 0x10000u; ++hbits) {
        const float v = float_from_half_bits(static_cast<uint16_t>(hbits));
        if (!std::isfinite(v)) continue;
        const float next = float_from_half_bits(static_cast<uint16_t>(hbits + 1));
        for (float x : {v, std::nextafter(v, INFINITY), std::nextafter(v, -INFINITY)})
            bits.push_back(bits_of(x));
        if (std::isfinite(next) && (hbits & 0x7fffu) != 0x7bffu) {
            const float mid = v + (next - v) / 2;  // exact: a half's neighbours differ by a power of two
            for (float x : {mid, std::nextafter(mid, INFINITY), std::nextafter(mid, -INFINITY)})
                bits.push_back(bits_of(x));
        }
    }
    for (float x : {65504.0f, 65519.99f, 65520.0f, 1e30f, INFINITY, -INFINITY, NAN, 0.0f, -0.0f})
        bits.push_back(bits_of(x));
    Rng rng(7);
    for (int i = 0; i < 1000000; ++i) bits.push_back(static_cast<uint32_t>(rng.next_u64()));
    return bits;
}

void check_convert(Harness& h) {
    auto same_bits16 = [](uint16_t a, uint16_t b, DType t) {
        const bool a_nan =
            t == DType::F16 ? std::isnan(float_from_half_bits(a)) : std::isnan(float_from_bf16_bits(a));
        const bool b_nan =
            t == DType::F16 ? std::isnan(float_from_half_bits(b)) : std::isnan(float_from_bf16_bits(b));
        return a_nan || b_nan ? a_nan == b_nan : a == b;
    };
    const std::vector<uint32_t> inputs = conversion_inputs();
    const auto n = static_cast<int64_t>(inputs.size());
    auto* in = static_cast<uint32_t*>(h.zeros(n, DType::F32));
    h.copy_in(in, inputs.data(), inputs.size() * 4);
    for (DType t : {DType::F16, DType::BF16}) {
        void* out = h.zeros(n, t);
        kernels::convert(DType::F32, in, t, out, n, h.stream());
        std::vector<uint16_t> got(inputs.size());
        check_cuda(cudaStreamSynchronize(h.stream()), "convert");
        h.copy_out(got.data(), out, got.size() * 2);
        int64_t wrong = 0, first = -1;
        for (size_t i = 0; i < inputs.size(); ++i) {
            const float x = float_of(inputs[i]);
            const uint16_t want = t == DType::F16 ? half_bits_from_float(x) : bf16_bits_from_float(x);
            if (!same_bits16(got[i], want, t) && wrong++ == 0) first = static_cast<int64_t>(i);
        }
        const std::string name =
            std::string("convert f32->") + dtype_name(t) + " (" + std::to_string(n) + " values, bits)";
        if (wrong == 0)
            h.note(name, "");
        else
            h.fail(name, std::to_string(wrong) + " differ, first at float bits " +
                             std::to_string(inputs[static_cast<size_t>(first)]));
    }
    // Decoding: every 16-bit pattern.
    for (DType t : {DType::F16, DType::BF16}) {
        std::vector<uint16_t> all(0x10000);
        for (uint32_t i = 0; i < 0x10000u; ++i) all[i] = static_cast<uint16_t>(i);
        void* d = h.zeros(0x10000, t);
        h.copy_in(d, all.data(), all.size() * 2);
        auto* out = static_cast<uint32_t*>(h.zeros(0x10000, DType::F32));
        kernels::convert(t, d, DType::F32, out, 0x10000, h.stream());
        std::vector<uint32_t> got(0x10000);
        check_cuda(cudaStreamSynchronize(h.stream()), "convert");
        h.copy_out(got.data(), out, got.size() * 4);
        int64_t wrong = 0;
        for (uint32_t i = 0; i < 0x10000u; ++i) {
            const float want = t == DType::F16 ? float_from_half_bits(all[i]) : float_from_bf16_bits(all[i]);
            const float g = float_of(got[i]);
            if (std::isnan(want) || std::isnan(g) ? std::isnan(want) != std::isnan(g)
                                                  : bits_of(want) != got[i])
                ++wrong;
        }
        const std::string name = std::string("convert ") + dtype_name(t) + "->f32 (every value, bits)";
        if (wrong == 0)
            h.note(name, "");
        else
            h.fail(name, std::to_string(wrong) + " of 65536 differ");
    }
    Host x = h.random(100000, DType::F32, -10.0f, 10.0f);
    void* d = h.upload(x, DType::F32);
    kernels::round_f32(Format::TF32, static_cast<float*>(d), static_cast<int64_t>(x.size()), h.stream());
    Host ref(x.size());
    round_to_format(Format::TF32, x.data(), ref.data(), x.size());
    h.compare("round f32->tf32", h.download(d, static_cast<int64_t>(x.size()), DType::F32), ref, DType::F32,
              0.0);
}

void check_gemm(Harness& h) {
    struct Case {
        bool ta, tb;
        int64_t m, n, k;
        Epilogue epilogue;
        bool in_operand_dtype =
            false;  // C and the bias gradient in the operands' dtype (the step's weight-gradient GEMM)
    };
    const Case cases[] = {{false, true, 256, 128, 784, Epilogue::None},
                          {false, true, 256, 128, 784, Epilogue::Bias},
                          {false, true, 128, 64, 96, Epilogue::ReluBias},
                          {true, false, 128, 784, 256, Epilogue::BiasGradA},
                          {false, false, 256, 784, 128, Epilogue::None},
                          {false, true, 7, 10, 33, Epilogue::Bias},
                          {true, false, 64, 2, 2048, Epilogue::BiasGradA, true}};
    for (DType t : kDtypes)
        for (bool tf32 : {false, true}) {
            if (tf32 && t != DType::F32) continue;
            for (const Case& c : cases) {
                const int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n, ldc = c.n;
                const Host a = h.random(c.m * c.k, t), b = h.random(c.k * c.n, t);
                const Host bias = h.random(c.n, DType::F32);
                const DType out = c.in_operand_dtype ? t : DType::F32;
                MatmulShape s{c.ta, c.tb, c.m, c.n, c.k, lda, ldb, ldc, t, out, tf32, c.epilogue};
                if (c.epilogue == Epilogue::BiasGradA) s.bias = out;
                std::string name = "gemm " + dtype_label(t, tf32) + " " + std::to_string(c.m) + "x" +
                                   std::to_string(c.n) + "x" + std::to_string(c.k) + (c.ta ? " A^T" : "") +
                                   (c.tb ? " B^T" : "");
                name += c.epilogue == Epilogue::Bias        ? " +bias"
                        : c.epilogue == Epilogue::ReluBias  ? " +bias+relu"
                        : c.epilogue == Epilogue::BiasGradA ? " +bias grad"
                                                            : "";
                if (c.in_operand_dtype) name += std::string(" (") + dtype_name(out) + " out)";
                if (!h.ctx().gemm().supports(s)) {
                    // Not a failure: the step asks the same question and falls back to a plain
                    // GEMM plus its own bias kernel, which the elementwise group checks.
                    h.note(name,
                           "epilogue not offered by cuBLASLt here; the step uses a plain GEMM and its own "
                           "kernel");
                    continue;
                }
                void* da = h.upload(a, t);
                void* db = h.upload(b, t);
                void* dc = h.zeros(c.m * c.n, out);
                float* dbias = static_cast<float*>(h.upload(bias, DType::F32));
                void* dgrad = h.zeros(c.m, s.bias);
                h.ctx().gemm().matmul(s, 1.0f, da, db, 0.0f, dc, dbias, dgrad, h.stream());
                Host ref(static_cast<size_t>(c.m * c.n), 0.0f);
                h.cpu().gemm(c.ta, c.tb, c.m, c.n, c.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, ref.data(),
                             ldc, tf32 ? Format::TF32 : Format::FP32);
                if (c.epilogue == Epilogue::Bias || c.epilogue == Epilogue::ReluBias)
                    h.cpu().add_bias_rows(ref.data(), bias.data(), c.m, c.n);
                if (c.epilogue == Epilogue::ReluBias)
                    h.cpu().activation_forward(Activation::ReLU, 0.0f, ref.data(), ref.data(), c.m * c.n);
                h.compare(name, h.download(dc, c.m * c.n, out), ref, out, tolerance_for(t, tf32));
                if (c.epilogue == Epilogue::BiasGradA) {
                    // bias_grad[i] = sum_k op(A)[i, k]: op(A) is A^T here, so row sums of A^T.
                    Host sums(static_cast<size_t>(c.m), 0.0f);
                    for (int64_t i = 0; i < c.m; ++i)
                        for (int64_t p = 0; p < c.k; ++p)
                            sums[static_cast<size_t>(i)] += a[static_cast<size_t>(p * lda + i)];
                    h.compare(name + " (bias gradient)", h.download(dgrad, c.m, s.bias), sums, s.bias,
                              tolerance_for(t, false));
                }
            }
        }
}

void check_elementwise(Harness& h) {
    const int64_t rows = 300, cols = 70, n = rows * cols;
    for (DType t : kDtypes) {
        const std::string d = dtype_name(t);
        for (const ActivationInfo& info : activation_infos()) {
            const Activation kind = info.kind;
            const Host x = h.random(n, t, -4.0f, 4.0f), dy = h.random(n, t);
            Host y_ref(static_cast<size_t>(n)), dx_ref(static_cast<size_t>(n));
            h.cpu().activation_forward(kind, 0.02f, x.data(), y_ref.data(), n);
            for (auto& v : y_ref) v = round_to_dtype(t, v);  // the stored output backward reads
            h.cpu().activation_backward(kind, 0.02f, x.data(), y_ref.data(), dy.data(), dx_ref.data(), n);
            const std::string base = std::string(info.name) + " " + d;
            void* dxin = h.upload(x, t);
            void* dyv = h.zeros(n, t);
            kernels::activation_forward(kind, 0.02f, t, dxin, dyv, n, h.stream());
            h.compare(base + " forward (kernel)", h.download(dyv, n, t), y_ref, t, tolerance_for(t, false));
            void* ddy = h.upload(dy, t);
            void* ddx = h.zeros(n, t);
            void* dyr = h.upload(y_ref, t);
            kernels::activation_backward(kind, 0.02f, t, dxin, dyr, ddy, ddx, n, h.stream());
            h.compare(base + " backward (kernel)", h.download(ddx, n, t), dx_ref, t, tolerance_for(t, false));
            if (CudnnOps::supports(kind) && t != DType::BF16) {
                h.ctx().dnn().activation_forward(kind, t, dxin, dyv, n, h.stream());
                h.compare(base + " forward (cuDNN)", h.download(dyv, n, t), y_ref, t,
                          tolerance_for(t, false));
                h.ctx().dnn().activation_backward(kind, t, dxin, dyr, ddy, ddx, n, h.stream());
                h.compare(base + " backward (cuDNN)", h.download(ddx, n, t), dx_ref, t,
                          tolerance_for(t, false));
            }
        }
        // Bias rows and channels, and their gradients (FP32 sums).
        const Host y = h.random(n, t), bias = h.random(cols, DType::F32);
        float* db = static_cast<float*>(h.upload(bias, DType::F32));
        for (const bool relu : {false, true}) {
            Host ref = y;
            h.cpu().add_bias_rows(ref.data(), bias.data(), rows, cols);
            if (relu) {
                for (auto& v : ref) v = round_to_dtype(t, v);  // the sum is stored, then ReLU
                h.cpu().activation_forward(Activation::ReLU, 0.0f, ref.data(), ref.data(), n);
            }
            void* dy = h.upload(y, t);
            kernels::add_bias_rows(t, dy, db, rows, cols, relu, h.stream());
            h.compare(std::string("add_bias_rows ") + (relu ? "+relu " : "") + d, h.download(dy, n, t), ref,
                      t, tolerance_for(t, false));
        }
        // 300 rows take the two-pass sum, 50 the single pass.
        for (const int64_t sum_rows : {rows, int64_t{50}}) {
            Host grad_ref(static_cast<size_t>(cols));
            h.cpu().bias_grad_rows(y.data(), grad_ref.data(), sum_rows, cols);
            void* dy2 = h.upload(y, t);
            float* dg = static_cast<float*>(h.zeros(cols, DType::F32));
            void* scratch =
                h.zeros(static_cast<int64_t>(kernels::bias_grad_rows_scratch_bytes(sum_rows, cols) / 4) + 1,
                        DType::F32);
            kernels::bias_grad_rows(t, dy2, dg, sum_rows, cols, scratch, h.stream());
            h.compare("bias_grad_rows " + d + " " + std::to_string(sum_rows) + " rows",
                      h.download(dg, cols, DType::F32), grad_ref, DType::F32, 1e-5);
        }
        const int64_t batch = 6, channels = 10, hw = n / (batch * channels);
        const Host ych = h.random(batch * channels * hw, t), bch = h.random(channels, DType::F32);
        Host ref_ch = ych;
        h.cpu().add_bias_channels(ref_ch.data(), bch.data(), batch, channels, hw);
        void* dych = h.upload(ych, t);
        kernels::add_bias_channels(t, dych, static_cast<float*>(h.upload(bch, DType::F32)), batch, channels,
                                   hw, h.stream());
        h.compare("add_bias_channels " + d, h.download(dych, batch * channels * hw, t), ref_ch, t,
                  tolerance_for(t, false));
        Host gch(static_cast<size_t>(channels));
        h.cpu().bias_grad_channels(ych.data(), gch.data(), batch, channels, hw);
        float* dgch = static_cast<float*>(h.zeros(channels, DType::F32));
        kernels::bias_grad_channels(t, h.upload(ych, t), dgch, batch, channels, hw, h.stream());
        h.compare("bias_grad_channels " + d, h.download(dgch, channels, DType::F32), gch, DType::F32, 1e-5);
    }
}

void check_losses(Harness& h) {
    // k = 10 takes the thread-per-row kernel, k = 100 the warp-per-row one; both over several blocks.
    const int64_t n = 2049;
    void* scratch = h.zeros(static_cast<int64_t>(kernels::loss_scratch_bytes() / 4), DType::F32);
    for (const int64_t k : {int64_t{10}, int64_t{100}})
        for (DType t : kDtypes) {
            const std::string d = std::string(dtype_name(t)) + " k=" + std::to_string(k);
            const Host logits = h.random(n * k, t, -5.0f, 5.0f);
            Host labels(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<float>((i * 7) % k);
            const float scale = 1024.0f;
            Host dref(static_cast<size_t>(n * k));
            const auto r =
                h.cpu().softmax_cross_entropy(logits.data(), labels.data(), dref.data(), n, k, scale);
            float* dscale = static_cast<float*>(h.upload({scale}, DType::F32));
            float* dloss = static_cast<float*>(h.zeros(1, DType::F32));
            int64_t* dcorrect = static_cast<int64_t*>(h.zeros(2, DType::F32));  // 8 zero bytes
            void* dgrad = h.zeros(n * k, t);
            kernels::softmax_cross_entropy(t, h.upload(logits, t),
                                           static_cast<float*>(h.upload(labels, DType::F32)), t, dgrad, n, k,
                                           dscale, dloss, dcorrect, scratch, h.stream());
            h.compare("softmax_cross_entropy " + d + " loss", h.download(dloss, 1, DType::F32),
                      {static_cast<float>(r.loss)}, DType::F32, 1e-5);
            h.compare("softmax_cross_entropy " + d + " gradient", h.download(dgrad, n * k, t), dref, t,
                      tolerance_for(t, false));
            int64_t correct = -1;
            h.copy_out(&correct, dcorrect, sizeof correct);
            if (correct != r.correct)
                h.fail("softmax_cross_entropy " + d + " correct count",
                       "device " + std::to_string(correct) + ", CPU " + std::to_string(r.correct));
            const Host target = h.random(n * k, DType::F32);
            Host mref(static_cast<size_t>(n * k));
            const auto m = h.cpu().mse(logits.data(), target.data(), mref.data(), n, k, scale);
            float* mloss = static_cast<float*>(h.zeros(1, DType::F32));
            void* mgrad = h.zeros(n * k, t);
            kernels::mse(t, h.upload(logits, t), static_cast<float*>(h.upload(target, DType::F32)), t, mgrad,
                         n, k, dscale, mloss, scratch, h.stream());
            h.compare("mse " + d + " loss", h.download(mloss, 1, DType::F32), {static_cast<float>(m.loss)},
                      DType::F32, 1e-5);
            h.compare("mse " + d + " gradient", h.download(mgrad, n * k, t), mref, t,
                      tolerance_for(t, false));
        }
}

void check_batchnorm(Harness& h) {
    const int64_t n = 32, c = 8, hw = 49, total = n * c * hw;
    for (DType t : kDtypes) {
        const std::string d = dtype_name(t);
        const Host x = h.random(total, t, -2.0f, 3.0f), dy = h.random(total, t);
        const Host gamma = h.random(c, DType::F32, 0.5f, 1.5f), beta = h.random(c, DType::F32);
        Host rm(static_cast<size_t>(c), 0.0f), rv(static_cast<size_t>(c), 1.0f), sm(static_cast<size_t>(c)),
            si(static_cast<size_t>(c)), y(static_cast<size_t>(total));
        h.cpu().batchnorm_forward(x.data(), y.data(), gamma.data(), beta.data(), rm.data(), rv.data(),
                                  sm.data(), si.data(), n, c, hw, 0.1f, 1e-5f, true);
        Host dx(static_cast<size_t>(total)), dgamma(static_cast<size_t>(c)), dbeta(static_cast<size_t>(c));
        h.cpu().batchnorm_backward(x.data(), dy.data(), gamma.data(), sm.data(), si.data(), dx.data(),
                                   dgamma.data(), dbeta.data(), n, c, hw);
        void* dxin = h.upload(x, t);
        void* dyout = h.zeros(total, t);
        auto* drm = static_cast<float*>(h.upload(Host(static_cast<size_t>(c), 0.0f), DType::F32));
        auto* drv = static_cast<float*>(h.upload(Host(static_cast<size_t>(c), 1.0f), DType::F32));
        auto* dsm = static_cast<float*>(h.zeros(c, DType::F32));
        auto* dsi = static_cast<float*>(h.zeros(c, DType::F32));
        auto* dgam = static_cast<float*>(h.upload(gamma, DType::F32));
        kernels::batchnorm_forward(t, dxin, dyout, dgam, static_cast<float*>(h.upload(beta, DType::F32)), drm,
                                   drv, dsm, dsi, n, c, hw, 0.1f, 1e-5f, true, h.stream());
        h.compare("batchnorm forward " + d, h.download(dyout, total, t), y, t, tolerance_for(t, false));
        h.compare("batchnorm running variance " + d, h.download(drv, c, DType::F32), rv, DType::F32, 1e-5);
        void* ddx = h.zeros(total, t);
        auto* ddg = static_cast<float*>(h.zeros(c, DType::F32));
        auto* ddb = static_cast<float*>(h.zeros(c, DType::F32));
        kernels::batchnorm_backward(t, dxin, h.upload(dy, t), dgam, dsm, dsi, ddx, ddg, ddb, n, c, hw,
                                    h.stream());
        h.compare("batchnorm backward " + d + " dx", h.download(ddx, total, t), dx, t,
                  tolerance_for(t, false));
        h.compare("batchnorm backward " + d + " dgamma", h.download(ddg, c, DType::F32), dgamma, DType::F32,
                  1e-4);
    }
}

void check_convolution_and_pooling(Harness& h) {
    ConvGeometry g;
    g.batch = 8;
    g.in_channels = 3;
    g.in_h = g.in_w = 14;
    g.out_channels = 16;
    g.kernel_h = g.kernel_w = 3;
    g.stride = 1;
    g.padding = 1;
    const int64_t nx = g.batch * g.in_channels * g.in_h * g.in_w;
    const int64_t nw = g.out_channels * g.in_channels * g.kernel_h * g.kernel_w;
    const int64_t ny = g.batch * g.out_channels * g.out_h() * g.out_w();
    for (DType t : kDtypes)
        for (bool tf32 : {false, true}) {
            if (tf32 && t != DType::F32) continue;
            const std::string d = dtype_label(t, tf32);
            const Format operands = tf32 ? Format::TF32 : Format::FP32;
            const Host x = h.random(nx, t), w = h.random(nw, t), dy = h.random(ny, t);
            Host y(static_cast<size_t>(ny)), dx(static_cast<size_t>(nx)), dw(static_cast<size_t>(nw));
            h.cpu().conv2d_forward(g, x.data(), w.data(), nullptr, y.data(), operands);
            h.cpu().conv2d_backward(g, x.data(), w.data(), dy.data(), dx.data(), dw.data(), nullptr,
                                    operands);
            void* dxin = h.upload(x, t);
            void* dwin = h.upload(w, t);
            void* ddy = h.upload(dy, t);
            void* dyout = h.zeros(ny, t);
            void* ddx = h.zeros(nx, t);
            void* ddw = h.zeros(nw, t);
            h.ctx().dnn().conv_forward(g, t, tf32, dxin, dwin, dyout, h.stream());
            h.ctx().dnn().conv_backward_data(g, t, tf32, dwin, ddy, ddx, h.stream());
            h.ctx().dnn().conv_backward_filter(g, t, tf32, dxin, ddy, ddw, h.stream());
            const double tol = tolerance_for(t, tf32);
            h.compare("conv2d forward " + d, h.download(dyout, ny, t), y, t, tol);
            h.compare("conv2d backward data " + d, h.download(ddx, nx, t), dx, t, tol);
            h.compare("conv2d backward filter " + d, h.download(ddw, nw, t), dw, t, tol);
        }
    PoolGeometry p;
    p.batch = 8;
    p.channels = 6;
    p.in_h = p.in_w = 12;
    p.kernel = 2;
    p.stride = 2;
    const int64_t pin = p.batch * p.channels * p.in_h * p.in_w,
                  pout = p.batch * p.channels * p.out_h() * p.out_w();
    for (DType t : kDtypes) {
        const std::string d = dtype_name(t);
        const Host x = h.random(pin, t), dy = h.random(pout, t);
        for (PoolMode mode : {PoolMode::Max, PoolMode::Average}) {
            const std::string name = std::string(mode == PoolMode::Max ? "maxpool " : "avgpool ") + d;
            Host y(static_cast<size_t>(pout)), dx(static_cast<size_t>(pin), 0.0f);
            std::vector<int32_t> argmax(static_cast<size_t>(pout));
            if (mode == PoolMode::Max) {
                h.cpu().maxpool_forward(p, x.data(), y.data(), argmax.data());
                h.cpu().maxpool_backward(p, dy.data(), argmax.data(), dx.data());
            } else {
                h.cpu().avgpool_forward(p, x.data(), y.data());
                h.cpu().avgpool_backward(p, dy.data(), dx.data());
            }
            void* dxin = h.upload(x, t);
            void* dyout = h.zeros(pout, t);
            void* ddx = h.zeros(pin, t);
            h.ctx().dnn().pool_forward(p, mode, t, dxin, dyout, h.stream());
            h.ctx().dnn().pool_backward(p, mode, t, dxin, dyout, h.upload(dy, t), ddx, h.stream());
            h.compare(name + " forward", h.download(dyout, pout, t), y, t, tolerance_for(t, false));
            h.compare(name + " backward", h.download(ddx, pin, t), dx, t, tolerance_for(t, false));
        }
    }
}

void check_histogram(Harness& h) {
    for (DType t : kDtypes) {
        Host x = h.random(200000, DType::F32, -1.0f, 1.0f);
        for (size_t i = 0; i < x.size(); i += 7) x[i] = std::ldexp(x[i], -static_cast<int>(i % 40));
        x[3] = 0.0f;
        if (t == DType::F32) {
            x[5] = INFINITY;
            x[6] = NAN;
            x[8] = 1e30f;
        }
        for (auto& v : x) v = round_to_dtype(t, v);
        auto* dh = static_cast<DeviceHistogram*>(h.zeros(sizeof(DeviceHistogram) / 4, DType::F32));
        kernels::exponent_histogram(t, h.upload(x, t), static_cast<int64_t>(x.size()), dh, h.stream());
        DeviceHistogram got{};
        check_cuda(cudaStreamSynchronize(h.stream()), "exponent_histogram");
        h.copy_out(&got, dh, sizeof got);
        const ExponentHistogram ref = ExponentHistogram::compute(x.data(), x.size());
        bool same = got.zeros == ref.zeros && got.non_finite == ref.non_finite;
        for (size_t b = 0; b < ExponentHistogram::kBinCount; ++b) same = same && got.bins[b] == ref.bins[b];
        for (size_t f = 0; f < kFormatCount; ++f) same = same && got.above_max[f] == ref.above_max[f];
        float max_abs = 0;
        std::memcpy(&max_abs, &got.max_abs_bits, sizeof max_abs);
        same = same && max_abs == ref.max_abs;
        const std::string name = std::string("exponent histogram ") + dtype_name(t);
        if (same)
            h.compare(name, {0.0f}, {0.0f}, DType::F32, 0.0);
        else
            h.fail(name, "counts differ from ExponentHistogram::compute");
    }
}

// ---- per-tensor FP8 (fp8_kernels.h, fp8_gemm.h) -------------------------------------------

// Values over many binades with the specials the rounding must keep: every FP8 rounding case is
// reached at some scale.
Host fp8_inputs(int64_t n, DType t, Rng& rng) {
    Host v(static_cast<size_t>(n));
    for (auto& x : v)
        x = round_to_dtype(t, static_cast<float>(rng.normal()) * std::exp2(rng.uniform(-24.0f, 24.0f)));
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e-30f};
    for (size_t i = 0; i < std::size(specials) && i < v.size(); ++i) v[i * 13 % v.size()] = specials[i];
    return v;
}

// The quantize kernel's bytes (row-major and transposed), its BF16 values and its amax against
// fp8_math.h's host functions, bit for bit, for odd shapes in both element formats.
void check_fp8_quantize(Harness& h) {
    Rng rng(8);
    const int64_t rows = 77, cols = 45, n = rows * cols;
    for (DType t : {DType::F32, DType::BF16})
        for (Fp8Element e : {Fp8Element::E4M3, Fp8Element::E5M2}) {
            const Host x = fp8_inputs(n, t, rng);
            Fp8TensorState state;
            fp8_set_step_scale(state, 37.25f);
            auto* ds = static_cast<Fp8TensorState*>(h.raw(sizeof state));
            h.copy_in(ds, &state, sizeof state);
            kernels::Fp8Outputs out{static_cast<uint8_t*>(h.raw(n)), static_cast<uint8_t*>(h.raw(n)),
                                    static_cast<uint16_t*>(h.raw(n * 2)), static_cast<uint32_t*>(h.raw(4))};
            kernels::fp8_quantize(t, h.upload(x, t), rows, cols, ds, e, out, h.stream());
            std::vector<uint8_t> bytes(n), bytes_t(n);
            std::vector<uint16_t> values(n);
            uint32_t amax = 0, want_amax = 0;
            h.copy_out(bytes.data(), out.bytes, n);
            h.copy_out(bytes_t.data(), out.bytes_t, n);
            h.copy_out(values.data(), out.values, n * 2);
            h.copy_out(&amax, out.amax_bits, 4);
            int64_t wrong = 0;
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c) {
                    const float v = x[static_cast<size_t>(r * cols + c)];
                    const uint8_t want = fp8_encode(e, mul_rn(v, state.step_scale));
                    want_amax = std::max(want_amax, bits_of(v) & 0x7fffffffu);
                    const size_t i = static_cast<size_t>(r * cols + c);
                    wrong += bytes[i] != want || bytes_t[static_cast<size_t>(c * rows + r)] != want ||
                             values[i] != bf16_bits_from_float(fp8_decode(e, want));
                }
            const std::string name = std::string("fp8 quantize ") + dtype_name(t) + " -> " +
                                     (e == Fp8Element::E4M3 ? "e4m3" : "e5m2") +
                                     " 77x45 (bytes, transpose, amax)";
            if (wrong == 0 && amax == want_amax)
                h.note(name, "");
            else
                h.fail(name, std::to_string(wrong) + " elements differ from fp8_math.h; amax bits " +
                                 std::to_string(amax) + " vs " + std::to_string(want_amax));
        }
}

// begin / amax / end on the device against the same functions on the host, over steps whose
// amaxes include 0, inf and NaN, for fp8-delayed (history of 3) and fp8-current.
void check_fp8_state(Harness& h) {
    const float amaxes[] = {3.0f, 0.0f, 12.5f, INFINITY, 1e-3f, NAN, 2e-44f, 0.5f, 7e4f};
    for (int delayed : {1, 0}) {
        Fp8Rule rule;
        rule.delayed = delayed;
        rule.history_len = 3;
        rule.margin = 1;
        Fp8TensorState host;
        std::vector<float> ring(3, 0.0f);
        auto* ds = static_cast<Fp8TensorState*>(h.raw(sizeof host));
        auto* dr = static_cast<float*>(h.raw(12));
        auto* drule = static_cast<Fp8Rule*>(h.raw(sizeof rule));
        auto* damax = static_cast<uint32_t*>(h.raw(4));
        h.copy_in(ds, &host, sizeof host);
        h.copy_in(drule, &rule, sizeof rule);
        bool same = true;
        for (float a : amaxes) {
            const uint32_t bits = bits_of(a) & 0x7fffffffu;
            fp8_begin_step(host, ring.data(), rule);
            fp8_take_amax(host, bits, rule);
            fp8_end_step(host, ring.data(), rule);
            h.copy_in(damax, &bits, 4);
            kernels::fp8_begin_steps(ds, dr, 1, drule, h.stream());
            kernels::fp8_take_amax(ds, damax, drule, h.stream());
            kernels::fp8_end_steps(ds, dr, 1, drule, h.stream());
            Fp8TensorState got;
            h.copy_out(&got, ds, sizeof got);
            same = same && std::memcmp(&got, &host, sizeof got) == 0;
        }
        const std::string name = std::string("fp8 scale state ") + (delayed ? "delayed" : "current");
        same ? h.note(name, "") : h.fail(name, "the device state differs from fp8_math.h's");
    }
}

// The FP8 GEMM against the CPU emulation: the dequantized operands multiplied in FP64. FP32
// accumulation on the tensor cores, so FP32's tolerance (BF16's for a BF16 output).
void check_fp8_gemm(Harness& h) {
    Rng rng(9);
    Fp8Gemm gemm(h.raw(size_t{8} << 20), size_t{8} << 20);
    struct Case {
        int64_t m, n, k;
        Fp8Element a;
        DType d;
        bool bias;
    };
    const Case cases[] = {{64, 48, 96, Fp8Element::E4M3, DType::F32, false},
                          {128, 256, 512, Fp8Element::E5M2, DType::F32, false},
                          {64, 48, 96, Fp8Element::E4M3, DType::BF16, false},
                          {64, 48, 96, Fp8Element::E4M3, DType::BF16, true}};
    const float scale_a = 0.37f, scale_b = 11.0f;
    for (const Case& c : cases) {
        Fp8MatmulShape s{c.m, c.n, c.k, c.a, Fp8Element::E4M3, c.d, c.bias, c.bias};
        const std::string name = "fp8 gemm " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                                 std::to_string(c.k) +
                                 (c.a == Fp8Element::E5M2 ? " e5m2*e4m3" : " e4m3*e4m3") + " -> " +
                                 dtype_name(c.d) + (c.bias ? " +bias+relu" : "");
        if (!gemm.supports(s)) {
            h.note(name, c.bias ? "epilogue not offered; the engine finishes with its own kernel"
                                : "NOT OFFERED by cuBLASLt: the engine runs such layers in BF16");
            continue;
        }
        std::vector<uint8_t> qa(static_cast<size_t>(c.m * c.k)), qb(static_cast<size_t>(c.n * c.k));
        for (auto& q : qa) q = fp8_encode(c.a, static_cast<float>(rng.normal()) * 100.0f);
        for (auto& q : qb) q = fp8_encode(Fp8Element::E4M3, static_cast<float>(rng.normal()) * 100.0f);
        const float inverses[2] = {div_rn(1.0f, scale_a), div_rn(1.0f, scale_b)};
        auto* da = static_cast<uint8_t*>(h.raw(qa.size()));
        auto* db = static_cast<uint8_t*>(h.raw(qb.size()));
        auto* dinv = static_cast<float*>(h.raw(8));
        h.copy_in(da, qa.data(), qa.size());
        h.copy_in(db, qb.data(), qb.size());
        h.copy_in(dinv, inverses, 8);
        const Host bias = h.random(c.n, DType::F32);
        void* dbias = h.upload(bias, DType::F32);
        void* dd = h.zeros(c.m * c.n, c.d);
        gemm.matmul(s, da, dinv, db, dinv + 1, dd, static_cast<const float*>(dbias), h.stream());
        Host ref(static_cast<size_t>(c.m * c.n));
        for (int64_t i = 0; i < c.m; ++i)
            for (int64_t j = 0; j < c.n; ++j) {
                double sum = 0;
                for (int64_t p = 0; p < c.k; ++p)
                    sum +=
                        static_cast<double>(fp8_decode(c.a, qa[static_cast<size_t>(i * c.k + p)]) *
                                            inverses[0]) *
                        static_cast<double>(
                            fp8_decode(Fp8Element::E4M3, qb[static_cast<size_t>(j * c.k + p)]) * inverses[1]);
                if (c.bias) sum = std::max(0.0, sum + bias[static_cast<size_t>(j)]);
                ref[static_cast<size_t>(i * c.n + j)] = static_cast<float>(sum);
            }
        h.compare(name, h.download(dd, c.m * c.n, c.d), ref, c.d, c.d == DType::F32 ? 1e-5 : 1e-2);
    }
    try {
        gemm.matmul({64, 10, 96}, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, h.stream());
        h.fail("fp8 gemm refuses n = 10", "no error for a shape Hopper's FP8 GEMMs do not take");
    } catch (const DeviceError& e) {
        h.note("fp8 gemm refuses n = 10", e.what());
    }
}

}  // namespace

int run_op_checks(DeviceContext& context, const std::function<void(const SelftestLine&)>& report) {
    context.make_current();
    Harness h(context, report);
    const std::pair<const char*, void (*)(Harness&)> groups[] = {
        {"convert", check_convert},         {"gemm", check_gemm},
        {"elementwise", check_elementwise}, {"losses", check_losses},
        {"batchnorm", check_batchnorm},     {"convolution and pooling", check_convolution_and_pooling},
        {"histogram", check_histogram},     {"fp8 quantize", check_fp8_quantize},
        {"fp8 state", check_fp8_state},     {"fp8 gemm", check_fp8_gemm}};
    for (const auto& [name, run] : groups) {
        try {
            run(h);
        } catch (const std::exception& e) {
            // A group that throws (an unsupported dtype, a launch failure) fails as a whole and
            // the others still run.
            h.fail(std::string(name) + " (group aborted)", e.what());
            cudaGetLastError();
        }
    }
    return h.failures();
}

}  // namespace mpwb::cuda
