// seconds_since_process_start: /proc/self/stat field 22 (start time in clock ticks since boot)
// against CLOCK_BOOTTIME, the clock the kernel counts that start time on.
#include "app/gui/startup_clock.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <ctime>
#include <unistd.h>

namespace mpwb {

double seconds_since_process_start() {
    static const auto first_call = std::chrono::steady_clock::now();
#ifdef __linux__
    std::ifstream in("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The command name (field 2) may hold spaces; fields after it start past the last ')'.
    const auto close = text.rfind(')');
    if (close != std::string::npos) {
        std::istringstream fields(text.substr(close + 2));
        std::string field;
        // Field 3 is the first after ')'; the start time is field 22.
        for (int i = 3; i <= 22 && fields >> field; ++i) {
            if (i == 22) {
                const double ticks = std::stod(field);
                timespec now{};
                clock_gettime(CLOCK_BOOTTIME, &now);
                const double boot = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
                return boot - ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
            }
        }
    }
#endif
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - first_call).count();
}

}  // namespace mpwb
