// Messages for device errors.
#include "core/backend/cuda/device_types.h"

#include <cstdio>

namespace mpwb::cuda {

std::string format_bytes(size_t bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
    return buf;
}

DeviceOutOfMemory::DeviceOutOfMemory(size_t requested_bytes, size_t free_bytes, size_t total_bytes,
                                     const std::string& what)
    : DeviceError("GPU out of memory: " + what + " asked for " + format_bytes(requested_bytes) + " (" +
                  format_bytes(free_bytes) + " free of " + format_bytes(total_bytes) + ")"),
      requested(requested_bytes) {}

}  // namespace mpwb::cuda
