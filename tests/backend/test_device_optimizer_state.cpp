// The CUDA engine's optimizer state in the checkpoint's format (core/engine/cuda/
// device_optimizer_state.cpp), on the host: the device's flat per-parameter buffers and its one
// update count become Optimizer::save_state's bytes exactly, the CPU optimizer's bytes become the
// buffers the device uploads, and a CPU run continued by the device rule (step_math.h) from a
// decoded state updates as the CPU optimizer continuing itself, bit for bit. States that do not
// fit the network or the device are refused naming the parameter and the numbers. No GPU needed.
#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/backend/cuda/step_math.h"
#include "core/common/error.h"
#include "core/common/rng.h"
#include "core/engine/cuda/device_optimizer_state.h"
#include "core/engine/cuda/step_math_host.h"
#include "core/optim/optimizer.h"
#include "tests/common/test_support.h"

using namespace mpwb;
using cuda::decode_device_optimizer_state;
using cuda::DeviceOptimizerState;
using cuda::encode_device_optimizer_state;

namespace {

// Parameters of 5, 3 and 1 values with random weights and gradients.
struct Params {
    explicit Params(uint64_t seed) : rng(seed) {
        for (size_t p = 0; p < 3; ++p) {
            const int64_t n = p == 0 ? 5 : p == 1 ? 3 : 1;
            storage[p].name = std::to_string(p) + ".weight";
            storage[p].value = Tensor({n});
            storage[p].grad = Tensor({n});
            storage[p].weight_decay = p != 1;
            for (int64_t i = 0; i < n; ++i) storage[p].value[i] = rng.normal();
            list.push_back(&storage[p]);
        }
    }
    void new_gradients() {
        for (auto& p : storage)
            for (int64_t i = 0; i < p.grad.numel(); ++i) p.grad[i] = rng.normal() * 0.1f;
    }
    Rng rng;
    Parameter storage[3];
    std::vector<Parameter*> list;
};

OptimizerConfig config_of(const char* kind, float momentum = 0.9f) {
    OptimizerConfig c;
    c.kind = kind;
    c.momentum = momentum;
    c.weight_decay = 0.01f;
    return c;
}

std::string refusal(const std::function<void()>& f) { return test::error_text<DataError>(f).toStdString(); }

#define EXPECT_REFUSAL(expr, words)                                                                  \
    do {                                                                                             \
        const std::string text_ = refusal([&] { (void)(expr); });                                    \
        QVERIFY2(text_.find(words) != std::string::npos, (text_ + " | wanted: " + (words)).c_str()); \
    } while (0)

}  // namespace

class TestDeviceOptimizerState : public QObject {
    Q_OBJECT
private slots:
    // A CPU optimizer's state decodes to its buffers and update count, and encodes back to the
    // same bytes, for every kind and for SGD without momentum (no buffers at all).
    void cpuStateRoundTripsByteForByte() {
        for (const auto& config :
             {config_of("adam"), config_of("adamw"), config_of("sgd"), config_of("sgd", 0)}) {
            Params params(7);
            auto optimizer = make_optimizer(config);
            for (int step = 0; step < 3; ++step) {
                params.new_gradients();
                optimizer->step(params.list, 0.05f);
            }
            const std::vector<uint8_t> blob = optimizer->save_state();
            const DeviceOptimizerState state = decode_device_optimizer_state(config, blob, params.list);
            QCOMPARE(state.updates, int64_t{3});
            const auto kept = cuda::device_optimizer_buffers(config);
            QCOMPARE(state.first.size(), kept.first ? size_t{3} : size_t{0});
            QCOMPARE(state.second.size(), kept.second ? size_t{3} : size_t{0});
            for (size_t p = 0; p < state.first.size(); ++p)
                QVERIFY(state.first[p] == optimizer->states()[p].a);
            for (size_t p = 0; p < state.second.size(); ++p)
                QVERIFY(state.second[p] == optimizer->states()[p].b);
            QVERIFY2(encode_device_optimizer_state(config, params.list, state) == blob, config.kind.c_str());
        }
    }

    // Before the first update the device's zeroed buffers are a CPU optimizer with no state, and
    // a CPU optimizer with no state is zeroed buffers of the parameters' sizes.
    void beforeTheFirstUpdate() {
        const OptimizerConfig config = config_of("adam");
        Params params(1);
        DeviceOptimizerState zero;
        for (const Parameter* p : params.list) {
            zero.first.emplace_back(static_cast<size_t>(p->value.numel()), 0.0f);
            zero.second.emplace_back(static_cast<size_t>(p->value.numel()), 0.0f);
        }
        const auto fresh = make_optimizer(config)->save_state();
        QVERIFY(encode_device_optimizer_state(config, params.list, zero) == fresh);
        const DeviceOptimizerState decoded = decode_device_optimizer_state(config, fresh, params.list);
        QCOMPARE(decoded.updates, int64_t{0});
        QVERIFY(decoded.first == zero.first && decoded.second == zero.second);
    }

    // A CPU run of two steps, decoded, continued by the device rule with the update count the
    // device takes from its scaler (updates + 1), equals the CPU optimizer's third step; and the
    // device's state after it, encoded, is the CPU optimizer's state byte for byte.
    void theDeviceRuleContinuesADecodedState() {
        for (const auto& config : {config_of("adam"), config_of("adamw"), config_of("sgd")}) {
            Params params(11);
            auto optimizer = make_optimizer(config);
            for (int step = 0; step < 2; ++step) {
                params.new_gradients();
                optimizer->step(params.list, 0.05f);
            }
            DeviceOptimizerState state =
                decode_device_optimizer_state(config, optimizer->save_state(), params.list);
            std::vector<std::vector<float>> w;
            for (const Parameter* p : params.list)
                w.emplace_back(p->value.span().begin(), p->value.span().end());
            params.new_gradients();
            optimizer->step(params.list, 0.04f);
            const cuda::OptimizerConstants k = cuda::optimizer_constants(config);
            const int64_t step = state.updates + 1;
            const auto s = cuda::optimizer_step_scalars(k, 0.04f, step, step == 1);
            for (size_t p = 0; p < params.list.size(); ++p)
                for (size_t i = 0; i < w[p].size(); ++i) {
                    float b = state.second.empty() ? 0.0f : state.second[p][i];
                    cuda::optimizer_rule(k, s, params.list[p]->weight_decay, params.list[p]->grad[int64_t(i)],
                                         w[p][i], state.first[p][i], b);
                    if (!state.second.empty()) state.second[p][i] = b;
                    QCOMPARE(w[p][i], params.list[p]->value[int64_t(i)]);
                }
            state.updates = step;
            QVERIFY2(encode_device_optimizer_state(config, params.list, state) == optimizer->save_state(),
                     config.kind.c_str());
        }
    }

    // The device's buffers are checked against the parameters before anything is encoded.
    void encodeRefusesBuffersThatDoNotFit() {
        const OptimizerConfig config = config_of("adam");
        Params params(3);
        DeviceOptimizerState state;
        state.updates = 4;
        for (const Parameter* p : params.list) {
            state.first.emplace_back(static_cast<size_t>(p->value.numel()), 0.5f);
            state.second.emplace_back(static_cast<size_t>(p->value.numel()), 0.25f);
        }
        const auto name = [](size_t i) { return "parameter " + std::to_string(i) + " (layer weight)"; };
        DeviceOptimizerState wrong_size = state;
        wrong_size.second[1].resize(2);
        EXPECT_REFUSAL(
            encode_device_optimizer_state(config, params.list, wrong_size, name),
            "the device's second buffer of parameter 1 (layer weight) holds 2 values; the parameter has 3");
        DeviceOptimizerState missing = state;
        missing.first.pop_back();
        EXPECT_REFUSAL(encode_device_optimizer_state(config, params.list, missing),
                       "holds 2 first buffers for 3 parameters; its rule keeps one per parameter");
        DeviceOptimizerState not_kept = state;  // SGD without momentum keeps none
        EXPECT_REFUSAL(encode_device_optimizer_state(config_of("sgd", 0), params.list, not_kept),
                       "holds 3 first buffers for 3 parameters; its rule keeps none");
        DeviceOptimizerState nan = state;
        nan.first[2][0] = std::numeric_limits<float>::quiet_NaN();
        EXPECT_REFUSAL(encode_device_optimizer_state(config, params.list, nan, name),
                       "optimizer state of parameter 2 (layer weight) has a non-finite first moment");
        DeviceOptimizerState negative = state;
        negative.updates = -1;
        EXPECT_REFUSAL(encode_device_optimizer_state(config, params.list, negative), "counts -1 updates");
        QVERIFY(!encode_device_optimizer_state(config, params.list, state).empty());
    }

    // A CPU state the device cannot hold: per-parameter counts that differ, SGD momentum missing
    // after updates, a state for another network (Optimizer::load_state's own refusal).
    void decodeRefusesWhatTheDeviceCannotHold() {
        Params params(5);
        const OptimizerConfig adam = config_of("adam");
        auto optimizer = make_optimizer(adam);
        params.new_gradients();
        optimizer->step(params.list, 0.05f);
        std::vector<Optimizer::State> states = optimizer->states();
        states[2].step = 7;
        auto uneven = make_optimizer(adam);
        uneven->set_states(states, params.list);
        EXPECT_REFUSAL(
            decode_device_optimizer_state(adam, uneven->save_state(), params.list),
            "optimizer state of parameter 2 ('2.weight') counts 7 updates, parameter 0 ('0.weight') 1");

        auto plain_sgd = make_optimizer(config_of("sgd", 0));
        plain_sgd->step(params.list, 0.05f);
        EXPECT_REFUSAL(
            decode_device_optimizer_state(config_of("sgd"), plain_sgd->save_state(), params.list),
            "optimizer state of parameter 0 ('0.weight') holds no momentum buffer after 1 updates");
        // The other way round the momentum the update never reads is dropped.
        auto momentum_sgd = make_optimizer(config_of("sgd"));
        momentum_sgd->step(params.list, 0.05f);
        QVERIFY(decode_device_optimizer_state(config_of("sgd", 0), momentum_sgd->save_state(), params.list)
                    .first.empty());

        std::vector<Parameter*> two(params.list.begin(), params.list.begin() + 2);
        EXPECT_REFUSAL(decode_device_optimizer_state(adam, optimizer->save_state(), two),
                       "the state of 3 parameters; the network has 2");
        EXPECT_REFUSAL(decode_device_optimizer_state(config_of("sgd"), optimizer->save_state(), params.list),
                       "optimizer state blob is for 'adam', this optimizer is 'sgd'");
    }

    // Optimizer::set_states keeps the state it had when it refuses.
    void setStatesKeepsTheStateOnRefusal() {
        Params params(9);
        auto optimizer = make_optimizer(config_of("adam"));
        params.new_gradients();
        optimizer->step(params.list, 0.05f);
        std::vector<Optimizer::State> states = optimizer->states();
        states[1].b.clear();
        EXPECT_REFUSAL(optimizer->set_states(states, params.list), "no second moment after 1 updates");
        QCOMPARE(optimizer->states()[1].b.size(), size_t{3});
        states.pop_back();
        EXPECT_REFUSAL(optimizer->set_states(states, params.list),
                       "the state of 2 parameters; the network has 3");
    }
};

QTEST_APPLESS_MAIN(TestDeviceOptimizerState)
#include "test_device_optimizer_state.moc"
