// Checks every reader of a user-named file runs before opening it: the path exists and is a
// regular file (a folder opened as a stream fails deep inside the library with
// "basic_filebuf::underflow"), and its size is within the reader's limit (checked before a byte
// of the body is read, so a huge file is refused without the memory and time it would take).
#pragma once
#include <cstdint>
#include <string>

namespace mpwb {

// Empty when path names a readable regular file; else what is wrong with it ("does not exist",
// "is a folder, not a file", ...), to follow the file's name in the caller's message.
std::string input_file_problem(const std::string& path);

// The file's size in bytes; 0 when it cannot be read (input_file_problem says why).
uint64_t input_file_size(const std::string& path);

// "4 MiB" / "512 KiB" / "123 bytes" for limits and sizes in messages.
std::string byte_size_text(uint64_t bytes);

}  // namespace mpwb
