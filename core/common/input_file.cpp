// Input file checks shared by the JSON, CSV and IDX readers.
#include "core/common/input_file.h"

#include <filesystem>
#include <system_error>

namespace mpwb {

namespace fs = std::filesystem;

std::string input_file_problem(const std::string& path) {
    if (path.empty()) return "is an empty path";
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) {
        if (ec && ec != std::errc::no_such_file_or_directory) return "cannot be read (" + ec.message() + ")";
        return "does not exist";
    }
    if (fs::is_directory(st)) return "is a folder, not a file";
    if (!fs::is_regular_file(st)) return "is not a regular file";
    return {};
}

uint64_t input_file_size(const std::string& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    return ec ? 0 : static_cast<uint64_t>(size);
}

std::string byte_size_text(uint64_t bytes) {
    if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    if (bytes >= (uint64_t{1} << 10) && bytes % (uint64_t{1} << 10) == 0)
        return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

}  // namespace mpwb
