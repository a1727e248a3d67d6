// Tests of text datasets (core/data/text_corpus, core/data/vocabulary): byte and character
// tokens, the windows and their next-token targets, the train/test boundary, the vocabulary's
// JSON round trip, the fortunes folder's file choice, every bad input with its message, seeded
// batches, and the DatasetSpec that selects a text dataset.
#include <QtTest>
#include <QTemporaryDir>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/common/error.h"
#include "core/data/batcher.h"
#include "core/data/text_corpus.h"
#include "core/train/dataset_digest.h"
#include "core/train/dataset_source.h"
#include "core/train/train_config.h"
#include "tests/common/test_support.h"

using mpwb::test::error_text;

using namespace mpwb;

namespace {

std::string write(const QTemporaryDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir.path().toStdString() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

// A text whose byte i is printable and varies with i, so a window's values show where it starts.
std::string position_text(int64_t bytes) {
    std::string text;
    for (int64_t i = 0; i < bytes; ++i) text += static_cast<char>(' ' + i % 90);
    return text;
}

float at(const Tensor& t, int64_t row, int64_t col) { return t.data()[row * t.dim(1) + col]; }

// Every window of x/y is the text's ids from `first` + w * T on, with targets one token later.
void check_windows(const Tensor& x, const Tensor& y, const std::vector<int32_t>& ids, int64_t first,
                   int64_t context) {
    for (int64_t w = 0; w < x.dim(0); ++w)
        for (int64_t k = 0; k < context; ++k) {
            const auto pos = static_cast<size_t>(first + w * context + k);
            QCOMPARE(at(x, w, k), static_cast<float>(ids[pos]));
            QCOMPARE(at(y, w, k), static_cast<float>(ids[pos + 1]));
        }
}

}  // namespace

class TestTextCorpus : public QObject {
    Q_OBJECT
private slots:
    void byteTokensAreTheBytes() {
        const std::string text = "ab\xff\n" + position_text(96);  // 100 bytes, one not UTF-8
        const TextCorpus c = make_text_corpus(text, {TokenizerKind::Byte, 8, 0.25}, "test text", "t");
        const Dataset& ds = c.data;
        QCOMPARE(ds.num_classes, 256);
        QCOMPARE(ds.sample_shape, (Shape{8}));
        QVERIFY(ds.target_kind() == TargetKind::ClassPerPosition);
        QCOMPARE(at(ds.train_x, 0, 2), 255.0f);
        QCOMPARE(ds.class_names[255], std::string("\\xff"));
        QCOMPARE(ds.class_names['\n'], std::string("\\n"));
        QCOMPARE(ds.class_names['a'], std::string("a"));
        QVERIFY(ds.vocabulary && ds.vocabulary->kind() == TokenizerKind::Byte);
        QCOMPARE(c.facts.bytes, int64_t{100});
    }

    // Windows every T tokens from the start of each part; the test part is the last
    // floor(tokens x ratio) tokens; no train window's target reaches into it.
    void windowsStopAtTheBoundary() {
        const int64_t context = 7;
        const std::string text = position_text(1000);
        const TextCorpus c = make_text_corpus(text, {TokenizerKind::Byte, context, 0.3}, "test text", "t");
        const Dataset& ds = c.data;
        QCOMPARE(c.facts.train_tokens, int64_t{700});
        QCOMPARE(c.facts.test_tokens, int64_t{300});
        QCOMPARE(ds.train_x.shape(), (Shape{(700 - 1) / context, context}));
        QCOMPARE(ds.train_y.shape(), ds.train_x.shape());
        QCOMPARE(ds.test_x.shape(), (Shape{(300 - 1) / context, context}));
        const std::vector<int32_t> ids = ds.vocabulary->encode(text);
        check_windows(ds.train_x, ds.train_y, ids, 0, context);
        check_windows(ds.test_x, ds.test_y, ids, 700, context);
        // The last train target is before the boundary: windows x T + 1 <= 700.
        QVERIFY(ds.train_size() * context + 1 <= 700);
        QCOMPARE(c.facts.dropped_test_windows, int64_t{0});
    }

    void charTokensAreSortedCharacters() {
        const std::string text =
            "b\xc3\xa9"
            "a\n\xe6\xbc\xa2"
            "ab" +
            std::string(30, 'a') +
            "b\xc3\xa9"
            "a\n";
        const TextCorpus c = make_text_corpus(text, {TokenizerKind::Char, 3, 0.2}, "test text", "t");
        const Dataset& ds = c.data;
        // Characters, not bytes: 41 of them, 8 held out.
        QCOMPARE(c.facts.train_tokens + c.facts.test_tokens, int64_t{41});
        QCOMPARE(c.facts.test_tokens, int64_t{8});
        QCOMPARE(ds.class_names, (std::vector<std::string>{"\\n", "a", "b", "\xc3\xa9", "\xe6\xbc\xa2"}));
        QCOMPARE(ds.num_classes, 5);
        QCOMPARE(at(ds.train_x, 0, 0), 2.0f);  // 'b'
        QCOMPARE(at(ds.train_x, 0, 1), 3.0f);  // U+00E9
        QCOMPARE(at(ds.train_y, 0, 0), 3.0f);
        QCOMPARE(at(ds.train_x, 1, 1), 4.0f);  // U+6F22
        check_windows(ds.train_x, ds.train_y, ds.vocabulary->encode(text), 0, 3);
    }

    // The vocabulary is the training part's: a test window holding a character it lacks is left
    // out and counted; the windows kept are the others.
    void unknownTestCharactersDropTheirWindows() {
        // 42 training characters (a, b), 13 test characters with a U+00FC in the second window.
        const std::string text = std::string(40, 'a') + "ab" +
                                 "aabba\xc3\xbc"
                                 "abbbaab";
        const TextCorpus c = make_text_corpus(text, {TokenizerKind::Char, 4, 0.25}, "test text", "t");
        QCOMPARE(c.data.num_classes, 2);
        QCOMPARE(c.facts.test_tokens, int64_t{13});
        QCOMPARE(c.facts.dropped_test_windows, int64_t{1});
        QCOMPARE(c.data.test_size(), int64_t{2});
        // The windows kept start at the test part's tokens 0 and 8: "aabb" and "bbaa".
        QCOMPARE(at(c.data.test_x, 0, 2), 1.0f);
        QCOMPARE(at(c.data.test_x, 1, 0), 1.0f);
        QCOMPARE(at(c.data.test_x, 1, 2), 0.0f);
        QCOMPARE(at(c.data.test_y, 1, 3), 1.0f);
        const std::string every_window = std::string(40, 'a') +
                                         "\xc3\xbc"
                                         "aaa"
                                         "\xc3\xbc"
                                         "aaaaa";
        const QString msg = error_text<DataError>([&] {
            make_text_corpus(every_window, {TokenizerKind::Char, 4, 0.2}, "test text", "t");
        });
        VERIFY_MSG(msg, "test text", "every test window", "byte tokenizer");
    }

    void vocabularyRoundTrips() {
        const Vocabulary chars =
            Vocabulary::characters_of("h\xc3\xa9llo w\xf0\x9f\x98\x80rld\n", "test text");
        const nlohmann::json j = chars.to_json();
        QCOMPARE(j["tokenizer"].get<std::string>(), std::string("char"));
        QVERIFY(Vocabulary::from_json(nlohmann::json::parse(j.dump()), "v") == chars);
        QVERIFY(Vocabulary::from_json(Vocabulary::bytes().to_json(), "v") == Vocabulary::bytes());
        QVERIFY(!(chars == Vocabulary::bytes()));
        const std::string hello = "w\xf0\x9f\x98\x80rld h\xc3\xa9llo";
        QCOMPARE(chars.decode(chars.encode(hello)), hello);
        const std::string bytes(
            "\x00\xff\xfe"
            "abc",
            6);
        QCOMPARE(Vocabulary::bytes().decode(Vocabulary::bytes().encode(bytes)), bytes);

        VERIFY_MSG(error_text<DataError>([&] { chars.encode("hollo there", "prompt"); }), "prompt", "'t'",
                   "byte offset 6", "not in the vocabulary");
        VERIFY_MSG(error_text<DataError>([&] { chars.encode("ab\xff", "prompt"); }), "prompt", "offset 2");
        VERIFY_MSG(error_text<DataError>([&] { chars.token(chars.size()); }), "outside the vocabulary");
        const auto bad = [](const char* json) {
            return error_text<ConfigError>(
                [&] { Vocabulary::from_json(nlohmann::json::parse(json), "vocab"); });
        };
        VERIFY_MSG(bad(R"({"tokenizer": "word"})"), "vocab.tokenizer", "'word'", "byte or char");
        VERIFY_MSG(bad(R"({"tokenizer": "char", "tokens": ["a", "bc"]})"), "vocab.tokens[1]",
                   "one character");
        VERIFY_MSG(bad(R"({"tokenizer": "char", "tokens": ["b", "a"]})"), "vocab.tokens[1]", "out of order");
        VERIFY_MSG(bad(R"({"tokenizer": "char", "tokens": ["a", "a"]})"), "vocab.tokens[1]", "out of order");
        VERIFY_MSG(bad(R"({"tokenizer": "char", "tokens": ["a", 5]})"), "vocab.tokens[1]");
        VERIFY_MSG(bad(R"({"tokenizer": "char", "tokens": []})"), "vocab.tokens");
        VERIFY_MSG(bad(R"([1])"), "vocab");
        VERIFY_MSG(bad(R"({"tokenizer": "byte", "merges": []})"), "vocab", "merges");
    }

    void badFilesEachSayWhy() {
        QTemporaryDir tmp;
        const TextCorpusOptions opt{TokenizerKind::Char, 8, 0.2};
        const auto load = [&](const std::string& path) {
            return error_text<DataError>([&] { load_text_corpus(path, opt); });
        };
        VERIFY_MSG(load(write(tmp, "empty.txt", "")), "empty.txt", "is empty");
        VERIFY_MSG(load(tmp.path().toStdString()), "is a folder");
        VERIFY_MSG(load(tmp.path().toStdString() + "/missing.txt"), "missing.txt", "does not exist");
        const std::string fifo = tmp.path().toStdString() + "/pipe";
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        VERIFY_MSG(load(fifo), "pipe", "not a regular file");
        VERIFY_MSG(load(write(tmp, "short.txt", "abcdefghij")), "short.txt",
                   "training part holds 8 characters", "context + 1 = 9");
        VERIFY_MSG(load(write(tmp, "tail.txt", position_text(40))), "tail.txt",
                   "test part holds 8 characters");
        VERIFY_MSG(load(write(tmp, "latin1.txt", position_text(50) + "caf\xe9" + position_text(50))),
                   "latin1.txt", "byte 0xE9 at offset 53", "UTF-8", "byte tokenizer");
        // The byte tokenizer reads the same file.
        QCOMPARE(load_text_corpus(tmp.path().toStdString() + "/latin1.txt", {TokenizerKind::Byte, 8, 0.2})
                     .data.num_classes,
                 256);
        // Over the size limit: refused from its size, before a byte is read (the file is sparse).
        const std::string huge = write(tmp, "huge.txt", "x");
        std::filesystem::resize_file(huge, kTextMaxBytes + 1);
        VERIFY_MSG(load(huge), "huge.txt", "256 MiB limit");
        // More distinct characters than a character vocabulary holds.
        std::string many;
        for (char32_t cp = 0x10000; cp < 0x10000 + kTextMaxVocabulary + 2; ++cp) many += utf8_of(cp);
        VERIFY_MSG(load(write(tmp, "many.txt", many + many)), "many.txt", "65538 distinct characters",
                   "use the byte tokenizer");
    }

    void optionsAreChecked() {
        VERIFY_MSG(error_text<ConfigError>([] {
                       make_text_corpus("abc", {TokenizerKind::Byte, 0, 0.2}, "t", "t");
                   }),
                   "context must be from 1");
        VERIFY_MSG(error_text<ConfigError>([] {
                       make_text_corpus("abc", {TokenizerKind::Byte, 4, 1.0}, "t", "t");
                   }),
                   "test_ratio");
    }

    // Sorted names; not the .dat indexes, not the .u8 links, no link at all.
    void fortunesFolderIsItsCookieFiles() {
        QTemporaryDir tmp;
        write(tmp, "zen", "%\nlast\n");
        write(tmp, "art", "first\n%\n");
        write(tmp, "art.dat", "INDEX");
        write(tmp, "empty", "");
        const std::string dir = tmp.path().toStdString();
        std::filesystem::create_symlink(dir + "/art", dir + "/art.u8");
        std::filesystem::create_symlink(dir + "/zen", dir + "/linked");
        QCOMPARE(fortunes_files(dir), (std::vector<std::string>{dir + "/art", dir + "/empty", dir + "/zen"}));
        QCOMPARE(read_fortunes_text(dir), std::string("first\n%\n%\nlast\n"));
        VERIFY_MSG(error_text<DataError>([&] { fortunes_files(dir + "/none"); }), "none", "fortunes-min");
    }

    void debianFortunesLoad() {
        if (!std::filesystem::is_directory(kFortunesFolder))
            QSKIP("Debian's fortunes package is not installed");
        const TextCorpus c = load_fortunes_corpus(kFortunesFolder, {TokenizerKind::Char, 64, 0.1});
        QVERIFY2(c.facts.bytes > 2'000'000, qPrintable(QString::number(c.facts.bytes)));
        QVERIFY(c.data.num_classes > 90 && c.data.num_classes < 200);
        QCOMPARE(c.data.name, std::string("fortunes"));
    }

    // The Batcher draws windows with the run's seed: the same seed and epoch give the same
    // batches (a resumed run sees what it would have), another seed others.
    void seededBatchesRepeat() {
        const TextCorpus c = make_text_corpus(position_text(2000), {TokenizerKind::Byte, 10, 0.1}, "t", "t");
        const auto batches = [&](uint64_t seed, int64_t epoch) {
            BatchIterator it(c.data.train_x, c.data.train_y, 16, seed);
            it.start_epoch(epoch);
            std::vector<float> seen;
            Tensor bx, by;
            while (it.next(bx, by)) seen.insert(seen.end(), bx.data(), bx.data() + bx.numel());
            return seen;
        };
        QCOMPARE(batches(7, 3), batches(7, 3));
        QVERIFY(batches(7, 3) != batches(8, 3));
        QVERIFY(batches(7, 3) != batches(7, 4));
    }

    // Epoch 0 reads the windows of train_x; later epochs shift them by a phase drawn from
    // (seed, epoch) in [0, T): every window reads the tokens from phase + w·T on, with targets
    // one token later, except a last window with no room, which keeps phase 0's.
    void laterEpochsShiftTheWindowsByAPhase() {
        const int64_t context = 7;
        const std::string text = position_text(1000);  // 700 train tokens: 99 windows, slack 699 - 99·7 = 6
        const TextCorpus c = make_text_corpus(text, {TokenizerKind::Byte, context, 0.3}, "test text", "t");
        const Dataset& ds = c.data;
        QCOMPARE(static_cast<int64_t>(ds.train_tokens.size()), int64_t{700});
        QCOMPARE(window_phase(ds, 5, 0), int64_t{0});
        std::set<int64_t> phases;
        for (int64_t epoch = 1; epoch <= 40; ++epoch) {
            const int64_t phase = window_phase(ds, 5, epoch);
            QVERIFY(phase >= 0 && phase < context);
            QCOMPARE(window_phase(ds, 5, epoch), phase);  // no state: the same for a resumed run
            phases.insert(phase);
        }
        QCOMPARE(static_cast<int64_t>(phases.size()), context);  // every phase comes up
        const std::vector<int32_t> ids = ds.vocabulary->encode(text);
        std::vector<int64_t> rows(static_cast<size_t>(ds.train_size()));
        for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
        Tensor bx, by;
        gather_train_batch(ds, 0, rows, bx, by);
        QCOMPARE(bx.shape(), ds.train_x.shape());
        check_windows(bx, by, ids, 0, context);
        gather_train_batch(ds, 6, rows, bx, by);  // the slack: every window fits
        check_windows(bx, by, ids, 6, context);
        gather_train_batch(ds, 3, std::vector<int64_t>{98, 4}, bx, by);
        QCOMPARE(at(bx, 0, 0), static_cast<float>(ids[3 + 98 * 7]));
        QCOMPARE(at(by, 1, 6), static_cast<float>(ids[3 + 4 * 7 + 7]));
        // A text of 694 train tokens (slack 0): at phase 4 the last window has no room and
        // keeps phase 0's; the one before it moves.
        const TextCorpus tight =
            make_text_corpus(position_text(991), {TokenizerKind::Byte, context, 0.3}, "t", "t");
        const int64_t last = tight.data.train_size() - 1;
        QCOMPARE((static_cast<int64_t>(tight.data.train_tokens.size()) - 1) % context, int64_t{0});
        gather_train_batch(tight.data, 4, std::vector<int64_t>{last, last - 1}, bx, by);
        const std::vector<int32_t> tight_ids = tight.data.vocabulary->encode(position_text(991));
        QCOMPARE(at(bx, 0, 0), static_cast<float>(tight_ids[static_cast<size_t>(last * context)]));
        QCOMPARE(at(bx, 1, 0), static_cast<float>(tight_ids[static_cast<size_t>(4 + (last - 1) * context)]));
        VERIFY_MSG(error_text<DataError>([&] { gather_train_batch(ds, 7, rows, bx, by); }), "phase 7",
                   "outside [0, 7)");
        VERIFY_MSG(
            error_text<DataError>([&] { gather_train_batch(ds, 1, std::vector<int64_t>{99}, bx, by); }),
            "window 99 out of range [0, 99)");
    }

    // The spec's fields: JSON both ways, validation naming the field, load_dataset without
    // normalisation (ids stay ids), and a digest that sees a changed vocabulary.
    void datasetSpecSelectsText() {
        QTemporaryDir tmp;
        DatasetSpec spec;
        spec.kind = "text";
        spec.path = write(tmp, "story.txt", position_text(3000));
        spec.tokenizer = "byte";
        spec.context = 12;
        spec.test_ratio = 0.1;
        TrainConfig config;
        config.dataset = spec;
        const TrainConfig back = train_config_from_json(to_json(config));
        QCOMPARE(back.dataset.tokenizer, std::string("byte"));
        QCOMPARE(back.dataset.context, int64_t{12});
        QCOMPARE(back.dataset.path, spec.path);
        QVERIFY(!to_json(spec).contains("normalize"));

        const Dataset ds = load_dataset(spec);
        QCOMPARE(ds.name, std::string("story"));
        QCOMPARE(ds.sample_shape, (Shape{12}));
        QCOMPARE(at(ds.train_x, 0, 0), static_cast<float>(' '));
        QCOMPARE(dataset_digest(ds), dataset_digest(load_dataset(spec)));

        spec.tokenizer = "word";
        VERIFY_MSG(error_text<ConfigError>([&] { spec.validate(); }), "dataset.tokenizer", "'word'");
        spec.tokenizer = "char";
        spec.context = 0;
        VERIFY_MSG(error_text<ConfigError>([&] { spec.validate(); }), "dataset.context", "gets 0");
        nlohmann::json j = to_json(config);
        j["dataset"]["context"] = "64";
        VERIFY_MSG(error_text<ConfigError>([&] { train_config_from_json(j); }), "dataset.context");
        spec.context = 12;
        spec.path.clear();
        VERIFY_MSG(error_text<DataError>([&] { load_dataset(spec); }), "needs a file path");

        // Same ids, other characters: "ab..." and "bc..." both give ids 0, 1, ...
        spec.path = write(tmp, "ab.txt", std::string(200, 'a') + std::string(200, 'b'));
        const uint64_t ab = dataset_digest(load_dataset(spec));
        spec.path = write(tmp, "ab.txt", std::string(200, 'b') + std::string(200, 'c'));
        QVERIFY(ab != dataset_digest(load_dataset(spec)));
    }
};

QTEST_GUILESS_MAIN(TestTextCorpus)
#include "test_text_corpus.moc"
