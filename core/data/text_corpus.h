// Text datasets: any text file (or the built-in fortunes corpus) becomes token ids, byte-level or
// character-level (vocabulary.h), cut into windows of `context` tokens with next-token targets.
//
// Layout in Dataset: sample_shape {T}; train_x [N, T] token ids stored as float, train_y [N, T]
// the next token of each position (ClassPerPosition targets); num_classes = vocabulary size;
// class_names = the tokens in printable form; vocabulary = the Vocabulary. The test part is the
// end of the text (the last floor(tokens x test_ratio) tokens); windows start every T tokens
// within each part, from its start, and none crosses from one part into the other, so the train
// windows never see a test token. The Batcher shuffles the train windows with the run's seed per
// epoch; an epoch is train tokens / (batch x T) steps. Epoch 0 reads the windows from the part's
// start; each later epoch shifts them by a phase in [0, T) drawn from the run's seed and the
// epoch (batcher.h, window_phase), so over the epochs a window may start at any token, while an
// epoch still reads each token about once. The test windows stay put: every evaluation reads the
// same.
//
// The vocabulary is built from the training part alone (character level), so a test window that
// holds a character the training part lacks cannot be encoded: it is left out, and
// TextCorpusFacts counts it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/vocabulary.h"

namespace mpwb {

// Largest text file read: its tokens take 8 bytes each as inputs and targets (2 GiB at the limit).
inline constexpr uint64_t kTextMaxBytes = uint64_t{256} << 20;
// Longest context: windows of more tokens than any network here attends over.
inline constexpr int64_t kTextMaxContext = 65'536;
// Debian's `fortunes` and `fortunes-min` packages install their cookie files here.
inline constexpr const char* kFortunesFolder = "/usr/share/games/fortunes";

struct TextCorpusOptions {
    TokenizerKind tokenizer = TokenizerKind::Char;
    int64_t context = 64;     // T, tokens per window; 1..kTextMaxContext
    double test_ratio = 0.1;  // the end of the text held out; 0 < r < 1
};

// What a text dataset holds beyond its tensors: for the dataset panel and messages.
struct TextCorpusFacts {
    int64_t bytes = 0;
    int64_t train_tokens = 0, test_tokens = 0;
    // Character level: test windows left out because they hold a character the training part
    // lacks (the vocabulary's).
    int64_t dropped_test_windows = 0;
};

struct TextCorpus {
    Dataset data;
    TextCorpusFacts facts;
};

// ConfigError naming `field_prefix` + the field ("dataset.context must be ...") for a context or
// test ratio out of range.
void check_text_corpus_options(const TextCorpusOptions& options, const std::string& field_prefix);

// The bytes of a text file. DataError naming the file for a missing path, a folder, a FIFO or
// other non-regular file (refused without opening it for reading, so nothing blocks), an empty
// file or one over kTextMaxBytes (before a byte is read).
std::string read_text_file(const std::string& path);

// The cookie files of a fortunes folder, in sorted name order: regular files, not the `.dat`
// indexes, not the `.u8` links nor any other symbolic link. DataError when the folder is missing
// (naming the packages to install) or holds none.
std::vector<std::string> fortunes_files(const std::string& folder = kFortunesFolder);
// Those files concatenated, as one text (about 2.5 MB for Debian's); DataError over kTextMaxBytes.
std::string read_fortunes_text(const std::string& folder = kFortunesFolder);

// The dataset of `text`. `source` names the text in messages ("text file 'a.txt'"), `name` is
// the dataset's name. DataError for an empty text, a part shorter than context + 1 tokens,
// invalid UTF-8 at character level (the byte offset), a vocabulary over kTextMaxVocabulary, or
// no test window left; each before the tensors are allocated.
TextCorpus make_text_corpus(std::string_view text, const TextCorpusOptions& options,
                            const std::string& source, const std::string& name);

// read_text_file + make_text_corpus; the dataset is named after the file's stem.
TextCorpus load_text_corpus(const std::string& path, const TextCorpusOptions& options);
// read_fortunes_text + make_text_corpus; the dataset is named "fortunes".
TextCorpus load_fortunes_corpus(const std::string& folder, const TextCorpusOptions& options);

}  // namespace mpwb
