// safetensors files (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON header, then the tensors' raw little-endian bytes. The header maps
// each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// byte after the header) and may hold "__metadata__", a map of strings. We write F32 tensors in
// the order given, packed with no gaps, and pad the header with spaces so the data starts on an
// 8-byte boundary (as the reference writer does). The reader takes F32 files and checks every
// offset, shape and size against the file before it reads a value; it exists for the tests and
// for checking an export.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor/shape.h"

namespace mpwb {

struct SafetensorsTensor {
    std::string name;
    Shape shape;
    std::vector<float> values;  // shape_numel(shape) values, row-major
};

struct SafetensorsFile {
    std::map<std::string, std::string> metadata;
    std::vector<SafetensorsTensor> tensors;  // written in this order; read in offset order
};

// The file's bytes. Throws Error for duplicate or empty names, a name "__metadata__", or values
// that do not fill their shape.
std::vector<uint8_t> encode_safetensors(const SafetensorsFile& file);

// Parses bytes as a safetensors file of F32 tensors. Throws DataError naming `source` and the
// problem (a header longer than the file, offsets that overlap, leave gaps or do not match the
// shape, a dtype other than F32, ...).
SafetensorsFile decode_safetensors(const std::vector<uint8_t>& bytes, const std::string& source);

// Creates `path` with `bytes`, refusing a path that exists (Error "<what> <path> already exists;
// ..."): opened with O_EXCL, so a file that appears meanwhile is not overwritten either. A write
// that fails part way removes what it wrote. `what` names the file in messages ("safetensors file").
void write_new_file(const std::string& path, const void* bytes, size_t size, const std::string& what);

// Writes the file at `path`, which must not exist (Error naming it otherwise, or when it cannot
// be written). Created exclusively, so two exports never write one file.
void write_safetensors_file(const std::string& path, const SafetensorsFile& file);
SafetensorsFile read_safetensors_file(const std::string& path);

}  // namespace mpwb
