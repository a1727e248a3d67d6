// Presets: a network, a dataset and training settings under one name ("fashion-mlp"), shipped
// inside the binaries. A preset file has {"name", "description", "network", "training"}.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/nn/network.h"
#include "core/train/train_config.h"

namespace mpwb {

struct Preset {
    std::string name;
    std::string description;
    nlohmann::json network;
    TrainConfig training;
};

std::vector<std::string> preset_names();
// ConfigError naming the preset and listing the known ones.
Preset load_preset(const std::string& name);
// A preset from a file of the same format (or a bare network file: {"layers": ...}).
Preset load_preset_file(const std::string& path);
// Its training settings read and validated (TrainConfig::validate); ConfigError "<origin>: ...".
Preset parse_preset(const nlohmann::json& j, const std::string& origin);

}  // namespace mpwb
