// Error types of the engine. Every error a user can cause names the problem in its message
// (the file, the layer, the setting) so the CLI and the GUI can show it as is.
#pragma once
#include <stdexcept>
#include <string>

namespace mpwb {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A network that cannot be built: malformed JSON, unknown layer, shapes that don't fit.
class NetworkError : public Error {
    using Error::Error;
};
// A dataset that cannot be read: missing, truncated or corrupt file, NaN values.
class DataError : public Error {
    using Error::Error;
};
// A setting out of range: scaler, optimizer, schedule, CLI option.
class ConfigError : public Error {
    using Error::Error;
};
// A device that cannot do what was asked: out of memory, no driver.
class DeviceError : public Error {
    using Error::Error;
};

}  // namespace mpwb
