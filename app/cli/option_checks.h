// Validators for the numeric options of mpwb-cli. CLI11 2.1 converts integers with strtoll and
// never looks at errno, so "99999999999999999999" quietly became INT64_MAX, and it takes "010"
// as octal; these read the text themselves (decimal, whole, within the type and within the
// option's sensible range) and CLI11 puts the option's name in front of the message:
// "--epochs: -5 is out of range: expected a whole number from 1 to 1000000000".
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>

#include "core/train/train_limits.h"

namespace mpwb::cli {

// A decimal integer in [min, max].
CLI::Validator whole_number(std::int64_t min, std::int64_t max = std::numeric_limits<std::int64_t>::max());
// A decimal integer in [0, 2^64-1] (seeds).
CLI::Validator unsigned_number();
// A finite decimal number between min and max; `open_min`/`open_max` exclude the bound itself.
CLI::Validator real_number(double min, double max, bool open_min = false, bool open_max = false);

// Largest epoch and step counts accepted: TrainConfig::validate's, so a flag and a file setting
// have one range.
constexpr std::int64_t kMaxEpochs = TrainLimits::kMaxEpochs;
constexpr std::int64_t kMaxSteps = TrainLimits::kMaxSteps;

}  // namespace mpwb::cli
