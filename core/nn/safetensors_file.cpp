// safetensors encoding and decoding (see safetensors_file.h).
#include "core/nn/safetensors_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/common/error.h"
#include "core/common/json_input.h"

namespace mpwb {

namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors are little-endian, as every supported host");

constexpr size_t kLengthBytes = 8;
constexpr size_t kAlignment = 8;
// The reference implementation refuses headers over 100 MB; so do we.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
    for (size_t i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t get_u64(const uint8_t* p) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

std::string header_text(const SafetensorsFile& file) {
    nlohmann::ordered_json header;
    if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
    std::set<std::string> names;
    uint64_t offset = 0;
    for (const auto& t : file.tensors) {
        if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second)
            throw Error("safetensors: tensor name '" + t.name + "' is empty, reserved or given twice");
        if (static_cast<int64_t>(t.values.size()) != shape_numel(t.shape))
            throw Error("safetensors: tensor " + t.name + " has " + std::to_string(t.values.size()) +
                        " values for shape " + shape_to_string(t.shape));
        const uint64_t end = offset + t.values.size() * sizeof(float);
        header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, end}}};
        offset = end;
    }
    // A metadata value that is not UTF-8 (a run's name is any bytes) gets U+FFFD where it is
    // not: the header is JSON, which holds UTF-8 only.
    std::string text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    // Data starts on an 8-byte boundary: the header is padded with spaces, which JSON ignores.
    text.append((kAlignment - (kLengthBytes + text.size()) % kAlignment) % kAlignment, ' ');
    return text;
}

DataError bad(const std::string& source, const std::string& what) {
    return DataError("safetensors file " + source + ": " + what);
}

// One tensor entry of a header, checked against the data's size.
SafetensorsTensor read_entry(const std::string& name, const nlohmann::json& e, uint64_t data_bytes,
                             const std::string& source, std::pair<uint64_t, uint64_t>& range) {
    const std::string where = "tensor " + name;
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
        throw bad(source, where + " lacks dtype, shape or data_offsets");
    if (e["dtype"] != "F32")
        throw bad(source, where + ": dtype " + e["dtype"].dump() + " (only F32 is read)");
    SafetensorsTensor t;
    t.name = name;
    int64_t count = 1;
    if (!e["shape"].is_array() || e["shape"].size() > 8)
        throw bad(source, where + ": shape is not a short array");
    for (const auto& d : e["shape"]) {
        if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(data_bytes))
            throw bad(source, where + ": shape " + e["shape"].dump() + " does not fit the file");
        const auto dim = d.get<int64_t>();
        if (dim != 0 && count > static_cast<int64_t>(data_bytes) / dim)
            throw bad(source, where + ": shape " + e["shape"].dump() + " does not fit the file");
        count *= dim;
        t.shape.push_back(dim);
    }
    const auto& o = e["data_offsets"];
    if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
        throw bad(source, where + ": data_offsets is not two offsets");
    range = {o[0].get<uint64_t>(), o[1].get<uint64_t>()};
    if (range.first > range.second || range.second > data_bytes)
        throw bad(source, where + ": data_offsets " + o.dump() + " outside the " +
                              std::to_string(data_bytes) + " bytes of data");
    if (range.second - range.first != static_cast<uint64_t>(count) * sizeof(float))
        throw bad(source, where + ": data_offsets " + o.dump() + " hold " +
                              std::to_string(range.second - range.first) + " bytes, shape " +
                              e["shape"].dump() + " needs " + std::to_string(count * 4));
    return t;
}

}  // namespace

std::vector<uint8_t> encode_safetensors(const SafetensorsFile& file) {
    const std::string header = header_text(file);
    std::vector<uint8_t> out;
    put_u64(out, header.size());
    out.insert(out.end(), header.begin(), header.end());
    for (const auto& t : file.tensors) {
        const auto* p = reinterpret_cast<const uint8_t*>(t.values.data());
        out.insert(out.end(), p, p + t.values.size() * sizeof(float));
    }
    return out;
}

SafetensorsFile decode_safetensors(const std::vector<uint8_t>& bytes, const std::string& source) {
    if (bytes.size() < kLengthBytes) throw bad(source, "shorter than its 8-byte header length");
    const uint64_t header_bytes = get_u64(bytes.data());
    if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - kLengthBytes)
        throw bad(source, "header length " + std::to_string(header_bytes) + " is larger than the file (" +
                              std::to_string(bytes.size()) + " bytes)");
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + kLengthBytes, header_bytes);
    nlohmann::json header;
    try {
        header = parse_json_text(text, "safetensors file " + source + " header");
    } catch (const JsonInputError& e) {
        throw DataError(e.what());
    }
    if (!header.is_object()) throw bad(source, "the header is not a JSON object");
    const uint64_t data_bytes = bytes.size() - kLengthBytes - header_bytes;
    const uint8_t* data = bytes.data() + kLengthBytes + header_bytes;
    SafetensorsFile file;
    std::vector<std::pair<std::pair<uint64_t, uint64_t>, size_t>> ranges;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) throw bad(source, "__metadata__ is not an object");
            for (const auto& [k, v] : entry.items()) {
                if (!v.is_string()) throw bad(source, "__metadata__ value " + k + " is not a string");
                file.metadata[k] = v.get<std::string>();
            }
            continue;
        }
        std::pair<uint64_t, uint64_t> range;
        file.tensors.push_back(read_entry(name, entry, data_bytes, source, range));
        ranges.push_back({range, file.tensors.size() - 1});
    }
    // The data is the tensors back to back: no overlap, no gap, nothing after the last.
    std::sort(ranges.begin(), ranges.end());
    uint64_t expected = 0;
    std::vector<SafetensorsTensor> ordered;
    for (const auto& [range, index] : ranges) {
        SafetensorsTensor& t = file.tensors[index];
        if (range.first != expected)
            throw bad(source, "tensor " + t.name + " starts at byte " + std::to_string(range.first) +
                                  ", not at " + std::to_string(expected) +
                                  " (the tensors overlap or leave a gap)");
        t.values.resize((range.second - range.first) / sizeof(float));
        if (!t.values.empty()) std::memcpy(t.values.data(), data + range.first, range.second - range.first);
        expected = range.second;
        ordered.push_back(std::move(t));
    }
    if (expected != data_bytes)
        throw bad(source, std::to_string(data_bytes - expected) + " bytes after the last tensor");
    file.tensors = std::move(ordered);
    return file;
}

void write_new_file(const std::string& path, const void* bytes, size_t size, const std::string& what) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int err = errno;
        if (err == EEXIST)
            throw Error(what + " " + path + " already exists; choose another name or remove it first");
        throw Error("cannot create " + what + " " + path + ": " + std::strerror(err));
    }
    const auto* p = static_cast<const char*>(bytes);
    size_t left = size;
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(path.c_str());
            throw Error("writing " + what + " " + path + " failed: " + std::strerror(err));
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        throw Error("writing " + what + " " + path + " failed: " + std::strerror(err));
    }
}

void write_safetensors_file(const std::string& path, const SafetensorsFile& file) {
    const auto bytes = encode_safetensors(file);
    write_new_file(path, bytes.data(), bytes.size(), "safetensors file");
}

SafetensorsFile read_safetensors_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError("cannot open safetensors file " + path);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return decode_safetensors(bytes, path);
}

}  // namespace mpwb
