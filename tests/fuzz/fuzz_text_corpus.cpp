// libFuzzer harness: a text dataset file (core/data/text_corpus.cpp) and a stored vocabulary
// (core/data/vocabulary.cpp). The first byte picks the context (1 to 16) and the test ratio; the
// rest is the file, read with both tokenizers as the app reads it. A dataset that loads must
// hold what text_corpus.h promises: ids inside the vocabulary, each target the next input of its
// window. The same bytes are then read as a vocabulary's JSON, as run_vocabulary reads a stored
// run's; one that reads must write back to itself.
#include <cstdio>
#include <cstdlib>

#include "core/common/json_input.h"
#include "core/data/text_corpus.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

void require(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "finding: %s\n", what);
    std::abort();
}

void check_windows(const mpwb::Tensor& x, const mpwb::Tensor& y, int64_t context, int64_t classes) {
    require(x.shape() == y.shape() && x.rank() == 2 && x.dim(1) == context, "window shapes");
    for (int64_t w = 0; w < x.dim(0); ++w)
        for (int64_t k = 0; k < context; ++k) {
            const float id = x.data()[w * context + k];
            require(id >= 0 && id < static_cast<float>(classes), "an id outside the vocabulary");
            if (k + 1 < context)
                require(y.data()[w * context + k] == x.data()[w * context + k + 1],
                        "a target that is not the next id");
        }
}

void check_corpus(const mpwb::TextCorpus& c, int64_t context) {
    const mpwb::Dataset& d = c.data;
    require(d.vocabulary && d.vocabulary->size() == d.num_classes, "the vocabulary's size");
    require(static_cast<int64_t>(d.class_names.size()) == d.num_classes, "a class name per token");
    require(d.train_size() > 0 && d.test_size() > 0, "an empty part");
    require(d.train_size() * context < c.facts.train_tokens, "a train window past the boundary");
    check_windows(d.train_x, d.train_y, context, d.num_classes);
    check_windows(d.test_x, d.test_y, context, d.num_classes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const int64_t context = 1 + (data[0] & 15);
    const double test_ratio = 0.05 + 0.9 * ((data[0] >> 4) / 15.0);
    const std::string path = mpwb::fuzz::write_input("text.txt", data + 1, size - 1);
    for (const auto kind : {mpwb::TokenizerKind::Byte, mpwb::TokenizerKind::Char})
        mpwb::fuzz::expect_app_errors([&] {
            check_corpus(mpwb::load_text_corpus(path, {kind, context, test_ratio}), context);
        });
    mpwb::fuzz::expect_app_errors([&] {
        const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
        const nlohmann::json j = mpwb::parse_json_text(text, "vocabulary");
        const mpwb::Vocabulary v = mpwb::Vocabulary::from_json(j, "vocabulary");
        require(mpwb::Vocabulary::from_json(v.to_json(), "again") == v,
                "a vocabulary that does not read back");
    });
    return 0;
}
