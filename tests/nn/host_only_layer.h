// HostOnlyLayer: a layer kind that no device engine runs (its device op is NoDeviceOp), an
// Identity otherwise. The tests of the device plan's refusal and of the Trainer's fallback to the
// host engine put it into a network (Network::from_layers): no registered kind lacks a device op
// today.
#pragma once
#include "core/nn/simple_layers.h"

namespace mpwb::test {

class HostOnlyLayer final : public Identity {
public:
    std::string kind() const override { return "HostOnly"; }
    nlohmann::json to_json() const override { return {{"type", kind()}}; }
    DeviceOp device_op() const override { return NoDeviceOp{}; }
};

}  // namespace mpwb::test
