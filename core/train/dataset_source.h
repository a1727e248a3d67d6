// Turns a DatasetSpec into a Dataset: synthetic sets, IDX folders (Fashion-MNIST, MNIST), CSV
// tables, image folders and text (a file or the fortunes corpus), with normalisation from the
// train split (not for text: its inputs are token ids) and a NaN/inf check on everything.
#pragma once
#include "core/data/dataset.h"
#include "core/data/image_folder.h"
#include "core/data/text_corpus.h"
#include "core/train/train_config.h"

namespace mpwb {

// Debian's dataset-fashion-mnist installs here.
inline constexpr const char* kDefaultFashionMnistPath = "/usr/share/datasets/fashion-mnist";

// The image-folder reader's options from a spec (the widget's folder check uses them too);
// ConfigError naming the field for values out of range.
ImageFolderOptions image_folder_options(const DatasetSpec& spec);

// The text reader's options from a text or fortunes spec; ConfigError naming the field.
TextCorpusOptions text_corpus_options(const DatasetSpec& spec);
// A text or fortunes spec's dataset with its facts (the dataset panel shows them); load_dataset
// gives the same dataset. DataError for a text spec without a path.
TextCorpus load_text_corpus(const DatasetSpec& spec);

Dataset load_dataset(const DatasetSpec& spec);

}  // namespace mpwb
