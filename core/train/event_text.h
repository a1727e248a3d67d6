// One readable line for a training event (the scaler's and the trainer's), from its kind and
// JSON detail: "scale 2^16 → 2^15, overflow in 2:Linear". The run store keeps the JSON; the
// workbench's event lists and the reports show this line, with the JSON in a tooltip.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mpwb {

std::string event_text(const std::string& kind, const nlohmann::json& detail);

// A loss scale as people read it: "2^16" for powers of two, else the shortest decimal.
std::string scale_text(double scale);

}  // namespace mpwb
