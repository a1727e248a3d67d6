// Dataset loading by spec.
#include "core/train/dataset_source.h"

#include "core/common/error.h"
#include "core/data/csv_reader.h"
#include "core/data/idx_reader.h"
#include "core/data/image_folder.h"
#include "core/data/normalize.h"
#include "core/data/synthetic.h"

namespace mpwb {

ImageFolderOptions image_folder_options(const DatasetSpec& spec) {
    spec.validate();
    ImageFolderOptions options;
    options.sample = {.height = spec.image_height,
                      .width = spec.image_width,
                      .channels = spec.channels,
                      .mismatch = parse_size_mismatch(spec.size_mismatch, "dataset.size_mismatch")};
    options.test_ratio = spec.test_ratio;
    options.seed = spec.seed;
    return options;
}

TextCorpusOptions text_corpus_options(const DatasetSpec& spec) {
    spec.validate();
    return {.tokenizer = parse_tokenizer(spec.tokenizer, "dataset.tokenizer"),
            .context = spec.context,
            .test_ratio = spec.test_ratio};
}

TextCorpus load_text_corpus(const DatasetSpec& spec) {
    const TextCorpusOptions options = text_corpus_options(spec);
    if (spec.kind == "fortunes")
        return load_fortunes_corpus(spec.path.empty() ? kFortunesFolder : spec.path, options);
    if (spec.path.empty()) throw DataError("text dataset needs a file path (--data-path)");
    return load_text_corpus(spec.path, options);
}

Dataset load_dataset(const DatasetSpec& spec) {
    Dataset data;
    if (spec.is_synthetic()) {
        SyntheticConfig c;
        c.kind = parse_synthetic_kind(spec.kind);
        c.samples = spec.samples;
        c.noise = spec.noise;
        c.test_ratio = spec.test_ratio;
        c.seed = spec.seed;
        c.classes = spec.classes;
        data = make_synthetic(c);
    } else if (spec.kind == "fashion-mnist" || spec.kind == "mnist") {
        std::string path = spec.path;
        if (path.empty()) {
            if (spec.kind == "mnist")
                throw DataError("mnist needs a folder with the IDX files (--data-path)");
            path = kDefaultFashionMnistPath;
        }
        data = load_idx_dataset(path);
    } else if (spec.kind == "csv") {
        if (spec.path.empty()) throw DataError("csv dataset needs a file path (--data-path)");
        CsvOptions options;
        options.test_ratio = spec.test_ratio;
        options.seed = spec.seed;
        set_label_column(options, spec.label_column, spec.path);
        data = load_csv_dataset(spec.path, options);
    } else if (spec.kind == "image-folder") {
        if (spec.path.empty()) throw DataError("image-folder dataset needs a folder (--data-path)");
        data = load_image_folder(spec.path, image_folder_options(spec));
    } else if (spec.is_text()) {
        data = load_text_corpus(spec).data;
    } else {
        throw ConfigError("unknown dataset '" + spec.kind +
                          "'; choose spiral, circles, xor, gauss, moons, fashion-mnist, mnist, csv, "
                          "image-folder, text or fortunes");
    }
    check_dataset_finite(data);
    if (spec.normalize && !spec.is_synthetic() && !spec.is_text())
        normalize_dataset(
            data, data.sample_shape.size() == 3 ? NormalizeMode::PerChannel : NormalizeMode::PerFeature);
    return data;
}

}  // namespace mpwb
