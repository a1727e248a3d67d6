// The binary codec of a checkpoint's state (checkpoint_state.h) and weights_digest
// (checkpoint.h), of a state and of a run's final weights alike. Every count read from a blob is
// bounded by the bytes that remain before anything is allocated for it, so hostile bytes give a
// DataError, never a crash or a large allocation.
#include "core/train/checkpoint.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "core/common/byte_blob.h"
#include "core/common/json_input.h"
#include "core/train/checkpoint_state.h"

namespace mpwb {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'W', 'B', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 2;  // the version written; 1 is still read
// The sections of version 2, in the order they are written; version 1 has all but the last.
constexpr std::array<std::string_view, 11> kSections = {"CONF", "NETW", "LIVE", "WGHT", "BUFF", "OPTM",
                                                        "SCAL", "QUAN", "RNGS", "SUMS", "DATA"};
constexpr size_t kVersion1Sections = kSections.size() - 1;
constexpr size_t kHeaderBytes = sizeof kMagic + 2 * sizeof(uint32_t);
constexpr size_t kChecksumBytes = sizeof(uint64_t);
// The longest amax history a recipe may keep (scaled_recipe_config.cpp, amax_history_len).
constexpr uint64_t kMaxAmaxHistory = 65536;
const std::string kWhat = "checkpoint state";

uint64_t fnv1a64(std::span<const uint8_t> bytes, uint64_t hash = 0xcbf29ce484222325ull) {
    for (const uint8_t b : bytes) hash = (hash ^ b) * 0x100000001b3ull;
    return hash;
}

// Visits the sums' fields in their stored order; one list for writing and reading.
template <class Sums, class F>
void for_each_sum(Sums& s, F&& f) {
    f(s.steps), f(s.epochs_completed), f(s.train_seconds), f(s.train_loss), f(s.test_loss);
    f(s.test_accuracy), f(s.best_test_accuracy), f(s.min_scale), f(s.max_scale), f(s.since_eval_loss);
    f(s.since_eval_correct), f(s.since_eval_steps), f(s.since_eval_samples), f(s.epoch_loss);
    f(s.epoch_steps), f(s.trained_samples), f(s.underflow_sum), f(s.underflow_count);
}

// ---- writing

void put_floats(std::vector<uint8_t>& out, std::span<const float> v) {
    put_value(out, static_cast<uint64_t>(v.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(float));
}

void put_float_lists(std::vector<uint8_t>& out, const std::vector<std::vector<float>>& lists) {
    put_value(out, static_cast<uint64_t>(lists.size()));
    for (const auto& v : lists) put_floats(out, v);
}

void put_text(std::vector<uint8_t>& out, std::string_view text) {
    out.insert(out.end(), text.begin(), text.end());
}

std::vector<uint8_t> weights_section(const CheckpointState& s) {
    std::vector<uint8_t> out;
    put_value(out, static_cast<uint64_t>(s.values.size()));
    for (size_t i = 0; i < s.values.size(); ++i) {
        put_floats(out, s.values[i]);
        put_floats(out, i < s.copies.size() ? std::span<const float>(s.copies[i]) : std::span<const float>());
    }
    return out;
}

std::vector<uint8_t> quantizers_section(const std::vector<QuantizerCheckpoint>& quantizers) {
    std::vector<uint8_t> out;
    put_value(out, static_cast<uint64_t>(quantizers.size()));
    for (const QuantizerCheckpoint& q : quantizers) {
        put_value(out, q.layer + ((q.gemm + (q.slot << 16)) << 32));
        for (size_t t = 0; t < q.state.histories.size(); ++t) {
            put_value(out, q.state.scales[t]);
            put_floats(out, q.state.histories[t]);
        }
    }
    return out;
}

std::vector<uint8_t> rng_section(const Rng::State& rng) {
    std::vector<uint8_t> out;
    for (const uint64_t w : rng.words) put_value(out, w);
    put_value(out, static_cast<uint8_t>(rng.has_spare_normal ? 1 : 0));
    put_value(out, rng.spare_normal);
    return out;
}

std::vector<uint8_t> sums_section(const RunSums& sums) {
    std::vector<uint8_t> out;
    for_each_sum(sums, [&](const auto& v) { put_value(out, v); });
    return out;
}

// ---- reading

std::string section_what(std::string_view tag) { return kWhat + ", section " + std::string(tag); }

std::vector<float> get_floats(BlobReader& r, std::string_view tag) {
    const auto n = r.get<uint64_t>();
    if (n > r.remaining() / sizeof(float))
        throw DataError(section_what(tag) + ": a list of " + std::to_string(n) +
                        " values is longer than the rest of the section");
    std::vector<float> v(static_cast<size_t>(n));
    r.read(v.data(), v.size() * sizeof(float));
    return v;
}

// A count of entries that each take at least min_entry_bytes.
uint64_t get_count(BlobReader& r, std::string_view tag, size_t min_entry_bytes) {
    const auto n = r.get<uint64_t>();
    if (n > r.remaining() / min_entry_bytes)
        throw DataError(section_what(tag) + ": " + std::to_string(n) +
                        " entries cannot fit in the rest of the section");
    return n;
}

std::vector<std::vector<float>> get_float_lists(BlobReader& r, std::string_view tag) {
    std::vector<std::vector<float>> lists(get_count(r, tag, sizeof(uint64_t)));
    for (auto& v : lists) v = get_floats(r, tag);
    return lists;
}

nlohmann::json get_json(std::span<const uint8_t> bytes, std::string_view tag) {
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return parse_json_text(text, section_what(tag));
}

void read_weights(BlobReader& r, CheckpointState& s) {
    const uint64_t n = get_count(r, "WGHT", 2 * sizeof(uint64_t));
    s.values.resize(n);
    s.copies.resize(n);
    for (size_t i = 0; i < n; ++i) {
        s.values[i] = get_floats(r, "WGHT");
        s.copies[i] = get_floats(r, "WGHT");
    }
}

void read_quantizers(BlobReader& r, CheckpointState& s) {
    constexpr size_t kMinEntry = sizeof(uint64_t) + 3 * (sizeof(float) + sizeof(uint64_t));
    s.quantizers.resize(get_count(r, "QUAN", kMinEntry));
    for (QuantizerCheckpoint& q : s.quantizers) {
        const uint64_t where = r.get<uint64_t>();
        q.layer = where & 0xffffffffu;
        q.gemm = (where >> 32) & 0xffffu;
        q.slot = where >> 48;
        for (size_t t = 0; t < q.state.histories.size(); ++t) {
            q.state.scales[t] = r.get<float>();
            q.state.histories[t] = get_floats(r, "QUAN");
            if (q.state.histories[t].size() > kMaxAmaxHistory)
                throw DataError(section_what("QUAN") + ": an amax history of " +
                                std::to_string(q.state.histories[t].size()) + " entries is longer than the " +
                                std::to_string(kMaxAmaxHistory) + " a recipe keeps");
        }
    }
}

Rng::State read_rng(BlobReader& r) {
    Rng::State rng;
    for (uint64_t& w : rng.words) w = r.get<uint64_t>();
    rng.has_spare_normal = r.get<uint8_t>() != 0;
    rng.spare_normal = r.get<float>();
    return rng;
}

void read_section(std::string_view tag, std::span<const uint8_t> bytes, CheckpointState& s) {
    BlobReader r(bytes, section_what(tag));
    if (tag == "CONF") return void(s.config = get_json(bytes, tag));
    if (tag == "NETW") return void(s.network = get_json(bytes, tag));
    if (tag == "SCAL") return void(s.scaler = get_json(bytes, tag));
    if (tag == "OPTM") return void(s.engine.optimizer.assign(bytes.begin(), bytes.end()));
    if (tag == "LIVE") {
        s.train_samples = r.get<int64_t>();
        s.lr_scale = r.get<float>();
    } else if (tag == "WGHT") {
        read_weights(r, s);
    } else if (tag == "BUFF") {
        s.buffers = get_float_lists(r, tag);
    } else if (tag == "QUAN") {
        read_quantizers(r, s);
    } else if (tag == "RNGS") {
        s.engine.dropout = read_rng(r);
    } else if (tag == "DATA") {
        if (!bytes.empty()) s.data_digest = r.get<uint64_t>();
    } else {
        for_each_sum(s.sums, [&](auto& v) { v = r.get<std::decay_t<decltype(v)>>(); });
    }
    if (r.remaining() != 0)
        throw DataError(section_what(tag) + " has " + std::to_string(r.remaining()) +
                        " unexpected bytes at its end");
}

// The blob without its checksum, after checking the frame: size, magic, version, checksum.
std::span<const uint8_t> checked_body(std::span<const uint8_t> blob) {
    if (blob.size() < kHeaderBytes + kChecksumBytes)
        throw DataError(kWhat + " is truncated: " + std::to_string(blob.size()) + " bytes");
    if (std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0)
        throw DataError(kWhat + " does not start with the MPWBCKPT signature");
    uint32_t version = 0;
    std::memcpy(&version, blob.data() + sizeof kMagic, sizeof version);
    if (version != 1 && version != kVersion)
        throw DataError(kWhat + " has version " + std::to_string(version) +
                        "; this build reads versions 1 to " + std::to_string(kVersion));
    const auto body = blob.first(blob.size() - kChecksumBytes);
    uint64_t stored = 0;
    std::memcpy(&stored, blob.data() + body.size(), sizeof stored);
    if (fnv1a64(body) != stored)
        throw DataError(kWhat + " is damaged: its checksum does not match its " +
                        std::to_string(blob.size()) + " bytes (truncated or altered)");
    return body;
}

std::string hex64(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

std::vector<uint8_t> encode_checkpoint_state(const CheckpointState& s) {
    const std::array<std::vector<uint8_t>, kSections.size()> payloads = [&] {
        std::array<std::vector<uint8_t>, kSections.size()> p;
        put_text(p[0], s.config.dump());
        put_text(p[1], s.network.dump());
        put_value(p[2], s.train_samples);
        put_value(p[2], s.lr_scale);
        p[3] = weights_section(s);
        put_float_lists(p[4], s.buffers);
        p[5] = s.engine.optimizer;
        put_text(p[6], s.scaler.dump());
        p[7] = quantizers_section(s.quantizers);
        p[8] = rng_section(s.engine.dropout);
        p[9] = sums_section(s.sums);
        if (s.data_digest) put_value(p[10], *s.data_digest);  // empty: the digest is unknown
        return p;
    }();
    std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
    put_value(out, kVersion);
    put_value(out, static_cast<uint32_t>(kSections.size()));
    for (size_t i = 0; i < kSections.size(); ++i) {
        out.insert(out.end(), kSections[i].begin(), kSections[i].end());
        put_value(out, static_cast<uint64_t>(payloads[i].size()));
        out.insert(out.end(), payloads[i].begin(), payloads[i].end());
    }
    put_value(out, fnv1a64(out));
    return out;
}

CheckpointState decode_checkpoint_state(std::span<const uint8_t> blob) {
    const auto body = checked_body(blob);
    uint32_t version = 0, count = 0;
    std::memcpy(&version, body.data() + sizeof kMagic, sizeof version);
    std::memcpy(&count, body.data() + sizeof kMagic + sizeof version, sizeof count);
    const size_t sections = version == 1 ? kVersion1Sections : kSections.size();
    if (count != sections)
        throw DataError(kWhat + " has " + std::to_string(count) + " sections; version " +
                        std::to_string(version) + " has " + std::to_string(sections));
    CheckpointState s;
    size_t offset = kHeaderBytes;
    for (const std::string_view expected : std::span(kSections).first(sections)) {
        BlobReader head(body.subspan(offset), kWhat);
        char tag[4];
        head.read(tag, sizeof tag);
        if (std::string_view(tag, sizeof tag) != expected)
            throw DataError(kWhat + " has section '" + std::string(tag, sizeof tag) + "' where '" +
                            std::string(expected) + "' belongs");
        const auto size = head.get<uint64_t>();
        offset += sizeof tag + sizeof size;
        if (size > body.size() - offset)
            throw DataError(section_what(expected) + " claims " + std::to_string(size) + " bytes; " +
                            std::to_string(body.size() - offset) + " remain");
        read_section(expected, body.subspan(offset, static_cast<size_t>(size)), s);
        offset += static_cast<size_t>(size);
    }
    if (offset != body.size())
        throw DataError(kWhat + " has " + std::to_string(body.size() - offset) +
                        " unexpected bytes after its sections");
    return s;
}

namespace {

// FNV-1a 64 over each tensor's length and values: the parameters' masters, then the buffers.
class WeightsDigest {
public:
    void add(std::span<const float> v) {
        const uint64_t n = v.size();
        hash_ = fnv1a64({reinterpret_cast<const uint8_t*>(&n), sizeof n}, hash_);
        hash_ = fnv1a64({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)}, hash_);
    }
    std::string text() const { return hex64(hash_); }

private:
    uint64_t hash_ = 0xcbf29ce484222325ull;
};

// The names buffer_name gives (network_weights.h); no parameter is named so.
bool is_buffer(const NamedTensor& t) {
    return t.name == "running_mean" || t.name == "running_var" || t.name.rfind("buffer", 0) == 0;
}

}  // namespace

std::string weights_digest(const TrainingCheckpoint& checkpoint) {
    const CheckpointState s = decode_checkpoint_state(checkpoint.state);
    WeightsDigest digest;
    for (const auto& v : s.values) digest.add(v);
    for (const auto& v : s.buffers) digest.add(v);
    return digest.text();
}

std::string weights_digest(const NetworkWeights& weights) {
    // NetworkWeights goes layer by layer, each layer's parameters before its buffers; the
    // checkpoint's state holds every parameter before every buffer.
    WeightsDigest digest;
    for (const bool buffers : {false, true})
        for (const NamedTensor& t : weights.tensors)
            if (is_buffer(t) == buffers) digest.add(t.values);
    return digest.text();
}

}  // namespace mpwb
