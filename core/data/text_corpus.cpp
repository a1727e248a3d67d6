// Text datasets (text_corpus.h): reading the file without blocking on what is not a file,
// splitting the tokens into a training and a test part, and cutting both into windows.
#include "core/data/text_corpus.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/common/checked_arith.h"
#include "core/common/error.h"
#include "core/common/input_file.h"
#include "core/common/printable.h"
#include "core/common/utf8.h"

namespace mpwb {

namespace {

namespace fs = std::filesystem;

class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

// Reads at most limit + 1 bytes, so a file that grew past the limit after its size was checked
// is still refused rather than read whole.
std::string read_all(int fd, uint64_t expected, uint64_t limit, const std::string& source) {
    std::string text;
    text.reserve(static_cast<size_t>(expected));
    char buffer[1 << 16];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw DataError("cannot read " + source + " (" + std::strerror(errno) + ")");
        if (got == 0) return text;
        text.append(buffer, static_cast<size_t>(got));
        if (text.size() > limit)
            throw DataError(source + " is over the " + byte_size_text(limit) + " limit of text datasets");
    }
}

// Tokens of the text: its bytes, or its characters (lead bytes; the text is valid UTF-8).
int64_t token_count(std::string_view text, TokenizerKind kind) {
    if (kind == TokenizerKind::Byte) return static_cast<int64_t>(text.size());
    return std::count_if(text.begin(), text.end(),
                         [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; });
}

// Byte offset of token `index` (the end of the text when index is the token count).
size_t byte_offset_of_token(std::string_view text, TokenizerKind kind, int64_t index) {
    if (kind == TokenizerKind::Byte) return static_cast<size_t>(index);
    int64_t seen = 0;
    for (size_t at = 0; at < text.size(); ++at)
        if ((static_cast<uint8_t>(text[at]) & 0xC0) != 0x80 && seen++ == index) return at;
    return text.size();
}

void check_part_length(const std::string& source, const char* part, int64_t tokens, int64_t context,
                       TokenizerKind kind) {
    if (tokens >= context + 1) return;
    const char* unit = kind == TokenizerKind::Byte ? " bytes" : " characters";
    throw DataError(source + ": the " + part + " part holds " + size_text(tokens) + unit +
                    ", shorter than context + 1 = " + size_text(context + 1) +
                    " (a window of context tokens and its next-token targets); use a longer text, a "
                    "shorter context or another test_ratio");
}

// The test part's ids; -1 for a character the training part's vocabulary lacks.
std::vector<int32_t> encode_known(const Vocabulary& vocabulary, std::string_view text) {
    if (vocabulary.kind() == TokenizerKind::Byte) return vocabulary.encode(text);
    std::vector<int32_t> ids;
    for_each_code_point(text, [&](char32_t cp, size_t) { ids.push_back(vocabulary.id_of(cp)); });
    return ids;
}

// Starts of the windows of ids (every T tokens; a window needs T + 1 tokens) whose tokens are all
// known.
std::vector<int64_t> window_starts(const std::vector<int32_t>& ids, int64_t context) {
    std::vector<int64_t> starts;
    const int64_t n = static_cast<int64_t>(ids.size());
    for (int64_t start = 0; start + context + 1 <= n; start += context) {
        const auto first = ids.begin() + start;
        if (std::find(first, first + context + 1, -1) == first + context + 1) starts.push_back(start);
    }
    return starts;
}

// x: [windows, T] ids, y: the same windows one token on.
void fill_windows(const std::vector<int32_t>& ids, const std::vector<int64_t>& starts, int64_t context,
                  Tensor& x, Tensor& y) {
    const int64_t windows = static_cast<int64_t>(starts.size());
    x = Tensor(Shape{windows, context});
    y = Tensor(Shape{windows, context});
    for (int64_t w = 0; w < windows; ++w)
        for (int64_t k = 0; k < context; ++k) {
            x.data()[w * context + k] = static_cast<float>(ids[static_cast<size_t>(starts[w] + k)]);
            y.data()[w * context + k] = static_cast<float>(ids[static_cast<size_t>(starts[w] + k + 1)]);
        }
}

}  // namespace

void check_text_corpus_options(const TextCorpusOptions& options, const std::string& field_prefix) {
    if (options.context < 1 || options.context > kTextMaxContext)
        throw ConfigError(field_prefix + "context must be from 1 to " + size_text(kTextMaxContext) +
                          ", gets " + std::to_string(options.context));
    if (!(options.test_ratio > 0.0 && options.test_ratio < 1.0))
        throw ConfigError(field_prefix + "test_ratio must be between 0 and 1 (exclusive), gets " +
                          std::to_string(options.test_ratio));
}

std::string read_text_file(const std::string& path) {
    const std::string source = "text file " + quoted_text(path);
    if (const std::string problem = input_file_problem(path); !problem.empty())
        throw DataError("cannot read " + source + ": it " + problem);
    // O_NONBLOCK: should the path become a FIFO after the check above, open returns at once
    // instead of waiting for a writer; fstat below then refuses it.
    const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) throw DataError("cannot open " + source + " (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        throw DataError("cannot read " + source + ": it is not a regular file");
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size == 0) throw DataError(source + " is empty");
    if (size > kTextMaxBytes)
        throw DataError(source + " holds " + byte_size_text(size) + ", over the " +
                        byte_size_text(kTextMaxBytes) + " limit of text datasets");
    return read_all(fd.get(), size, kTextMaxBytes, source);
}

std::vector<std::string> fortunes_files(const std::string& folder) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        throw DataError("the fortunes corpus needs the folder " + quoted_text(folder) +
                        ", which is missing: install Debian's fortunes and fortunes-min packages "
                        "(packaging/install-deps.sh)");
    std::vector<std::string> files;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path& p = it->path();
        const std::string ext = p.extension().string();
        // symlink_status: the `.u8` names are links to the same files; any other link is left out
        // too, so the corpus is the package's files and nothing a link points elsewhere.
        if (ext == ".dat" || ext == ".u8" || !fs::is_regular_file(it->symlink_status())) continue;
        files.push_back(p.string());
    }
    if (ec) throw DataError("cannot list " + quoted_text(folder) + " (" + ec.message() + ")");
    if (files.empty())
        throw DataError("the fortunes folder " + quoted_text(folder) + " holds no cookie files");
    std::sort(files.begin(), files.end());
    return files;
}

std::string read_fortunes_text(const std::string& folder) {
    std::string text;
    for (const std::string& file : fortunes_files(folder)) {
        const uint64_t size = input_file_size(file);
        if (size == 0) continue;  // an empty cookie file adds nothing (read_text_file refuses it)
        if (text.size() + size > kTextMaxBytes)
            throw DataError("the fortunes folder " + quoted_text(folder) + " holds over the " +
                            byte_size_text(kTextMaxBytes) + " limit of text datasets");
        text += read_text_file(file);
    }
    return text;
}

TextCorpus make_text_corpus(std::string_view text, const TextCorpusOptions& options,
                            const std::string& source, const std::string& name) {
    check_text_corpus_options(options, "");
    if (text.empty()) throw DataError(source + " is empty");
    const TokenizerKind kind = options.tokenizer;
    if (kind == TokenizerKind::Char && !is_valid_utf8(text))
        throw DataError(source + ": " + utf8_problem(text) +
                        "; character-level tokens need UTF-8 text (the byte tokenizer reads any file)");
    const int64_t tokens = token_count(text, kind);
    const auto test_tokens =
        static_cast<int64_t>(std::floor(static_cast<double>(tokens) * options.test_ratio));
    const int64_t train_tokens = tokens - test_tokens;
    check_part_length(source, "training", train_tokens, options.context, kind);
    check_part_length(source, "test", test_tokens, options.context, kind);

    const size_t split = byte_offset_of_token(text, kind, train_tokens);
    TextCorpus corpus;
    const Vocabulary vocabulary = kind == TokenizerKind::Byte
                                      ? Vocabulary::bytes()
                                      : Vocabulary::characters_of(text.substr(0, split), source);
    std::vector<int32_t> train_ids = vocabulary.encode(text.substr(0, split), source);
    const std::vector<int32_t> test_ids = encode_known(vocabulary, text.substr(split));
    const std::vector<int64_t> train_starts = window_starts(train_ids, options.context);
    const std::vector<int64_t> test_starts = window_starts(test_ids, options.context);
    const int64_t test_windows = (test_tokens - 1) / options.context;
    if (test_starts.empty())
        throw DataError(source + ": every test window holds a character the training part lacks, so none " +
                        "can be encoded with the training part's vocabulary; use the byte tokenizer");

    Dataset& ds = corpus.data;
    ds.name = name;
    ds.sample_shape = Shape{options.context};
    ds.num_classes = static_cast<int>(vocabulary.size());
    ds.class_names = vocabulary.printable_tokens();
    fill_windows(train_ids, train_starts, options.context, ds.train_x, ds.train_y);
    fill_windows(test_ids, test_starts, options.context, ds.test_x, ds.test_y);
    ds.vocabulary = vocabulary;
    ds.train_tokens = std::move(train_ids);
    corpus.facts = {.bytes = static_cast<int64_t>(text.size()),
                    .train_tokens = train_tokens,
                    .test_tokens = test_tokens,
                    .dropped_test_windows = test_windows - static_cast<int64_t>(test_starts.size())};
    return corpus;
}

TextCorpus load_text_corpus(const std::string& path, const TextCorpusOptions& options) {
    check_text_corpus_options(options, "");
    const std::string text = read_text_file(path);
    return make_text_corpus(text, options, "text file " + quoted_text(path),
                            printable_text(fs::path(path).stem().string()));
}

TextCorpus load_fortunes_corpus(const std::string& folder, const TextCorpusOptions& options) {
    check_text_corpus_options(options, "");
    const std::string text = read_fortunes_text(folder);
    return make_text_corpus(text, options, "the fortunes corpus in " + quoted_text(folder), "fortunes");
}

}  // namespace mpwb
